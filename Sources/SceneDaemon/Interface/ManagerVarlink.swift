import Glibc
import SceneCore
import SceneInterface
import SystemdKit
import Varlink

/// The io.scened.Manager interface, bound like systemd's `*-varlink.c` files: one handler per
/// method (`ManagerMethods`), each with the access it requires. Every call is checked against
/// the caller's credentials before its handler runs; replies are held in the connection until
/// their batch commits.
final class ManagerVarlink {
    let manager: Manager
    unowned let server: VarlinkServer
    let info: VarlinkServiceInfo
    let interface: VarlinkInterfaceDefinition
    let startedAt: UInt64
    let version: String
    let testHooks: Bool
    weak var daemon: Daemon?
    /// Who may do what; replaced on reload.
    var policy: AccessPolicy
    /// Refusals are logged, but not so often that a caller can flood the journal.
    var refusalLog = RateLimiter()
    let appInterface: VarlinkInterfaceDefinition
    /// The processes attached as apps (io.scened.App), and what they owe.
    var attachments = AttachmentTable()
    /// Attached processes whose connection closed, to be terminated as exited.
    var pendingDeaths: [(AppID, Int32)] = []
    var appEntryLog = RateLimiter()
    /// The apps scened starts itself: the table decides, the launcher carries out (made at
    /// the first launch, so that a daemon with no such app never touches cgroups).
    var launches = LaunchTable()
    var launcher: AppLauncher?
    var appSettings: [AppID: AppSettings] = [:]
    /// Calls waiting for their app's process to attach, by app.
    var parked: [AppID: [(connection: Int, call: VarlinkCall)]] = [:]
    /// Launches settled since the last pass: their waiting calls go ahead (nil) or fail.
    var launchOutcomes: [(app: AppID, failure: String?, count: Int)] = []
    /// Started processes that exited, with their status, to be carried out in the pass.
    var pendingExits: [(AppID, String)] = []
    /// How started apps' measured memory is charged, and when they were last read.
    var shares = MemoryShares()
    var lastMeasuredAt: Timestamp?
    /// AppCgroups= as read at start.
    var appCgroups = true
    /// The socket a started app is told to attach on (SCENED_SOCKET).
    var socketPath = ""

    /// ListSessions without `more` answers at most this many sessions.
    static let maxUnstreamedSessions = 10_000
    static let sessionsPerBatch = 500
    /// A listing piece stops growing at this size (a piece holds at least one session).
    static let listingPieceBytes = 256 << 10
    /// What a piece may pass `listingPieceBytes` by: its last session and the closing bytes.
    static let listingPieceSlack = 16 << 10
    static let eventsPerBatch = 256

    init(manager: Manager, server: VarlinkServer, version: String, startedAt: UInt64, policy: AccessPolicy,
         testHooks: Bool = false) throws {
        self.manager = manager
        self.server = server
        self.version = version
        self.startedAt = startedAt
        self.policy = policy
        self.testHooks = testHooks
        interface = try VarlinkInterfaceDefinition.parse(ManagerInterface.text)
        appInterface = try VarlinkInterfaceDefinition.parse(AppInterface.text)
        var interfaces = [VarlinkInterfaceText(name: ManagerInterface.name, text: ManagerInterface.text),
                          VarlinkInterfaceText(name: AppInterface.name, text: AppInterface.text)]
        if testHooks { interfaces.append(VarlinkInterfaceText(name: TestingInterface.name, text: TestingInterface.text)) }
        info = VarlinkServiceInfo(vendor: "scened", product: "scened", version: version,
                                  url: "https://github.com/scened/scened", interfaces: interfaces)
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
            if method.launches, let concerned, try parkForLaunch(concerned, context) { return }
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
            guard let apps = try concerned(c, manager) else {
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
            daemon?.startLivelock(seconds: Int(max(0, min(seconds, 3600))))
        case TestingInterface.name + ".StallCommit":
            Diagnostics.warning("test hook: stalling the commit thread for \(seconds) s")
            manager.writer?.stallNextCommit(seconds: UInt32(max(0, min(seconds, 3600))))
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
