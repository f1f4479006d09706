import Glibc
import SystemdKit
import Testing

/// The role a re-executed test binary plays, from SYSTEMDKIT_CHILD_ROLE; nil in a normal run.
let childRole: String? = getenv("SYSTEMDKIT_CHILD_ROLE").map { String(cString: $0) }

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
