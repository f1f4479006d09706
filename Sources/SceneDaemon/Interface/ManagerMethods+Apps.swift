import SceneCore
import Varlink

/// The handlers of the app and background-task methods.
extension MethodDispatcher {
    func launch(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        // An app scened starts itself was launched when the process started for this call
        // attached: that was this call's launch, not a second one to refuse.
        if c.conn.resumedAfterLaunch == app, host.engine.apps[app]?.process == .running {
            reply(c) { w in w.events(self.host.pending.events[0..<0]) }
            return
        }
        try runReplyingEvents(.launch(app), c)
    }

    func terminate(_ c: MethodCall) throws(VarlinkError) {
        try runReplyingEvents(.terminate(try c.p.app(), cause: .request), c)
    }

    func setAppFootprint(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        guard let bytes = try c.p.count("footprint") else { throw .invalidParameter("footprint") }
        _ = try run(.setAppFootprint(app, bytes))
        replyApp(app, c)
    }

    func beginBackgroundTask(_ c: MethodCall) throws(VarlinkError) {
        let request = BeginTaskRequest(app: try c.p.optionalApp("app"), session: try c.p.optionalSession("session"),
                                       name: c.p.string("name") ?? "")
        let (result, events) = try run(.beginTask(request))
        guard case .task(let token) = result else { return }
        reply(c) { w in
            let engine = self.host.engine
            if let t = engine.tasks[token] { w.key("task"); w.task(t, engine: engine) }
            w.events(self.host.pending.events[events])
        }
    }

    func endBackgroundTask(_ c: MethodCall) throws(VarlinkError) {
        try runReplyingEvents(.endTask(try c.p.task()), c)
    }

    func memoryWarning(_ c: MethodCall) throws(VarlinkError) {
        try runReplyingEvents(.memoryWarning(apps: try c.p.appList("apps"), cause: .request), c)
    }
}
