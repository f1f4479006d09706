import Glibc
import SceneCore
@testable import SceneStore
import ScenedTestSupport

/// Runs `body` with a new temporary directory and removes it afterwards, whatever happens.
func withTemporaryDirectory<T>(_ body: (TemporaryDirectory) throws -> T) rethrows -> T {
    let dir = TemporaryDirectory(prefix: "scenestore-test")
    defer { dir.remove() }
    return try body(dir)
}

func writeBytes(_ path: String, _ bytes: [UInt8], at offset: Int? = nil) {
    let fd = offset == nil ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600) : open(path, O_WRONLY)
    precondition(fd >= 0, "cannot open \(path): errno \(errno)")
    defer { close(fd) }
    let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset ?? 0)) }
    precondition(n == bytes.count)
}

// MARK: - Immutable files (chattr +i), which stop root too

/// Whether this process may make files immutable here (root on ext4, xfs, btrfs, tmpfs ≥ 6.0).
let canMakeImmutable: Bool = {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let f = dir.file("probe")
    writeBytes(f, [1])
    guard setImmutable(f, true) else { return false }
    let refused = open(f, O_WRONLY) < 0
    setImmutable(f, false)
    return refused
}()

// MARK: - A private mount namespace, for read-only and full file systems

/// Runs `body` on a new thread that has its own mount namespace (unshare(CLONE_NEWNS) affects
/// only the calling thread's file-system context), so mounts made there are invisible to the rest
/// of the test process and vanish when the thread ends. Returns nil if the namespace cannot be
/// made (not root). `body` must not record test issues: it is not on a test's task.
func inPrivateMountNamespace<T>(_ body: @escaping () -> T) -> T? {
    var result: T?
    let thread = NamespaceThread { result = body() }
    var handle = pthread_t()
    let rc = pthread_create(&handle, nil, { raw in
        let thread = Unmanaged<NamespaceThread>.fromOpaque(raw!).takeUnretainedValue()
        guard let unshare = unshareFunction, unshare(cloneNewNS) == 0,
              // Keep our mounts from propagating back to the parent namespace.
              mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0 else { return nil }
        thread.run()
        return nil
    }, Unmanaged.passUnretained(thread).toOpaque())
    guard rc == 0 else { return nil }
    pthread_join(handle, nil)
    return result
}

/// Hands the body to the thread; joined before `inPrivateMountNamespace` returns, so the
/// unchecked sendability is a plain hand-over.
private final class NamespaceThread: @unchecked Sendable {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

private let cloneNewNS: Int32 = 0x0002_0000
/// unshare(2) is declared only under _GNU_SOURCE, which Swift's Glibc module does not import.
private let unshareFunction: (@convention(c) (Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unshare") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
}()

let canMountPrivately: Bool = inPrivateMountNamespace { true } ?? false

/// Mounts a tmpfs of `kilobytes` at `path` (in the calling thread's namespace).
func mountTmpfs(_ path: String, kilobytes: Int) -> Bool {
    mount("tmpfs", path, "tmpfs", 0, "size=\(kilobytes)k,mode=0700") == 0
}

func remountTmpfs(_ path: String, kilobytes: Int) -> Bool {
    mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT), "size=\(kilobytes)k") == 0
}

/// Bind-mounts `path` onto itself read-only.
func makeReadOnly(_ path: String) -> Bool {
    mount(path, path, nil, UInt(MS_BIND), nil) == 0
        && mount("none", path, nil, UInt(MS_REMOUNT | MS_BIND | MS_RDONLY), nil) == 0
}

// MARK: - Raw SQL on a store's file, for building old versions and damaging files

func withConnection<T>(_ path: String, _ body: (SQLiteConnection) throws -> T) throws -> T {
    let db = try SQLiteConnection(path: path)
    defer { db.close() }
    return try body(db)
}

/// Creates an empty file where SQLiteConnection (which never creates) can open it.
func createEmptyFile(_ path: String) { writeBytes(path, []) }
