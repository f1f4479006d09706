import Glibc
import ScenedTestSupport
import Varlink

/// A real scened whose system bus is a private dbus-daemon with python-dbusmock's logind
/// template on it (`LogindMock`), for the tests of scened following logind.
final class LoginRig {
    let mock: LogindMock
    let workspace: Workspace
    var daemon: DaemonProcess

    /// - Parameters:
    ///   - sessions: the mock's sessions at start, "id:seat:uid:name:active(0/1):locked(0/1)".
    ///   - system: lines of the `[System]` section.
    ///   - lifecycle: the lines of the `[Lifecycle]` section.
    ///   - apps: apps.d files (app, body); "@SOCKET@" in a body is scened's socket.
    ///   - busAddress: DBUS_SYSTEM_BUS_ADDRESS for scened; the mock's bus when nil.
    init(sessions: [String], system: String = "", lifecycle: String = LoginRig.calm, apps: [(String, String)] = [],
         busAddress: String? = nil, waitFollowed: Bool = true) throws {
        mock = try LogindMock()
        try mock.startMock(sessions: sessions)
        workspace = try Workspace(configuration: """
            [Lifecycle]
            \(lifecycle)
            [Store]
            Durability=normal
            [System]
            \(system)
            """)
        for (app, body) in apps {
            mkdir(workspace.directory.file("apps.d"), 0o755)
            try writeTextFile(workspace.directory.file("apps.d/\(app).conf"), body.replacing("@SOCKET@", with: workspace.socketPath) + "\n")
        }
        var environment = ScenedLaunch.measuredMemoryEnvironment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = busAddress ?? mock.address
        daemon = try DaemonProcess(workspace, environment: environment)
        if waitFollowed { try waitFor("login followed", seconds: 15) { try self.login() == "followed" } }
    }

    /// Timings that never suspend or expire anything a test did not wait for.
    static let calm = "SuspendDelaySec=60s\nBackgroundTaskBudgetSec=120s\nExpirationGraceSec=60s"

    deinit {
        // A clean stop ends the apps it started (a killed scened would leave them running).
        if daemon.child.isRunning { try? daemon.stop(timeout: 30) }
    }

    func system() throws -> JSONObject {
        try daemon.call("GetStatus")["status"]?["system"]?.objectValue ?? [:]
    }

    func login() throws -> String { try system()["login"]?.stringValue ?? "?" }

    /// `status.system.locked` as (user, cause) pairs, sorted.
    func locked() throws -> [String] {
        (try system()["locked"]?.arrayValue ?? []).map {
            "\($0["user"]?.stringValue ?? "?"):\($0["cause"]?.stringValue ?? "?")"
        }.sorted()
    }

    func app(_ app: String) throws -> JSONObject {
        try daemon.call("GetApp", ["app": .string(app)])["app"]?.objectValue ?? [:]
    }

    /// GetApp's hold as "level/cause" ("none" when free).
    func hold(_ app: String) throws -> String {
        let record = try self.app(app)
        let level = record["hold"]?.stringValue ?? "?"
        guard level != "none" else { return level }
        return "\(level)/\(record["holdCause"]?.stringValue ?? "?")"
    }

    /// utime + stime of scened in ms, and its VmRSS in KiB.
    func cpuMilliseconds() throws -> Double { Double(try daemon.cpuTicks()) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK))) }
    func rssKiB() -> Int {
        let line = readTextFile("/proc/\(daemon.pid)/status").split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? -1
    }

    /// How many times scened said it does not follow logind (its stderr).
    var unavailableSaid: Int { daemon.stderr.split(separator: "\n").filter { $0.contains("Not following logind") }.count }

    func lock(_ session: String) throws { try mock.session(session, "org.freedesktop.login1.Session.Lock") }
    func unlock(_ session: String) throws { try mock.session(session, "org.freedesktop.login1.Session.Unlock") }

    func setProperty(_ session: String, _ name: String, _ value: Bool) throws {
        try mock.session(session, "org.freedesktop.DBus.Properties.Set",
                         ["string:org.freedesktop.login1.Session", "string:\(name)", "variant:boolean:\(value)"])
    }

    func waitFor(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Deadline(seconds: seconds)
        while !(try condition()) {
            if deadline.hasPassed {
                throw TestFailure("not within \(seconds) s: \(what); scened stderr:\n\(daemon.stderr.suffix(3000))")
            }
            usleep(20_000)
        }
    }
}

extension AttachedApp {
    /// Events until (and with) `name`, answering every one that carries a deadline at once.
    func answered(through name: String, timeout: Double = 10) throws -> [ObservedEvent] {
        let got = try events(through: name, timeout: timeout)
        for e in got where e.object["deadline"] != nil && e.object["deadline"] != .null {
            try call("Acknowledge", ["seq": .int(Int64(e.seq))])
        }
        return got
    }

    /// Every event arriving within `quiet` seconds of the previous one, answered.
    func drain(quiet: Double = 0.5) throws -> [ObservedEvent] {
        var got: [ObservedEvent] = []
        while let e = try next(timeout: quiet) {
            got.append(e)
            if e.object["deadline"] != nil && e.object["deadline"] != .null {
                try call("Acknowledge", ["seq": .int(Int64(e.seq))])
            }
        }
        return got
    }

    /// A new scene brought to the foreground by the app's own request; its session id.
    func foregroundScene() throws -> String {
        let session = try call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?"
        _ = try answered(through: "didBecomeActive")
        return session
    }
}

extension ObservedEvent {
    var cause: String { object["cause"]?.stringValue ?? "?" }
    /// "event session cause", for comparing sequences.
    var brief: String { "\(event) \(session ?? "-") \(cause)" }
}
