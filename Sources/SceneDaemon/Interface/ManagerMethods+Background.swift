import SceneCore
import SceneInterface
import Varlink

/// Notify and ListBackgroundWork: handing apps notifications, and what waits (R34).
extension MethodDispatcher {
    /// Administrators and members of the app's NotifyGroup=; the payload is checked and
    /// stored in this batch, so the reply means it will be delivered exactly once.
    func notify(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        guard policy.mayNotify(c.caller, app: app) else {
            throw refusal(c.caller, c.call.method, "Notify to \(app) is for administrators and members of its NotifyGroup=", app: app)
        }
        guard apps.appSettings[app] != nil || host.engine.apps[app] != nil else { throw Self.error(for: .noSuchApp(app)) }
        guard let payload = try c.p.objectText("payload") else { throw .invalidParameter("payload") }
        let size = payload.utf8.count
        let limit = background.maxNotificationSize
        guard size <= limit else {
            // The connection limits do not know this [Background] setting: its maximum is ours.
            var error = limits.error("MaxNotificationSize", "the payload is \(size) bytes, the most a notification may carry is \(limit) (MaxNotificationSize)")
            error.parameters["maximum"] = .int(Int64(limit))
            throw error
        }
        var priority = NotificationPriority.normal
        if let name = c.p.string("priority") {
            guard let p = NotificationPriority(name: name) else { throw .invalidParameter("priority") }
            priority = p
        }
        let (result, _) = try run(.queueNotification(app: app, payload: payload, priority: priority))
        guard case .notification(let id) = result else { return }
        background.changed()
        reply(c) { w in w.field("notification", id.description) }
    }

    func listBackgroundWork(_ c: MethodCall) throws(VarlinkError) {
        let only = try c.p.optionalApp("app")
        let engine = host.engine
        reply(c) { w in
            w.key(static: "tasks")
            w.beginArray()
            for t in engine.schedules.values.sorted(by: { ($0.earliestBegin, $0.key) < ($1.earliestBegin, $1.key) })
            where only == nil || t.app == only {
                w.scheduledTask(t)
            }
            w.endArray()
            w.key(static: "notifications")
            w.beginArray()
            for n in engine.notifications.values.sorted(by: { $0.id < $1.id }) where only == nil || n.app == only {
                w.pendingNotification(n)
            }
            w.endArray()
            w.key(static: "wakes")
            w.beginArray()
            for a in engine.apps.values.sorted(by: { $0.id < $1.id }) where !a.wakes.isEmpty && (only == nil || a.id == only) {
                for item in a.wakes { w.wakeItem(item, app: a.id) }
            }
            w.endArray()
        }
    }

    /// Status's `background`.
    func writeBackground(_ w: inout JSONWriter) {
        let engine = host.engine
        w.key("background")
        w.beginObject()
        w.field("wakingApps", UInt64(background.awake(engine)))
        w.field("maxConcurrentWakes", UInt64(background.limits.maxConcurrentWakes))
        w.field("scheduledTasks", UInt64(engine.schedules.count))
        w.field("pendingNotifications", UInt64(engine.notifications.count))
        if let next = engine.nextScheduleDue { w.field("nextDue", next) }
        w.endObject()
    }
}
