import SceneCore
import SceneInterface
import Varlink

/// What BGTaskScheduler and UIBackgroundModes let an app do (R34): schedule and cancel
/// background tasks, complete the one it was handed, declare a background activity.
extension MethodDispatcher {
    func scheduleBackgroundTask(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let identifier = c.p.string("identifier") else { throw .invalidParameter("identifier") }
        guard let kindName = c.p.string("kind"), let kind = WakeKind(name: kindName), kind != .notification else {
            throw .invalidParameter("kind")
        }
        let now = host.clock.now()
        var begin = now
        if c.p.has("earliestBegin") {
            guard let usec = try c.p.count("earliestBegin"), usec <= UInt64(Int64.max) else {
                throw .invalidParameter("earliestBegin")
            }
            begin = max(now, Timestamp(microseconds: Int64(usec)))
        }
        _ = try run(.scheduleTask(ScheduledTask(app: app, identifier: identifier, kind: kind, earliestBegin: begin,
                                                submittedAt: now)))
        background.changed()
        reply(c) { _ in }
    }

    func cancelBackgroundTask(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let identifier = c.p.string("identifier") else { throw .invalidParameter("identifier") }
        _ = try run(.cancelTask(app, identifier: identifier))
        background.changed()
        reply(c) { _ in }
    }

    func completeBackgroundTask(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let identifier = c.p.string("identifier") else { throw .invalidParameter("identifier") }
        guard let success = c.p.bool("success") else { throw .invalidParameter("success") }
        _ = try run(.endWake(app, .task(identifier), success: success))
        reply(c) { _ in }
    }

    func beginBackgroundActivity(_ c: MethodCall) throws(VarlinkError) {
        let (app, mode) = try declaredMode(c)
        _ = try run(.beginActivity(app, mode))
        reply(c) { _ in }
    }

    func endBackgroundActivity(_ c: MethodCall) throws(VarlinkError) {
        let (app, mode) = try declaredMode(c)
        _ = try run(.endActivity(app, mode))
        reply(c) { _ in }
    }

    /// The mode named, which must be one of the app's BackgroundModes=.
    private func declaredMode(_ c: MethodCall) throws(VarlinkError) -> (AppID, BackgroundModes) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let name = c.p.string("mode"), let mode = BackgroundModes(name: name) else { throw .invalidParameter("mode") }
        guard apps.appSettings[app]?.backgroundModes.contains(mode) == true else {
            throw Self.appError("BackgroundModeNotDeclared", app, [("mode", .string(name))],
                                "\(name) is not in \(app)'s BackgroundModes= (apps.d/\(app).conf)")
        }
        return (app, mode)
    }

    /// Acknowledge of a didReceiveNotification: the notification is handled (R34).
    func acknowledgeNotification(_ c: MethodCall, _ app: AppID, seq: UInt64) throws(VarlinkError) -> Bool {
        guard let item = host.engine.apps[app]?.wakes.first(where: { $0.seq == seq && $0.kind == .notification }) else {
            return false
        }
        _ = try run(.endWake(app, item.subject, success: true))
        reply(c) { _ in }
        return true
    }
}
