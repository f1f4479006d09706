import Glibc
import ScenedTestSupport
import Varlink

/// The background-work tests' app (`WakeAppScript`) as scened starts it, seen from the test:
/// what it logged, the requests it makes for the test, and its process and cgroup.
final class WakeApp {
    let app: String
    let logPath: String
    let fifoPath: String
    private var nextID = 0

    /// `[Launch] ExecStart=`'s command line.
    let execStart: String

    /// Writes the script and its FIFO in `directory`.
    init(directory: String, app: String, flags: [String] = []) throws {
        self.app = app
        let script = directory + "/wake_app.py"
        logPath = directory + "/\(app).log"
        fifoPath = directory + "/\(app).fifo"
        try writeTextFile(script, WakeAppScript.text)
        if access(fifoPath, F_OK) != 0, mkfifo(fifoPath, 0o600) != 0 {
            throw TestFailure("mkfifo \(fifoPath): errno \(errno)")
        }
        let python = try Binaries.require("/usr/bin/python3")
        execStart = ([python, script, logPath, fifoPath] + flags).joined(separator: " ")
    }

    /// Also writes apps.d/APP.conf: `[Launch] ExecStart=` and `extra` (lines of its own).
    convenience init(_ workspace: Workspace, app: String, flags: [String] = [], extra: String = "") throws {
        try self.init(directory: workspace.path, app: app, flags: flags)
        try StartedAppTests.appFile(workspace, app, appFile(extra))
    }

    /// The text of its apps.d file.
    func appFile(_ extra: String = "") -> String { "[Launch]\nExecStart=\(execStart)\n\(extra)" }

    /// Every line the app logged so far (all its processes), parsed.
    var records: [JSONObject] {
        readTextFile(logPath).split(separator: "\n").compactMap { line in
            guard case .object(let o)? = try? JSONParser.parse(Array(line.utf8)) else { return nil }
            return o
        }
    }

    /// The events its processes received, in order.
    var events: [ObservedEvent] { records.compactMap { $0["event"]?.objectValue.map(ObservedEvent.init) } }

    /// The events named `name`.
    func events(_ name: String) -> [ObservedEvent] { events.filter { $0.event == name } }

    /// Waits until the app has received `count` events named `name`; returns them.
    @discardableResult
    func waitEvents(_ name: String, count: Int = 1, seconds: Double = 15) throws -> [ObservedEvent] {
        var got: [ObservedEvent] = []
        let ok = waitUntil(seconds: seconds) {
            got = events(name)
            return got.count >= count
        }
        guard ok else {
            throw TestFailure("\(app) received \(got.count) \(name), not \(count), within \(seconds) s; it logged:\n"
                              + readTextFile(logPath).suffix(4000))
        }
        return got
    }

    /// Has the app's process make `method` (io.scened.App) and returns the reply: its
    /// parameters, or throws the error as a VarlinkError.
    @discardableResult
    func call(_ method: String, _ parameters: JSONObject = [:], seconds: Double = 15) throws -> JSONObject {
        let reply = try send(["method": .string(method), "parameters": .object(parameters)], seconds: seconds)
        if let name = reply["error"]?.stringValue {
            throw VarlinkError(name: name, parameters: reply["parameters"]?.objectValue ?? [:])
        }
        return reply["parameters"]?.objectValue ?? [:]
    }

    /// Has the app close its Attach connection (and stay running).
    func closeAttach() throws { _ = try send(["close": true], seconds: 10) }

    private func send(_ command: JSONObject, seconds: Double) throws -> JSONObject {
        nextID += 1
        let id = nextID
        var line = command
        line["id"] = .int(Int64(id))
        let fd = open(fifoPath, O_WRONLY | O_NONBLOCK)
        guard fd >= 0 else { throw TestFailure("\(app) is not reading its FIFO (errno \(errno))") }
        let bytes = JSONValue.object(line).serialized() + [UInt8(ascii: "\n")]
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count else { throw TestFailure("writing to \(app)'s FIFO: \(written)") }
        var reply: JSONObject?
        _ = waitUntil(seconds: seconds) {
            reply = records.last { $0["reply_to"]?.intValue == Int64(id) }?["reply"]?.objectValue
            return reply != nil
        }
        guard let reply else {
            throw TestFailure("\(app) did not report the reply to \(command) within \(seconds) s; it logged:\n"
                              + readTextFile(logPath).suffix(3000))
        }
        return reply
    }

