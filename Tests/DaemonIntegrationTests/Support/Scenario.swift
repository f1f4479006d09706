import SceneCore
import ScenedTestSupport
import Varlink

/// One scenario: a private daemon, a Monitor subscription opened before anything happens, and
/// a driver (scenectl). Each step runs a command and checks, event by event, that the Monitor
/// stream shows exactly the expected sequence and that the command's reply reported the same
/// events.
final class Scenario {
    let workspace: Workspace
    let daemon: DaemonProcess
    let monitor: EventMonitor
    let driver: SceneDriver
    /// A library client for queries (GetSession, GetApp) that are not what is being tested.
    let query: VarlinkDriver

    static let calmTiming = EngineConfiguration(suspendDelay: .seconds(60), backgroundTaskBudget: .seconds(120),
                                                expirationGrace: .seconds(60))
    static let shortTiming = EngineConfiguration(suspendDelay: .milliseconds(200), backgroundTaskBudget: .milliseconds(500),
                                                 expirationGrace: .milliseconds(300))

    init(configuration: String = Workspace.calmConfiguration, timing: EngineConfiguration = Scenario.calmTiming) throws {
        workspace = try Workspace(configuration: configuration)
        daemon = try DaemonProcess(workspace)
        monitor = try EventMonitor(daemon, timing: timing)
        driver = SceneCtlDriver(socketPath: workspace.socketPath, directory: workspace.path)
        query = VarlinkDriver(socketPath: workspace.socketPath)
    }

    /// Runs `command`, then reads exactly `expected` from the Monitor stream.
    @discardableResult
    func step(_ context: String, _ expected: [Step], _ command: (SceneDriver) throws -> JSONObject) throws -> JSONObject {
        let reply: JSONObject
        do {
            reply = try command(driver)
        } catch {
            throw TestFailure("\(context): the command failed: \(error)\ndaemon stderr (tail):\n\(daemon.stderr.suffix(2000))")
        }
        let observed = try monitor.expect(expected, context)
        // The reply describes the same events, with the same sequence numbers.
        if let events = reply["events"]?.arrayValue {
            let replied = events.compactMap { $0["seq"]?.intValue }.map(UInt64.init)
            let streamed = observed.map(\.seq)
            guard replied == streamed else {
                throw TestFailure("\(context): the reply's events \(replied) are not the Monitor's \(streamed)")
            }
        } else if !expected.isEmpty {
            throw TestFailure("\(context): the reply has no events: \(reply)")
        }
        return reply
    }

    /// Waits for events caused by timers (no command).
    @discardableResult
    func waitFor(_ context: String, _ expected: [Step], timeout: Double = 10) throws -> [ObservedEvent] {
        try monitor.expect(expected, context, timeout: timeout)
    }

    func session(_ id: String) throws -> JSONObject {
        guard let s = try query.call("GetSession", ["session": .string(id)])["session"]?.objectValue else {
            throw TestFailure("GetSession \(id) answered without a session")
        }
        return s
    }

    func app(_ id: String) throws -> JSONObject {
        guard let a = try query.call("GetApp", ["app": .string(id)])["app"]?.objectValue else {
            throw TestFailure("GetApp \(id) answered without an app")
        }
        return a
    }

    /// No stray event, every rule held, and a clean SIGTERM shutdown.
    func finish(_ context: String) throws {
        try monitor.expectQuiet(context)
        try monitor.assertConformant(context)
        monitor.close()
        try daemon.stop()
    }
}

extension JSONObject {
    /// The id of the session in a Connect reply.
    var sessionID: String {
        get throws {
            guard let id = self["session"]?["id"]?.stringValue else { throw TestFailure("reply without session.id: \(self)") }
            return id
        }
    }
}
