import SceneCore
import SceneInterface
import Varlink

/// Who may make a call.
enum MethodAccess: Sendable {
    /// Anyone: the call only reads, and private data goes only to those who may see it.
    case anyone
    /// Whoever may act as every app the call concerns (their owners, administrators). The
    /// function names those apps; nil means the call concerns every app (administrators only);
    /// an empty list means it concerns nothing that exists, and the handler will say so.
    /// It is given the EngineHost, not its engine: an engine passed by value is copied (a retain
    /// and a release of each of its tables) on every call.
    case app(@Sendable (MethodCall, EngineHost) throws(VarlinkError) -> [AppID]?)
    case administrator
}

struct ManagerMethod: Sendable {
    let name: String
    let access: MethodAccess
    /// What the call does when `app` resolves to nil, for the refusal's message.
    var adminOnlyCase: String?
    /// The call launches its app if it is not running: for an app scened starts itself, it
    /// waits for the app's process to attach.
    var launches = false
    let handler: @Sendable (MethodDispatcher) -> (MethodCall) throws(VarlinkError) -> Void
}

/// The method table: each method of io.scened.Manager, who may call it, and its handler.
enum ManagerMethods {
    static let table: [String: ManagerMethod] = {
        var t: [String: ManagerMethod] = [:]
        for m in all { t[ManagerInterface.name + "." + m.name] = m }
        return t
    }()

    static let all: [ManagerMethod] = [
        // The life cycle: for the app's owner and administrators.
        ManagerMethod(name: "Launch", access: .app(appParameter), launches: true, handler: MethodDispatcher.launch),
        ManagerMethod(name: "Terminate", access: .app(appParameter), handler: MethodDispatcher.terminate),
        ManagerMethod(name: "Connect", access: .app(connectApp), adminOnlyCase: "of a protected session", launches: true, handler: MethodDispatcher.connect),
        ManagerMethod(name: "Activate", access: .app(sessionApp), launches: true, handler: MethodDispatcher.activate),
        ManagerMethod(name: "Deactivate", access: .app(sessionApp), handler: MethodDispatcher.deactivate),
        ManagerMethod(name: "Background", access: .app(sessionApp), handler: MethodDispatcher.background),
        ManagerMethod(name: "Disconnect", access: .app(sessionApp), handler: MethodDispatcher.disconnect),
        ManagerMethod(name: "Discard", access: .app(sessionApp), handler: MethodDispatcher.discard),
        ManagerMethod(name: "SaveState", access: .app(sessionApp), handler: MethodDispatcher.saveState),
        ManagerMethod(name: "SaveUserInfo", access: .app(sessionApp), handler: MethodDispatcher.saveUserInfo),
        ManagerMethod(name: "SetFootprint", access: .app(sessionApp), handler: MethodDispatcher.setFootprint),
        ManagerMethod(name: "SetAppFootprint", access: .app(appParameter), handler: MethodDispatcher.setAppFootprint),
        ManagerMethod(name: "BeginBackgroundTask", access: .app(taskApp), handler: MethodDispatcher.beginBackgroundTask),
        ManagerMethod(name: "EndBackgroundTask", access: .app(tokenApp), handler: MethodDispatcher.endBackgroundTask),
        ManagerMethod(name: "MemoryWarning", access: .app(warnedApps), adminOnlyCase: "to every app", handler: MethodDispatcher.memoryWarning),
        // Protection is reclaim policy, not the app's to claim for itself.
        ManagerMethod(name: "SetProtected", access: .administrator, handler: MethodDispatcher.setProtected),
        // Reads: anyone (private data only to the owner and administrators).
        ManagerMethod(name: "ListSessions", access: .anyone, handler: MethodDispatcher.listSessions),
        ManagerMethod(name: "GetSession", access: .anyone, handler: MethodDispatcher.getSession),
        ManagerMethod(name: "ListApps", access: .anyone, handler: MethodDispatcher.listApps),
        ManagerMethod(name: "GetApp", access: .anyone, handler: MethodDispatcher.getApp),
        ManagerMethod(name: "GetStatus", access: .anyone, handler: MethodDispatcher.getStatus),
        ManagerMethod(name: "GetPressure", access: .anyone, handler: MethodDispatcher.getPressure),
        ManagerMethod(name: "GetMetrics", access: .anyone, handler: MethodDispatcher.getMetrics),
        ManagerMethod(name: "GetReclaimPlan", access: .anyone, handler: MethodDispatcher.getReclaimPlan),
        ManagerMethod(name: "GetPressureHistory", access: .anyone, handler: MethodDispatcher.getPressureHistory),
        ManagerMethod(name: "Monitor", access: .anyone, handler: MethodDispatcher.monitor),
        ManagerMethod(name: "ListBackgroundWork", access: .anyone, handler: MethodDispatcher.listBackgroundWork),
        // Administrators and the app's NotifyGroup=: the handler decides (AccessPolicy.mayNotify).
        ManagerMethod(name: "Notify", access: .anyone, handler: MethodDispatcher.notify),
        // The target app's owner and administrators: the handler decides once it has routed
        // the URL or activity to its app.
        ManagerMethod(name: "Open", access: .anyone, handler: MethodDispatcher.open),
        ManagerMethod(name: "ListRoutes", access: .anyone, handler: MethodDispatcher.listRoutes),
        // Monitor's history as a trace: nothing in it that Monitor and ListSessions withhold.
        ManagerMethod(name: "ExportTrace", access: .anyone, handler: MethodDispatcher.exportTrace),
        // The daemon as a whole: administrators.
        ManagerMethod(name: "BeginInterruption", access: .administrator, handler: MethodDispatcher.beginInterruption),
        ManagerMethod(name: "EndInterruption", access: .administrator, handler: MethodDispatcher.endInterruption),
        ManagerMethod(name: "SetPressure", access: .administrator, handler: MethodDispatcher.setPressure),
        ManagerMethod(name: "ClearPressure", access: .administrator, handler: MethodDispatcher.clearPressure),
        ManagerMethod(name: "Reload", access: .administrator, handler: MethodDispatcher.reload),
    ]

