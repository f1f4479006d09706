import SceneCore
import Varlink

/// How many tasks each app has scheduled and notifications waiting: counted once per reply
/// rather than once per app, so that ListApps stays linear in what it lists.
struct BackgroundCounts {
    var scheduled: [AppID: Int] = [:]
    var pending: [AppID: Int] = [:]

    init(_ engine: LifecycleEngine, only app: AppID? = nil) {
        for task in engine.schedules.values where app == nil || task.app == app { scheduled[task.app, default: 0] += 1 }
        for n in engine.notifications.values where app == nil || n.app == app { pending[n.app, default: 0] += 1 }
    }
}

extension JSONWriter {
    /// App's background fields: declared and active modes, scheduled, waiting, under way.
    mutating func appBackground(_ a: AppRecord, declared: BackgroundModes, counts: BackgroundCounts) {
        key(static: "backgroundModes")
        modes(declared)
        key(static: "activeModes")
        modes(a.activeModes)
        field("scheduledTasks", UInt64(counts.scheduled[a.id] ?? 0))
        field("pendingNotifications", UInt64(counts.pending[a.id] ?? 0))
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
