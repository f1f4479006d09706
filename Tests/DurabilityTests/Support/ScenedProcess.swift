import Glibc
import ScenedTestSupport
import Varlink

/// One test's directory: the socket, the state directory, the configuration file, the notify
/// sockets and the daemons' logs. Outlives daemon restarts; removed when released.
final class DaemonWorkspace {
    let directory = TemporaryDirectory(prefix: "scened-dur")
    var path: String { directory.path }
    var socketPath: String { directory.file("io.scened.Manager") }
    var stateDirectory: String { directory.file("state") }
    var configPath: String { directory.file("scened.conf") }
    var databasePath: String { stateDirectory + "/scened.db" }
    private(set) var starts = 0

    /// No timer fires during a test (so every change is a caller's), no reclaim, a quiet log
    /// (warnings and errors only), no event-log trimming.
    static func configuration(durability: String = "normal") -> String {
        """
        [Daemon]
        LogLevel=warning
        [Lifecycle]
        SuspendDelaySec=1h
        BackgroundTaskBudgetSec=1h
        ExpirationGraceSec=1h
        [Store]
        Durability=\(durability)
        EventLogSize=100000000
        [Pressure]
        Sources=simulated
        MemoryBudget=1T
        [Reclaim]
        SuspendEarly=no

        """
    }

    init(configuration: String = DaemonWorkspace.configuration()) throws {
        try writeTextFile(configPath, configuration)
    }

    func setConfiguration(_ text: String) throws { try writeTextFile(configPath, text) }

    func nextLabel() -> String {
        starts += 1
        return "scened-\(starts)"
    }

    /// Which --state-dir the daemon gets.
    enum StateDirectoryOption {
        /// The workspace's state directory.
        case workspace
        case path(String)
        /// No --state-dir: the daemon picks its default.
        case omitted
    }

    /// Starts scened with --socket and --config and the chosen --state-dir. `wrapper` goes in
    /// front of the command (nsenter ...). Does not wait for anything.
    func spawn(wrapper: [String] = [], stateDirectory: StateDirectoryOption = .workspace,
               environment: [String: String?] = [:],
               withNotify: Bool = true, socketPath: String? = nil, extraArguments: [String] = []) throws -> Scened {
        try Binaries.require(Binaries.scened)
        let label = nextLabel()
        let socket = socketPath ?? self.socketPath
        var arguments = wrapper + [Binaries.scened, "--socket", socket, "--config", configPath]
        switch stateDirectory {
        case .workspace: arguments += ["--state-dir", self.stateDirectory]
        case .path(let dir): arguments += ["--state-dir", dir]
        case .omitted: break
        }
        arguments += extraArguments
        let (child, notify) = try ScenedLaunch.spawn(arguments, notifyPath: withNotify ? directory.file("\(label).notify") : nil,
                                                     environment: environment, directory: path, label: label)
        return Scened(child: child, notify: notify, socketPath: socket, label: label)
    }

    /// Starts scened and waits until it is ready (READY=1).
    func start(wrapper: [String] = [], stateDirectory: StateDirectoryOption = .workspace,
               environment: [String: String?] = [:], extraArguments: [String] = [])
        throws -> Scened {
        let daemon = try spawn(wrapper: wrapper, stateDirectory: stateDirectory, environment: environment,
                               extraArguments: extraArguments)
        try daemon.waitReady()
        return daemon
    }
}

/// A running (or finished) scened. Always killed when released.
final class Scened {
    let child: ChildProcess
    let notify: NotifyListener?
    let socketPath: String
    let label: String

    init(child: ChildProcess, notify: NotifyListener?, socketPath: String, label: String) {
        self.child = child
        self.notify = notify
        self.socketPath = socketPath
        self.label = label
    }

    deinit {
        child.killNow()
        notify?.close()
    }

    var pid: pid_t { child.pid }
    var stderr: String { child.stderr }
    var isRunning: Bool { child.isRunning }

    /// Waits for READY=1 on the notify socket.
    func waitReady(timeout: Double = 20) throws {
        try ScenedLaunch.waitReady(child, notify: notify, socketPath: socketPath, timeout: timeout)
    }

    /// Waits for the daemon to exit by itself; returns its exit status. Fails if it is still
    /// running after `timeout` or was ended by a signal.
    func waitForExit(timeout: Double = 20) throws -> Int32 {
        guard child.wait(seconds: timeout) else {
            child.killNow()
            throw TestFailure("scened was expected to exit but still ran after \(timeout) s; stderr:\n\(stderr)")
        }
        guard let status = child.exitStatus else {
            throw TestFailure("scened ended with \(child.outcome); stderr:\n\(stderr)")
        }
        return status
    }

    /// SIGKILL, and reap.
    func crash() { child.killNow() }

    /// SIGTERM, expecting a clean exit 0.
    func stop(timeout: Double = 15) throws {
        try ScenedLaunch.stop(child, signal: SIGTERM, timeout: timeout)
    }

    func client(timeout: Duration = .seconds(20)) throws -> VarlinkClient {
        try VarlinkClient(path: socketPath, timeout: timeout)
    }

    /// Calls io.scened.Manager.<method> on a fresh connection.
    @discardableResult
    func call(_ method: String, _ parameters: JSONObject = [:]) throws -> JSONObject {
        try client().call("io.scened.Manager." + method, parameters)
    }
}

extension JSONValue {
    /// "s42" → 42, "t7" → 7.
    var identifierNumber: UInt64? {
        guard let text = stringValue, text.count > 1 else { return nil }
        return UInt64(text.dropFirst())
    }
}
