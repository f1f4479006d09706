import Glibc
import SystemdKit
import Testing

/// Exit code the safety timers use, so a stuck loop fails the test instead of hanging it.
let stuckExitCode: Int32 = 99

extension EventLoop {
    /// Ends `run()` with `stuckExitCode` after `seconds`, in case the awaited event never comes.
    @discardableResult
    func addSafetyTimer(seconds: UInt64 = 5) throws -> TimerSource {
        try addTimer(at: Clock.monotonic.now() + seconds * 1_000_000, accuracy: 1) { [unowned self] in
            exit(code: stuckExitCode)
        }
    }
}

/// A connected AF_UNIX stream socketpair, non-blocking, closed by `close()`.
struct SocketPair {
    let left: Int32
    let right: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        let rc = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
            | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        precondition(rc == 0, "socketpair failed: \(errno)")
        left = fds[0]
        right = fds[1]
    }

    func close() {
        _ = Glibc.close(left)
        _ = Glibc.close(right)
    }
}

@discardableResult
func writeString(_ fd: Int32, _ text: String) -> Int {
    var bytes = Array(text.utf8)
    return write(fd, &bytes, bytes.count)
}

/// Reads what is available without blocking (the fd must be non-blocking).
func readAvailable(_ fd: Int32) -> String {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        result += buffer[..<n]
    }
    return String(decoding: result, as: UTF8.self)
}

/// A fresh private directory under /tmp, removed (with its files) by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/systemdkit-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errno)")
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if name != "." && name != ".." { unlink(file(name)) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}

/// Fills a sockaddr_un for `path` and calls `body` with it as a generic sockaddr.
func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path too long")
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
}

/// Sets environment variables for the duration of `body` and restores the previous values.
/// Only for `.serialized` suites: setenv is process-global and not thread-safe.
func withEnvironment<R>(_ values: [String: String?], _ body: () throws -> R) rethrows -> R {
    var saved: [String: String?] = [:]
    for (name, value) in values {
        saved[name] = getenv(name).map { String(cString: $0) }
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try body()
}