    /// The started process's pid (GetApp's startedPid).
    func pid(_ daemon: DaemonProcess) throws -> Int32? {
        try StartedAppTests.app(daemon, app)["startedPid"]?.intValue.map(Int32.init)
    }

    /// `frozen 1` or `frozen 0` from the cgroup's cgroup.events; nil without one.
    static func frozen(_ cgroup: String?) -> Bool? {
        guard let cgroup else { return nil }
        let text = readTextFile(cgroup + "/cgroup.events")
        return text.contains("frozen 1") ? true : text.contains("frozen 0") ? false : nil
    }

    /// The app's cgroup, which must exist: the tests run as root (issue 36 item 5).
    func cgroup(_ daemon: DaemonProcess) throws -> String {
        guard geteuid() == 0 else { throw TestFailure("the background-work tests run as root (a cgroup per app)") }
        guard let pid = try pid(daemon), let dir = StartedAppTests.cgroupDirectory(pid) else {
            throw TestFailure("\(app) has no started process with a cgroup: \(try StartedAppTests.app(daemon, app))")
        }
        return dir
    }

    /// Waits until the kernel reports the cgroup frozen (or thawed).
    static func waitFrozen(_ cgroup: String, _ frozen: Bool, seconds: Double = 30) throws {
        try StartedAppTests.waitUntil("cgroup.events says frozen \(frozen ? 1 : 0)", seconds: seconds) {
            Self.frozen(cgroup) == frozen
        }
    }
}

/// What the background-work suites share.
enum Wakes {
    /// Microseconds since the epoch, as earliestBegin and the deadlines are given.
    static func wallMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// A configuration with short background budgets and the usual calm scene timings.
    static func configuration(suspendDelay: String = "300ms", background: String = "", lifecycle: String = "") -> String {
        """
        [Lifecycle]
        SuspendDelaySec=\(suspendDelay)
        BackgroundTaskBudgetSec=120s
        ExpirationGraceSec=1s
        \(lifecycle)
        [Store]
        Durability=normal
        [Background]
        CoalesceSec=0
        \(background)
        """
    }

    static func listWork(_ daemon: DaemonProcess, _ app: String) throws -> JSONObject {
        try daemon.call("ListBackgroundWork", ["app": .string(app)])
    }

    /// Brings the app's process up (Launch, which starts it and waits for its attach): the
    /// launch happened at the attach, so the reply carries no events of its own.
    static func launch(_ daemon: DaemonProcess, _ app: WakeApp) throws {
        let reply = try daemon.call("Launch", ["app": .string(app.app)])
        guard reply["events"]?.arrayValue?.isEmpty == true else { throw TestFailure("Launch: \(reply)") }
        try app.waitEvents("didFinishLaunching")
    }

    /// Starts the app with a scene in the foreground (Connect), so that it runs until sent
    /// home: its requests cannot race its idle suspension. The session's id.
    static func foreground(_ daemon: DaemonProcess, _ app: WakeApp) throws -> String {
        let reply = try daemon.call("Connect", ["app": .string(app.app)])
        guard let session = reply["session"]?["id"]?.stringValue else { throw TestFailure("Connect: \(reply)") }
        try app.waitEvents("didBecomeActive")
        return session
    }

    /// Fails unless scened's whole event log so far keeps the lifecycle rules (R34's among
    /// them), as ConformanceChecker reads them.
    static func assertConformant(_ daemon: DaemonProcess, _ context: String) throws {
        let monitor = try EventMonitor(daemon, parameters: ["since": 0], consecutive: false)
        defer { monitor.close() }
        var count = 0
        while try monitor.next(timeout: 0.5) != nil { count += 1 }
        guard count > 0 else { throw TestFailure("\(context): an empty event log") }
        try monitor.assertConformant(context)
    }

    /// VmRSS of a process in KiB.
    static func rssKiB(_ pid: Int32) -> Int {
        let line = readTextFile("/proc/\(pid)/status").split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? -1
    }
}
