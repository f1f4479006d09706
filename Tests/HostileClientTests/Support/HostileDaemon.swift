import Glibc
import ScenedTestSupport
import Varlink

let manager = "io.scened.Manager."

/// One framed call of io.scened.Manager.
func framed(_ method: String, _ parameters: JSONObject = [:], oneway: Bool = false, more: Bool = false) -> [UInt8] {
    VarlinkCall(method: manager + method, parameters: parameters, oneway: oneway, more: more).encoded()
}

/// The configuration every hostile test runs the daemon with: timings that never suspend an
/// app during a test, a log that does not write an entry per state change (floods would fill
/// the disk and the log-volume checks would measure nothing else), and the test's `[Limits]`.
enum HostileConfiguration {
    static func text(limits: [String]) -> String {
        """
        [Daemon]
        LogLevel=notice
        [Lifecycle]
        SuspendDelaySec=60s
        BackgroundTaskBudgetSec=120s
        ExpirationGraceSec=60s
        [Store]
        Durability=normal
        [Limits]
        \(limits.joined(separator: "\n"))
        """
    }
}

extension DaemonProcess {
    /// The real scened with `limits` ("IdleTimeoutSec=1s", …) in its [Limits] section.
    /// - Parameters:
    ///   - watchdogUSec: WATCHDOG_USEC, so that the loop sends WATCHDOG=1 to the notify socket.
    ///   - wrapper: a program that execs scened (prlimit, for a low RLIMIT_NOFILE).
    static func hostile(limits: [String] = [], watchdogUSec: Int? = nil, wrapper: [String] = []) throws -> DaemonProcess {
        let workspace = try Workspace(configuration: HostileConfiguration.text(limits: limits))
        var environment: [String: String?] = [:]
        if let watchdogUSec { environment["WATCHDOG_USEC"] = String(watchdogUSec) }
        return try DaemonProcess(workspace, environment: environment, wrapper: wrapper)
    }

    /// GetStatus's `status` on a fresh connection, which itself counts in `connections`.
    func status(timeout: Double = 5) throws -> JSONObject {
        let raw = try RawConnection(path: socketPath, connectTimeout: timeout)
        try raw.sendCall(manager + "GetStatus")
        let reply = try raw.receiveObject(timeout: timeout)
        guard let status = reply.parametersObject["status"]?.objectValue else {
            throw TestFailure("GetStatus failed: \(reply)")
        }
        return status
    }

    /// Sessions per app, from ListSessions with more (every reply checked).
    func sessionsByApp(timeout: Double = 10) throws -> [String: Int] {
        let raw = try RawConnection(path: socketPath, connectTimeout: timeout)
        try raw.sendCall(manager + "ListSessions", more: true)
        var counts: [String: Int] = [:]
        while true {
            let reply = try raw.receiveObject(timeout: timeout)
            guard reply.errorName == nil else { throw TestFailure("ListSessions failed: \(describe(reply))") }
            for session in reply.parametersObject["sessions"]?.arrayValue ?? [] {
                counts[session["app"]?.stringValue ?? "?", default: 0] += 1
            }
            if reply["continues"]?.boolValue != true { return counts }
        }
    }

    /// The number of WATCHDOG=1 datagrams received so far.
    var watchdogPings: Int {
        notify?.messages.filter { NotifyListener.lines($0).contains("WATCHDOG=1") }.count ?? 0
    }

    /// The last `count` characters of stderr, for failure messages.
    func stderrTail(_ count: Int = 1500) -> String { String(stderr.suffix(count)) }
}

/// The seed of a randomized test: HOSTILE_SEED when set (to replay a failure), else the clock.
func hostileSeed() -> UInt64 {
    if let text = getenv("HOSTILE_SEED"), let seed = UInt64(String(cString: text)) { return seed }
    return monotonicNanoseconds()
}

/// nanosleep, for waits finer than sleepMilliseconds.
func sleepMicroseconds(_ microseconds: Int) {
    var request = timespec(tv_sec: microseconds / 1_000_000, tv_nsec: (microseconds % 1_000_000) * 1000)
    _ = nanosleep(&request, nil)
}
