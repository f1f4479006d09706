import SceneCore
import Varlink

/// What UIKit lets an app ask for, on its own sessions and tasks only.
extension MethodDispatcher {
    /// For an app scened starts itself, only its attached process may ask, and only while the
    /// app runs: a process whose app was terminated is on its way out (SIGTERM follows) and
    /// must not bring the app back under the process scened is ending.
    func checkStartedAppCaller(_ c: MethodCall, _ app: AppID) throws(VarlinkError) {
        guard apps.appSettings[app]?.launch.starts == true else { return }
        _ = try attachedProcess(c, app)
        if (host.engine.apps[app]?.process ?? .notRunning) == .notRunning {
            throw Self.appError("Terminated", app, [("reason", .string("terminated"))],
                                "\(app) was terminated; its process must exit (a new one is started at the next launch)")
        }
    }

    /// With a url or activity (UIKit's userActivity argument): a connected scene gets it once
    /// active (an Open to that session), a new or reconnected one in willConnectTo.
    func requestActivation(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        let payload = try activationPayload(c, app)
        let id: SessionID
        if let existing = try ownSession(c, app) {
            let running = (host.engine.apps[app]?.process ?? .notRunning) != .notRunning
            // The Open activates (reconnecting an archived scene) and delivers; an app not
            // running is launched by the activation first, or the Open would be stored.
            if payload == nil || !running { _ = try run(.activate(existing)) }
            if let payload { _ = try deliverOpen(OpenRequest(app: app, session: existing, payload: payload.payload), payload.route) }
            id = existing
        } else {
            var request = ConnectRequest(app: app)
            if let role = try c.p.enumValue("role", SessionRole.init(name:)) { request.role = role }
            if let name = c.p.string("configuration") { request.configurationName = name }
            if let info = try c.p.objectText("userInfo") { request.userInfo = UserInfo(json: try checkedUserInfo(info)) }
            request.open = payload?.payload
            try checkSessionQuota(app)
            let (result, _) = try run(.connect(request))
            guard case .session(let new) = result else { return }
            id = new
        }
        reply(c) { w in w.field("session", id) }
    }

    func requestDestruction(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let id = try ownSession(c, app) else { throw .invalidParameter("session") }
        _ = try run(.discard(id, cause: .request))
        reply(c) { _ in }
    }

    func appBeginTask(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        let session = try ownSession(c, app)
        let (result, _) = try run(.beginTask(BeginTaskRequest(app: app, session: session, name: c.p.string("name") ?? "")))
        guard case .task(let token) = result else { return }
        reply(c) { w in
            w.key(static: "task")
            w.string(prefix: UInt8(ascii: "t"), decimal: token.rawValue)
        }
    }

    func appEndTask(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        let token = try c.p.task("task")
        guard let task = host.engine.tasks[token] else { throw Self.error(for: .noSuchTask(token)) }
        guard task.app == app else {
            throw Self.appError("NotOwnSession", app, [("session", .string(task.session?.description ?? ""))],
                                "task \(token) is not \(app)'s")
        }
        _ = try run(.endTask(token))
        reply(c) { _ in }
    }

    func appSaveState(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let id = try ownSession(c, app) else { throw .invalidParameter("session") }
        _ = try run(.saveState(id, try checkedRestoration(try c.p.restoration("restoration"))))
        reply(c) { _ in }
    }

    func appSaveUserInfo(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let id = try ownSession(c, app) else { throw .invalidParameter("session") }
        guard let text = try c.p.objectText("userInfo") else { throw .invalidParameter("userInfo") }
        _ = try run(.saveUserInfo(id, UserInfo(json: try checkedUserInfo(text))))
        reply(c) { _ in }
    }

    func appSetFootprint(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let bytes = try c.p.count("footprint") else { throw .invalidParameter("footprint") }
        if let id = try ownSession(c, app) {
            _ = try run(.setFootprint(id, bytes))
        } else {
            _ = try run(.setAppFootprint(app, bytes))
        }
        reply(c) { _ in }
    }
}
