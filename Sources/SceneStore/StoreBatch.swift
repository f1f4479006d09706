import SceneCore

/// Everything one loop iteration changed, committed as one transaction. Records are written with
/// their current values (upsert); a record both upserted and removed in one batch ends removed.
public struct StoreBatch: Sendable {
    public var sessions: [SceneSession]
    public var removedSessions: [SessionID]
    /// Apps' stored fields: process state, pending discards, idleSince, backgroundEnteredAt,
    /// launchedAt, launches, baseFootprint. Every app a session, task or event names must be
    /// stored already or be in the batch.
    public var apps: [AppRecord]
    public var tasks: [BackgroundTask]
    public var removedTasks: [TaskToken]
    /// Appended to the event log, in order; sequence numbers must be new.
    public var events: [LifecycleEvent]
    /// Stored as high-water marks, and raised further if the batch's own events, sessions or
    /// tasks go beyond them, so a number is never handed out twice after a restart.
    public var counters: EngineCounters

    public init(sessions: [SceneSession] = [], removedSessions: [SessionID] = [], apps: [AppRecord] = [],
                tasks: [BackgroundTask] = [], removedTasks: [TaskToken] = [], events: [LifecycleEvent] = [],
                counters: EngineCounters = .initial) {
        self.sessions = sessions
        self.removedSessions = removedSessions
        self.apps = apps
        self.tasks = tasks
        self.removedTasks = removedTasks
        self.events = events
        self.counters = counters
    }

    /// The batch for a run of effects: the records they name, with the engine's current values
    /// (each once, however often it was named), the events in order, and the engine's counters.
    public init<S: Sequence<Effect>>(effects: S, engine: LifecycleEngine) {
        var sessionIDs: [SessionID] = []
        var seenSessions: Set<SessionID> = []
        var removedSessions: [SessionID] = []
        var appIDs: [AppID] = []
        var seenApps: Set<AppID> = []
        var tokens: [TaskToken] = []
        var seenTokens: Set<TaskToken> = []
        var removedTasks: [TaskToken] = []
        var events: [LifecycleEvent] = []
        for effect in effects {
            switch effect {
            case .event(let e): events.append(e)
            case .sessionChanged(let id): if seenSessions.insert(id).inserted { sessionIDs.append(id) }
            case .sessionRemoved(let id): removedSessions.append(id)
            case .appChanged(let id): if seenApps.insert(id).inserted { appIDs.append(id) }
            case .taskChanged(let t): if seenTokens.insert(t).inserted { tokens.append(t) }
            case .taskRemoved(let t): removedTasks.append(t)
            case .scheduleChanged, .scheduleRemoved, .notificationChanged, .notificationRemoved: break
            }
        }
        // A record named and then removed has no current value: it is only removed.
        self.init(sessions: sessionIDs.compactMap { engine.sessions[$0] }, removedSessions: removedSessions,
                  apps: appIDs.compactMap { engine.apps[$0]?.storedFields }, tasks: tokens.compactMap { engine.tasks[$0] },
                  removedTasks: removedTasks, events: events, counters: EngineCounters(engine))
    }

    /// No record changes. The counters alone do not need a commit: every counter change but the
    /// clock's comes with a record, and the clock is carried by the next commit.
    public var isEmpty: Bool {
        sessions.isEmpty && removedSessions.isEmpty && apps.isEmpty && tasks.isEmpty && removedTasks.isEmpty
            && events.isEmpty
    }

    public var rowCount: Int {
        sessions.count + removedSessions.count + apps.count + tasks.count + removedTasks.count + events.count
    }
}
