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

/// Expects that systemdkit-probe (Tests/SystemdKitProbe), whose standard output is `stdout`,
/// reported exactly `checks`, each once and `ok`. Records an issue for each expected check that
/// failed (with the probe's reason) or was reported twice, one for the checks not reported (the
/// probe crashed, hung or never ran; with `diagnostics`, what else the probe and its
/// surroundings printed), one for each check reported that is not expected, and one for each
/// line that is not `ok NAME` or `fail NAME: REASON`.
func expectProbeReported(_ checks: [String], stdout: String, diagnostics: @autoclosure () -> String,
                         sourceLocation: SourceLocation = #_sourceLocation) {
    var outcomes: [String: [String?]] = [:] // per check: nil for ok, else the reason
    var order: [String] = []
    var strayLines: [String] = []
    for line in stdout.split(separator: "\n").map(String.init) {
        let name: String
        let failure: String?
        if line.hasPrefix("ok ") {
            name = String(line.dropFirst(3))
            failure = nil
        } else if line.hasPrefix("fail "), let colon = line.firstIndex(of: ":"), line[colon...].hasPrefix(": ") {
            name = String(line.dropFirst(5)[..<colon])
            failure = String(line[line.index(colon, offsetBy: 2)...])
        } else {
            strayLines.append(line)
            continue
        }
        guard !name.isEmpty, !name.contains(" ") else {
            strayLines.append(line)
            continue
        }
        if outcomes[name] == nil { order.append(name) }
        outcomes[name, default: []].append(failure)
    }

    let missing = checks.filter { outcomes[$0] == nil }
    if !missing.isEmpty {
        Issue.record("""
            probe checks not reported: \(missing.joined(separator: ", ")); the probe's stdout:
            \(stdout)
            and its diagnostics:
            \(diagnostics().suffix(4000))
            """, sourceLocation: sourceLocation)
    }
    for check in checks {
        let reported = outcomes[check] ?? []
        if reported.count > 1 {
            Issue.record("probe check \(check) was reported \(reported.count) times", sourceLocation: sourceLocation)
        }
        for case let reason? in reported {
            Issue.record("probe check \(check) failed: \(reason)", sourceLocation: sourceLocation)
        }
    }
    for name in order where !checks.contains(name) {
        Issue.record("probe reported an unexpected check \(name)", sourceLocation: sourceLocation)
    }
    for line in strayLines {
        Issue.record("probe printed a line that is not a check report: \(line.debugDescription)",
                     sourceLocation: sourceLocation)
    }
}
