import Glibc
import SceneCore
import SceneInterface
import SystemdKit
import Varlink

/// The io.scened.Manager interface, bound like systemd's `*-varlink.c` files: one handler per
/// method (`ManagerMethods`), each with the access it requires. Every call is checked against
/// the caller's credentials before its handler runs; replies are held in the connection until
/// their batch commits.
/// The methods of io.scened.Manager, io.scened.App and io.scened.Testing, bound like
/// systemd's `*-varlink.c` files: one handler per method (`ManagerMethods`, `AppMethods`),
/// each with the access it requires. Every call is checked against the caller's credentials
/// before its handler runs; replies are held in the connection until their batch commits.
///
/// Handlers act on the parts the daemon gives it (the engine's host, the app supervisor, the
/// stream feeds, the reclaim runner); what only the daemon can do (apply a configuration,
/// carry out a reclaim outcome) goes to it as a `DaemonRequest`, taken after the handler
/// returns and before the batch commits.
final class MethodDispatcher {
    let host: EngineHost
    let server: VarlinkServer
    let apps: AppSupervisor
    let feeds: StreamFeeds
    let reclaim: ReclaimRunner
    let logger: JournalLogger
    let system: SystemEvents
    let background: BackgroundWork
    let info: VarlinkServiceInfo
    let interface: VarlinkInterfaceDefinition
    let appInterface: VarlinkInterfaceDefinition
    let startedAt: UInt64
    let version: String
    let testHooks: Bool
    /// Where Reload reads the configuration from, and the command line's overrides.
    let loader: ConfigLoader
    let options: DaemonOptions
    /// The settings in force and the files they came from; replaced on reload.
    private(set) var settings: DaemonSettings
    private(set) var configFiles: [String]
    /// Who may do what; replaced on reload.
    private(set) var policy: AccessPolicy
    /// Refusals are logged, but not so often that a caller can flood the journal.
    var refusalLog = RateLimiter()
    /// What handlers asked of the daemon, in order (`takeRequests`).
    private(set) var requests: [DaemonRequest] = []

    /// ListSessions without `more` answers at most this many sessions.
    static let maxUnstreamedSessions = 10_000

    struct Parts {
        let host: EngineHost
        let server: VarlinkServer
        let apps: AppSupervisor
        let feeds: StreamFeeds
        let reclaim: ReclaimRunner
        let logger: JournalLogger
        let system: SystemEvents
        let background: BackgroundWork
    }

    init(_ parts: Parts, loader: ConfigLoader, options: DaemonOptions, settings: DaemonSettings, configFiles: [String],
         version: String, startedAt: UInt64, testHooks: Bool = false) throws {
        host = parts.host
        server = parts.server
        apps = parts.apps
        feeds = parts.feeds
        reclaim = parts.reclaim
        logger = parts.logger
        system = parts.system
        background = parts.background
        self.loader = loader
        self.options = options
        self.settings = settings
        self.configFiles = configFiles
        policy = settings.accessPolicy
        self.version = version
        self.startedAt = startedAt
        self.testHooks = testHooks
        interface = try VarlinkInterfaceDefinition.parse(ManagerInterface.text)
        appInterface = try VarlinkInterfaceDefinition.parse(AppInterface.text)
        var interfaces = [VarlinkInterfaceText(name: ManagerInterface.name, text: ManagerInterface.text),
                          VarlinkInterfaceText(name: AppInterface.name, text: AppInterface.text)]
        if testHooks { interfaces.append(VarlinkInterfaceText(name: TestingInterface.name, text: TestingInterface.text)) }
        info = VarlinkServiceInfo(vendor: "scened", product: "scened", version: version,
                                  url: "https://github.com/scened/scened", interfaces: interfaces)
    }

    /// The settings now in force (start and reload).
    func configure(_ settings: DaemonSettings, files: [String]) {
        self.settings = settings
        configFiles = files
        policy = settings.accessPolicy
    }

    func request(_ request: DaemonRequest) {
        requests.append(request)
    }

    /// What handlers asked of the daemon since the last time.
    func takeRequests() -> [DaemonRequest] {
        defer { requests.removeAll() }
        return requests
    }

