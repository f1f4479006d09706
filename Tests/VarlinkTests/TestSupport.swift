import Glibc
import Synchronization

/// A fresh directory under /tmp, removed with everything in it by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/varlink-tests-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed")
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func remove() {
        Self.removeTree(path)
    }

    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR, let dir = opendir(path) {
            var children: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name != "." && name != ".." { children.append(name) }
            }
            closedir(dir)
            for child in children { removeTree(path + "/" + child) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}

/// Runs `body` on a new POSIX thread; `join()` waits for it. Used for the client side of socket
/// tests so blocking calls never occupy a Swift concurrency thread the other side might need.
final class TestThread: Sendable {
    private let thread: Mutex<pthread_t?> = Mutex(nil)

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var id = pthread_t()
        let result = pthread_create(&id, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(result == 0, "pthread_create failed")
        thread.withLock { $0 = id }
    }

    func join() {
        guard let id = thread.withLock({ $0 }) else { return }
        pthread_join(id, nil)
        thread.withLock { $0 = nil }
    }
}

/// A value written by one thread and read by another after `join()`.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    init(_ value: Value) { storage = Mutex(value) }

    var value: Value { storage.withLock { $0 } }

    func update(_ change: (inout Value) -> Void) {
        storage.withLock { change(&$0) }
    }
}

/// Waits for `events` on `fd`; false on timeout.
func waitFor(_ fd: Int32, _ events: Int16, timeoutMilliseconds: Int32 = 5000) -> Bool {
    var entry = pollfd(fd: fd, events: events, revents: 0)
    return poll(&entry, 1, timeoutMilliseconds) == 1
}
