import SceneCore

/// Everything one loop iteration changed, committed as one transaction. Records are written with
/// their current values (upsert); a record both upserted and removed in one batch ends removed.
public struct StoreBatch: Sendable {
    public var sessions: [SceneSession]
    public var removedSessions: [SessionID]
    /// Apps' stored fields: process state, pending discards, idleSince, backgroundEnteredAt,
    /// launchedAt, launches, baseFootprint, activeModes. Every app a session, task, schedule,
    /// notification or event names must be stored already or be in the batch.
    public var apps: [AppRecord]
    public var tasks: [BackgroundTask]
    public var removedTasks: [TaskToken]
    /// Scheduled background tasks, replacing the one stored under the same app and identifier.
    public var schedules: [ScheduledTask]
    public var removedSchedules: [ScheduleKey]
    public var notifications: [PendingNotification]
    public var removedNotifications: [NotificationID]
    /// Opens stored for a launch, and connected scenes' activation conditions.
    public var opens: [PendingOpen] = []
    public var removedOpens: [OpenID] = []
    public var conditions: [SessionID: ActivationConditions] = [:]
    public var removedConditions: [SessionID] = []
    /// Appended to the event log, in order; sequence numbers must be new.
    public var events: [LifecycleEvent]
    /// Stored as high-water marks, and raised further if the batch's own events, sessions,
    /// tasks or notifications go beyond them, so a number is never handed out twice after a
    /// restart.
    public var counters: EngineCounters

    public init(sessions: [SceneSession] = [], removedSessions: [SessionID] = [], apps: [AppRecord] = [],
                tasks: [BackgroundTask] = [], removedTasks: [TaskToken] = [], schedules: [ScheduledTask] = [],
                removedSchedules: [ScheduleKey] = [], notifications: [PendingNotification] = [],
                removedNotifications: [NotificationID] = [], events: [LifecycleEvent] = [],
                counters: EngineCounters = .initial) {
        self.sessions = sessions
        self.removedSessions = removedSessions
        self.apps = apps
        self.tasks = tasks
        self.removedTasks = removedTasks
        self.schedules = schedules
        self.removedSchedules = removedSchedules
        self.notifications = notifications
        self.removedNotifications = removedNotifications
        self.events = events
        self.counters = counters
    }

    /// The batch for a run of effects: the records they name, with the engine's current values
    /// (each once, however often it was named), the events in order, and the engine's counters.
    public init<S: Sequence<Effect>>(effects: S, engine: LifecycleEngine) {
        var named = NamedRecords()
        var events: [LifecycleEvent] = []
        for effect in effects {
            if case .event(let e) = effect { events.append(e) } else { named.note(effect) }
        }
        // A record named and then removed has no current value: it is only removed.
        self.init(sessions: named.sessions.compactMap { engine.sessions[$0] }, removedSessions: named.removedSessions,
                  apps: named.apps.compactMap { engine.apps[$0]?.storedFields },
                  tasks: named.tasks.compactMap { engine.tasks[$0] }, removedTasks: named.removedTasks,
                  events: events, counters: EngineCounters(engine))
        setBackgroundWork(named: named.schedules, named.notifications, schedules: engine.schedules,
                          notifications: engine.notifications)
        setRouting(named: named.opens, named.conditions, opens: engine.pendingOpens,
                   conditions: engine.activationConditions)
    }

    /// Sets `opens`, `removedOpens`, `conditions` and `removedConditions` for the named
    /// records, as `setBackgroundWork` does: what the engine holds now is written, what it no
    /// longer holds is removed.
    public mutating func setRouting<O: Sequence<OpenID>, C: Sequence<SessionID>>(
        named ids: O, _ sessions: C, opens stored: [OpenID: PendingOpen],
        conditions held: [SessionID: ActivationConditions]) {
        opens.removeAll()
        removedOpens.removeAll()
        conditions.removeAll()
        removedConditions.removeAll()
        for id in ids {
            if let open = stored[id] { opens.append(open) } else { removedOpens.append(id) }
        }
        for id in sessions {
            if let c = held[id] { conditions[id] = c } else { removedConditions.append(id) }
        }
    }

    /// Sets `schedules`, `removedSchedules`, `notifications` and `removedNotifications` for the
    /// named records: each one the engine's tables (`schedules`, `notifications`) hold is
    /// written with its value, each they do not hold is removed. A schedule's key comes back
    /// when the app submits the identifier again, so what the engine holds now decides, not
    /// the order of the effects that named it.
    public mutating func setBackgroundWork<K: Sequence<ScheduleKey>, N: Sequence<NotificationID>>(
        named keys: K, _ ids: N, schedules current: [ScheduleKey: ScheduledTask],
        notifications pending: [NotificationID: PendingNotification]) {
        schedules.removeAll()
        removedSchedules.removeAll()
        notifications.removeAll()
        removedNotifications.removeAll()
        for key in keys {
            if let task = current[key] { schedules.append(task) } else { removedSchedules.append(key) }
        }
        for id in ids {
            if let n = pending[id] { notifications.append(n) } else { removedNotifications.append(id) }
        }
    }

    /// No record changes. The counters alone do not need a commit: every counter change but the
    /// clock's comes with a record, and the clock is carried by the next commit.
    public var isEmpty: Bool { rowCount == 0 }

    public var rowCount: Int {
        sessions.count + removedSessions.count + apps.count + tasks.count + removedTasks.count + schedules.count
            + removedSchedules.count + notifications.count + removedNotifications.count + events.count
            + opens.count + removedOpens.count + conditions.count + removedConditions.count
    }
}

/// The records a run of effects names, each once, in the order first named.
private struct NamedRecords {
    var sessions: [SessionID] = []
    var removedSessions: [SessionID] = []
    var apps: [AppID] = []
    var tasks: [TaskToken] = []
    var removedTasks: [TaskToken] = []
    var schedules: [ScheduleKey] = []
    var notifications: [NotificationID] = []
    var opens: [OpenID] = []
    var conditions: [SessionID] = []
    private var seenSessions: Set<SessionID> = []
    private var seenApps: Set<AppID> = []
    private var seenTasks: Set<TaskToken> = []
    private var seenSchedules: Set<ScheduleKey> = []
    private var seenNotifications: Set<NotificationID> = []
    private var seenOpens: Set<OpenID> = []
    private var seenConditions: Set<SessionID> = []

    mutating func note(_ effect: Effect) {
        switch effect {
        case .event: break
        case .sessionChanged(let id): if seenSessions.insert(id).inserted { sessions.append(id) }
        case .sessionRemoved(let id): removedSessions.append(id)
        case .appChanged(let id): if seenApps.insert(id).inserted { apps.append(id) }
        case .taskChanged(let t): if seenTasks.insert(t).inserted { tasks.append(t) }
        case .taskRemoved(let t): removedTasks.append(t)
        case .scheduleChanged(let k), .scheduleRemoved(let k):
            if seenSchedules.insert(k).inserted { schedules.append(k) }
        case .notificationChanged(let n), .notificationRemoved(let n):
            if seenNotifications.insert(n).inserted { notifications.append(n) }
        case .openChanged(let o), .openRemoved(let o):
            if seenOpens.insert(o).inserted { opens.append(o) }
        case .conditionsChanged(let s):
            if seenConditions.insert(s).inserted { conditions.append(s) }
        }
    }
}
