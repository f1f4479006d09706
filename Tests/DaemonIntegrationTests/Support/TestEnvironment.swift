import Glibc

/// A failure of the system under test, or of the harness, with enough context to act on.
/// Thrown out of a test, swift-testing records it with this description.
struct TestFailure: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// Where the binaries under test are: next to the test bundle, since `swift test` builds every
/// executable of the package into the same directory.
enum Binaries {
    static let directory: String = {
        // /proc/self/exe is the test runner: <build>/debug/scenedPackageTests.xctest (XCTest
        // bundle) or the swift-testing runner in the same directory.
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(length > 0, "readlink /proc/self/exe failed")
        let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var dir = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        // A test bundle may be a directory (Contents/...) on some layouts: walk up to the one
        // that holds scened.
        while !dir.isEmpty, access(dir + "/scened", X_OK) != 0, let slash = dir.lastIndex(of: "/") {
            dir = String(dir[..<slash])
        }
        return dir
    }()

    static var scened: String { directory + "/scened" }
    static var scenectl: String { directory + "/scenectl" }

    /// Fails with a clear message when a binary is missing (the build did not produce it).
    static func require(_ path: String) throws {
        guard access(path, X_OK) == 0 else {
            throw TestFailure("\(path) is missing: run the suite with `swift test` (it builds every executable) or `swift build` first")
        }
    }
}

/// A private directory under /tmp, removed (with everything in it) when released.
final class TemporaryDirectory {
    let path: String

    init(prefix: String = "scened-it") {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { removeTree(path) }
}

/// rm -rf, without spawning anything.
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree(path + "/" + name) }
        }
        rmdir(path)
    } else {
        unlink(path)
    }
}

func readWholeFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        bytes += buffer[..<n]
    }
    return bytes
}

func readTextFile(_ path: String) -> String {
    readWholeFile(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

func writeTextFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw TestFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var data = Array(text.utf8)
    var offset = 0
    while offset < data.count {
        let n = data.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        guard n > 0 else { throw TestFailure("cannot write \(path)") }
        offset += n
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A point in time `seconds` from now, for polling loops.
struct Deadline {
    let end: UInt64
    init(seconds: Double) { end = monotonicNanoseconds() + UInt64(seconds * 1e9) }
    var hasPassed: Bool { monotonicNanoseconds() >= end }
    /// Milliseconds left, at least 0.
    var remainingMilliseconds: Int32 {
        let now = monotonicNanoseconds()
        return now >= end ? 0 : Int32(min((end - now) / 1_000_000, UInt64(Int32.max)))
    }
}

func sleepMilliseconds(_ ms: Int) { usleep(useconds_t(ms * 1000)) }

/// Polls `condition` every few milliseconds until it holds or `seconds` pass.
func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Deadline(seconds: seconds)
    while true {
        if try condition() { return true }
        if deadline.hasPassed { return false }
        sleepMilliseconds(5)
    }
}

/// Writes to a closed socket or pipe must fail with EPIPE rather than kill the test runner.
/// Children get the default disposition back (see ChildProcess).
let ignoreSIGPIPE: Void = {
    signal(SIGPIPE, SIG_IGN)
}()
