import SceneCore
import Varlink

extension JSONWriter {
    /// App's background fields: declared and active modes, scheduled, waiting, under way.
    mutating func appBackground(_ a: AppRecord, declared: BackgroundModes) {
        key(static: "backgroundModes")
        modes(declared)
        key(static: "activeModes")
        modes(a.activeModes)
        field("scheduledTasks", UInt64(a.scheduled.count))
        field("pendingNotifications", UInt64(a.pendingNotifications.count))
        field("wakes", UInt64(a.wakes.count))
    }

    private mutating func modes(_ modes: BackgroundModes) {
        beginArray()
        for name in modes.names { string(name) }
        endArray()
    }

    mutating func scheduledTask(_ t: ScheduledTask) {
        beginObject()
        field("app", t.app)
        field("identifier", t.identifier)
        field("kind", static: t.kind.staticName)
        field("earliestBegin", t.earliestBegin)
        field("submittedAt", t.submittedAt)
        endObject()
    }

    mutating func pendingNotification(_ n: PendingNotification) {
        beginObject()
        field("notification", n.id.description)
        field("app", n.app)
        field("priority", n.priority.name)
        field("queuedAt", n.queuedAt)
        field("size", UInt64(n.payload.utf8.count))
        endObject()
    }

    mutating func wakeItem(_ item: WakeItem, app: AppID) {
        beginObject()
        field("app", app)
        field("kind", static: item.kind.staticName)
        switch item.subject {
        case .task(let identifier): field("identifier", identifier)
        case .notification(let id): field("notification", id.description)
        }
        field("seq", item.seq)
        field("began", item.beganAt)
        field("deadline", item.deadline)
        field("expiring", item.expirationSentAt != nil)
        endObject()
    }
}