    // MARK: - The app a call concerns

    @Sendable static func appParameter(_ c: MethodCall, _: EngineHost) throws(VarlinkError) -> [AppID]? {
        [try c.p.app()]
    }

    /// A session's app; a session that does not exist concerns nothing (NoSuchSession follows).
    @Sendable static func sessionApp(_ c: MethodCall, _ host: EngineHost) throws(VarlinkError) -> [AppID]? {
        host.engine.sessions[try c.p.session()].map { [$0.app] } ?? []
    }

    /// Connect: the app's; a protected session is the administrators' to create.
    @Sendable static func connectApp(_ c: MethodCall, _: EngineHost) throws(VarlinkError) -> [AppID]? {
        c.p.bool("protected") == true ? nil : [try c.p.app()]
    }

    @Sendable static func taskApp(_ c: MethodCall, _ host: EngineHost) throws(VarlinkError) -> [AppID]? {
        var apps: [AppID] = []
        if let app = try c.p.optionalApp("app") { apps.append(app) }
        if let id = try c.p.optionalSession("session"), let s = host.engine.sessions[id] { apps.append(s.app) }
        return apps
    }

    @Sendable static func tokenApp(_ c: MethodCall, _ host: EngineHost) throws(VarlinkError) -> [AppID]? {
        host.engine.tasks[try c.p.task()].map { [$0.app] } ?? []
    }

    /// The apps listed; without a list, every running app: administrators only.
    @Sendable static func warnedApps(_ c: MethodCall, _: EngineHost) throws(VarlinkError) -> [AppID]? {
        try c.p.appList("apps")
    }
}
