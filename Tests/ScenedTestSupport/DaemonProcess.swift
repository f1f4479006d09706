import Glibc
import Varlink

/// One test's private directory: the socket, the state directory, the configuration file, the
/// notify socket and the daemon's logs. Outlives daemon restarts (persistence tests); removed
/// when released.
public final class Workspace {
    public let directory = TemporaryDirectory(prefix: "scened-it")
    public var path: String { directory.path }
    public var socketPath: String { directory.file("io.scened.Manager") }
    public var stateDirectory: String { directory.file("state") }
    public var configPath: String { directory.file("scened.conf") }
    public private(set) var starts = 0

    /// Timings for scenarios that must not see a suspension they did not wait for.
    public static let calmConfiguration = """
    [Lifecycle]
    SuspendDelaySec=60s
    BackgroundTaskBudgetSec=120s
    ExpirationGraceSec=60s
    [Store]
    Durability=normal
    """

    /// Short timings, for the suspension and background-task scenarios.
    public static let shortTimings = """
    [Lifecycle]
    SuspendDelaySec=200ms
    BackgroundTaskBudgetSec=500ms
    ExpirationGraceSec=300ms
    [Store]
    Durability=normal
    """

    public init(configuration: String = Workspace.calmConfiguration) throws {
        try writeTextFile(configPath, configuration + "\n")
    }

    public func nextLabel() -> String {
        starts += 1
        return "scened-\(starts)"
    }
}

/// The real scened binary, started on the workspace's socket with its own NOTIFY_SOCKET,
/// ready once READY=1 arrived. Always killed when released; `stop()` is the clean way.
public final class DaemonProcess {
    public let workspace: Workspace
    public let child: ChildProcess
    public let notify: NotifyListener?
    public let label: String

    public var socketPath: String { workspace.socketPath }
    public var pid: pid_t { child.pid }

    /// - Parameters:
    ///   - withNotify: give the daemon a NOTIFY_SOCKET (and wait for READY=1); without one,
    ///     readiness is seen by connecting to the socket.
    ///   - extraArguments: after --socket, --state-dir and --config.
    ///   - wrapper: a program that execs scened with the arguments after its own (prlimit …),
    ///     so that the pid is scened's.
    public init(_ workspace: Workspace, withNotify: Bool = true, extraArguments: [String] = [],
                environment: [String: String?] = [:], readyTimeout: Double = 20, wrapper: [String] = []) throws {
        try Binaries.require(Binaries.scened)
        self.workspace = workspace
        label = workspace.nextLabel()
        (child, notify) = try ScenedLaunch.spawn(
            wrapper + [Binaries.scened, "--socket", workspace.socketPath, "--state-dir", workspace.stateDirectory,
             "--config", workspace.configPath] + extraArguments,
            notifyPath: withNotify ? workspace.directory.file("\(label).notify") : nil, environment: environment,
            directory: workspace.path, label: label)
        try ScenedLaunch.waitReady(child, notify: notify, socketPath: workspace.socketPath, timeout: readyTimeout)
    }

    deinit {
        child.killNow()
        notify?.close()
    }

    public var stderr: String { child.stderr }

    /// A client with a reply timeout, so that a hung daemon fails the test instead of hanging it.
    public func client(timeout: Duration = .seconds(20)) throws -> VarlinkClient {
        try VarlinkClient(path: socketPath, timeout: timeout)
    }

    /// Calls io.scened.Manager.<method> on a fresh connection.
    @discardableResult
    public func call(_ method: String, _ parameters: JSONObject = [:]) throws -> JSONObject {
        try client().call("io.scened.Manager." + method, parameters)
    }

    /// Stops the daemon with `signo` and checks the clean shutdown: exit status 0 and, with a
    /// notify socket, STOPPING=1.
    public func stop(_ signo: Int32 = SIGTERM, timeout: Double = 15) throws {
        let before = notify?.messages.count ?? 0
        try ScenedLaunch.stop(child, signal: signo, timeout: timeout)
        if let notify {
            // Sent before the exit, so already queued on the socket; the wait is only a margin.
            guard notify.wait(for: "STOPPING=1", seconds: 5, after: before) != nil else {
                throw TestFailure("no STOPPING=1 after signal \(signo); datagrams: \(notify.messages)")
            }
        }
    }

    /// SIGKILL: a crash, for the persistence tests.
    public func crash() {
        child.killNow()
    }

    /// Fails unless the daemon is still running and answering on a fresh connection.
    public func assertServing(_ context: String) throws {
        guard child.isRunning else {
            throw TestFailure("scened died (\(child.outcome)) \(context); stderr:\n\(stderr)")
        }
        do {
            let client = try client(timeout: .seconds(10))
            let status = try client.call("io.scened.Manager.GetStatus")
            guard status["status"]?["version"]?.stringValue != nil else {
                throw TestFailure("GetStatus \(context) answered without a status: \(status)")
            }
            let app = "org.example.probe\(monotonicNanoseconds() % 1_000_000)"
            let reply = try client.call("io.scened.Manager.Connect", ["app": .string(app), "background": true])
            guard reply["session"]?["id"]?.stringValue != nil else {
                throw TestFailure("Connect \(context) answered without a session: \(reply)")
            }
        } catch let failure as TestFailure {
            throw failure
        } catch {
            throw TestFailure("a second client could not use the daemon \(context): \(error); stderr:\n\(stderr)")
        }
    }

    /// utime + stime of the daemon in clock ticks (/proc/PID/stat fields 14 and 15).
    public func cpuTicks() throws -> UInt64 {
        let text = readTextFile("/proc/\(pid)/stat")
        // The command name (field 2) is in parentheses and may hold spaces: split after it.
        guard let close = text.lastIndex(of: ")") else { throw TestFailure("cannot read /proc/\(pid)/stat") }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); utime is field 14, stime 15.
        guard fields.count > 13, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else {
            throw TestFailure("unexpected /proc/\(pid)/stat: \(text)")
        }
        return user + system
    }
}
