import SceneCore

/// What the engine changed since the last commit: the store writes the current value of each
/// named record, so a record changed many times in one iteration is written once.
struct PendingChanges {
    var sessions: Set<SessionID> = []
    var removedSessions: Set<SessionID> = []
    var apps: Set<AppID> = []
    var tasks: Set<TaskToken> = []
    var removedTasks: Set<TaskToken> = []
    /// Scheduled tasks and notifications named, changed or removed: the engine's state when the
    /// batch is made says which (an identifier removed can be scheduled again at once).
    var schedules: Set<ScheduleKey> = []
    var notifications: Set<NotificationID> = []
    /// Stored Opens and activation conditions named, likewise.
    var opens: Set<OpenID> = []
    var conditions: Set<SessionID> = []
    var events: [LifecycleEvent] = []
    /// Where each command's (or timer tick's) events begin in `events`: the journal makes one
    /// entry per state change, and a change never spans two commands.
    var commandStarts: [Int] = []
    private var lastApp: AppID?

    var isEmpty: Bool {
        sessions.isEmpty && removedSessions.isEmpty && apps.isEmpty && tasks.isEmpty && removedTasks.isEmpty
            && schedules.isEmpty && notifications.isEmpty && events.isEmpty && opens.isEmpty && conditions.isEmpty
    }

    mutating func absorb(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .event(let e):
                events.append(e)
            case .sessionChanged(let id):
                sessions.insert(id)
            case .sessionRemoved(let id):
                sessions.remove(id)
                removedSessions.insert(id)
            case .appChanged(let id):
                // Effects come in runs for one app: skip hashing when it is the last one seen.
                if id != lastApp {
                    apps.insert(id)
                    lastApp = id
                }
            case .taskChanged(let token):
                tasks.insert(token)
            case .taskRemoved(let token):
                tasks.remove(token)
                removedTasks.insert(token)
            case .scheduleChanged(let key), .scheduleRemoved(let key):
                schedules.insert(key)
            case .notificationChanged(let id), .notificationRemoved(let id):
                notifications.insert(id)
            case .openChanged(let id), .openRemoved(let id):
                opens.insert(id)
            case .conditionsChanged(let id):
                conditions.insert(id)
            }
        }
    }

    mutating func removeAll() {
        sessions.removeAllKeepingOrdinaryCapacity()
        removedSessions.removeAllKeepingOrdinaryCapacity()
        apps.removeAllKeepingOrdinaryCapacity()
        tasks.removeAllKeepingOrdinaryCapacity()
        removedTasks.removeAllKeepingOrdinaryCapacity()
        schedules.removeAllKeepingOrdinaryCapacity()
        notifications.removeAllKeepingOrdinaryCapacity()
        opens.removeAllKeepingOrdinaryCapacity()
        conditions.removeAllKeepingOrdinaryCapacity()
        events.removeAllKeepingOrdinaryCapacity()
        commandStarts.removeAllKeepingOrdinaryCapacity()
        lastApp = nil
    }
}