    // MARK: - Dispatch

    func handle(_ call: VarlinkCall, on conn: ClientConnection) {
        if let answer = info.handleServiceCall(call) {
            switch answer {
            case .success(let parameters): replyObject(call, conn, parameters)
            case .failure(let error): fail(call, conn, error)
            }
            return
        }
        let caller = conn.peer.identity
        if testHooks, call.method.hasPrefix(TestingInterface.name + ".") {
            guard policy.isAdministrator(caller) else {
                return fail(call, conn, refusal(caller, call.method, "the test hooks are for administrators"))
            }
            return handleTestHook(call, conn)
        }
        let isApp = call.method.hasPrefix(AppInterface.name + ".")
        guard let method = isApp ? AppMethods.table[call.method] : ManagerMethods.table[call.method] else {
            let interfaceName = call.method.split(separator: ".").dropLast().joined(separator: ".")
            fail(call, conn, interfaceName == ManagerInterface.name || interfaceName == AppInterface.name
                 ? .methodNotFound(call.method) : .interfaceNotFound(interfaceName))
            return
        }
        // Each definition used in place: `(isApp ? a : b).validate…` would copy one per call.
        let bad = isApp ? appInterface.validateParameters(method: method.name, call.parameters)
                        : interface.validateParameters(method: method.name, call.parameters)
        if let bad {
            fail(call, conn, .invalidParameter(bad))
            return
        }
        let context = MethodCall(call: call, p: CallParameters(object: call.parameters), conn: conn, caller: caller)
        do {
            let concerned = try authorize(method, context)
            if system.stop.refusesChanges { try refuseWhileStopping(method, isApp: isApp) }
            if method.launches, let concerned, try apps.parkForLaunch(concerned, context) { return }
            try method.handler(self)(context)
        } catch {
            fail(call, conn, error)
        }
    }

    /// Refuses the call unless the caller may make it; nothing has been done yet. Returns the
    /// apps the call concerns, when it names them.
    private func authorize(_ method: ManagerMethod, _ c: MethodCall) throws(VarlinkError) -> [AppID]? {
        switch method.access {
        case .anyone:
            return nil
        case .administrator:
            guard policy.isAdministrator(c.caller) else {
                throw refusal(c.caller, c.call.method, "\(method.name) is for administrators")
            }
            return nil
        case .app(let concerned):
            guard let apps = try concerned(c, host) else {
                guard policy.isAdministrator(c.caller) else {
                    throw refusal(c.caller, c.call.method, "\(method.name) \(method.adminOnlyCase ?? "of every app") is for administrators")
                }
                return nil
            }
            for app in apps where !policy.mayActAs(c.caller, app: app) {
                throw refusal(c.caller, c.call.method, "\(method.name) on \(app) is for its owner and administrators", app: app)
            }
            return apps
        }
    }

    private func handleTestHook(_ call: VarlinkCall, _ conn: ClientConnection) {
        let seconds = call.parameters["seconds"]?.intValue ?? 0
        switch call.method {
        case TestingInterface.name + ".Hang":
            // Wedge the loop so that the watchdog must act.
            Diagnostics.warning("test hook: hanging the event loop for \(seconds) s")
            sleep(UInt32(max(0, min(seconds, 3600))))
        case TestingInterface.name + ".Livelock":
            request(.livelock(seconds: Int(max(0, min(seconds, 3600)))))
        case TestingInterface.name + ".StallCommit":
            Diagnostics.warning("test hook: stalling the commit thread for \(seconds) s")
            host.writer?.stallNextCommit(seconds: UInt32(max(0, min(seconds, 3600))))
        case TestingInterface.name + ".StallSync":
            Diagnostics.warning("test hook: stalling the next commit's sync for \(seconds) s")
            host.writer?.stallNextSync(seconds: UInt32(max(0, min(seconds, 3600))))
        default:
            return fail(call, conn, .methodNotFound(call.method))
        }
        replyObject(call, conn, JSONObject())
    }
}

/// One call on its way to its handler.
struct MethodCall {
    let call: VarlinkCall
    let p: CallParameters
    let conn: ClientConnection
    let caller: CallerIdentity
}
