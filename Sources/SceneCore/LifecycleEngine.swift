/// The UIKit scene life cycle as a pure state machine.
///
/// `handle(_:now:effects:)` applies one command at the given time and appends, in order, every
/// callback, state change and persistence change it causes. Timers (suspension, task expiry) are
/// not armed by the engine: before each command it fires whatever is due up to `now`, and the
/// shell asks `nextDeadline` when to wake it for a `.tick`. One owner, no locks, no I/O.
public struct LifecycleEngine: Sendable {
    public internal(set) var configuration: EngineConfiguration

    public internal(set) var apps = AppTable()
    public internal(set) var sessions = SessionTable()
    public internal(set) var tasks: [TaskToken: BackgroundTask] = [:]
    /// Scheduled background tasks and notifications waiting for a wake (R34); stored.
    public internal(set) var schedules: [ScheduleKey: ScheduledTask] = [:]
    public internal(set) var notifications: [NotificationID: PendingNotification] = [:]
    /// Opens waiting for their app's launch, and the connected scenes' activation conditions
    /// (only those that differ from UIKit's defaults); both stored.
    public internal(set) var pendingOpens: [OpenID: PendingOpen] = [:]
    public internal(set) var activationConditions: [SessionID: ActivationConditions] = [:]
    /// The earliest `earliestBegin` of all scheduled tasks: when the daemon must next look for
    /// due ones. Kept as schedules change (see ScheduleIndex), so that reading it costs nothing.
    public internal(set) var nextScheduleDue: Timestamp?
    var scheduleIndex = ScheduleIndex()
    /// Background scenes, as reclaim reads them; kept current by `handle`.
    public internal(set) var candidates = CandidateIndex()

    /// Never goes backwards: a command stamped earlier than the clock runs at the clock.
    public internal(set) var clock: Timestamp
    /// The sequence number the next event gets.
    public internal(set) var nextSequence: UInt64
    /// Session and task identifiers are never reused: these only grow.
    public internal(set) var nextSessionNumber: UInt64
    public internal(set) var nextTaskNumber: UInt64
    public internal(set) var nextNotificationNumber: UInt64 = 1
    public internal(set) var nextOpenNumber: UInt64 = 1

    var deadlines = DeadlineQueue() { didSet { nextDeadline = deadlines.earliest?.time } }
    /// The earliest time at which a `.tick` may have something to do. May be early (a stale
    /// wake-up); never late. Stored, not computed: the daemon asks before every command, and a
    /// getter called on the Manager's engine copies the whole engine first (a retain and a
    /// release of every table).
    public private(set) var nextDeadline: Timestamp?
    /// Memory in use by the engine's accounting: each running or suspended app's base footprint
    /// plus each connected scene's footprint; what simulated pressure measures. Kept as it
    /// changes, so that reading it costs nothing.
    public internal(set) var residentBytes: UInt64 = 0
    /// The holds in force (R28–R32) and, for each scene a hold keeps down, the state it returns
    /// to when the hold ends. Not stored: at start-up the shell reads the system's state anew.
    public internal(set) var holds = HoldPolicy()
    public internal(set) var heldScenes: [SessionID: SceneActivationState] = [:]
    /// `holds.holdsAny`, kept: asked at every activation.
    var holding = false
    /// Configuration names are few and repeated; sharing their storage keeps sessions small.
    var internedNames: [String: String] = [:]
    /// Likewise sessions' plain details (a configuration, no userInfo or restoration), by name.
    var internedDetails: [String: SessionDetails] = [:]

    public init(configuration: EngineConfiguration = .standard, clock: Timestamp = .zero) {
        self.configuration = configuration
        self.clock = clock
        nextSequence = 1
        nextSessionNumber = 1
        nextTaskNumber = 1
    }

    /// Rebuilds an engine from stored state: `init(restoring: EngineTables)` with the sessions
    /// keyed by id. A session id that appears twice is refused.
    public init(configuration: EngineConfiguration = .standard, restoring snapshot: EngineSnapshot) throws(LifecycleError) {
        let table = try SessionTable(snapshot.sessions, name: "snapshot")
        try self.init(configuration: configuration,
                      restoring: EngineTables(apps: snapshot.apps, sessions: table, tasks: snapshot.tasks,
                                              clock: snapshot.clock, nextSequence: snapshot.nextSequence,
                                              nextSessionNumber: snapshot.nextSessionNumber,
                                              nextTaskNumber: snapshot.nextTaskNumber,
                                              schedules: snapshot.schedules, notifications: snapshot.notifications,
                                              nextNotificationNumber: snapshot.nextNotificationNumber,
                                              pendingOpens: snapshot.pendingOpens, nextOpenNumber: snapshot.nextOpenNumber,
                                              activationConditions: snapshot.activationConditions))
    }

    /// Rebuilds an engine from stored state. Derived data (scene counts per app, each app's
    /// session set and task list, the wake-up queue) is recomputed, not trusted. The session
    /// table is adopted and fixed up in place (each session's app slot, its state if archived,
    /// shared storage): given the only reference, a million sessions are never held twice.
    public init(configuration: EngineConfiguration = .standard, restoring snapshot: consuming EngineTables) throws(LifecycleError) {
        self.configuration = configuration
        clock = snapshot.clock
        nextSequence = max(snapshot.nextSequence, 1)
        nextSessionNumber = max(snapshot.nextSessionNumber, 1)
        nextTaskNumber = max(snapshot.nextTaskNumber, 1)
        for var app in snapshot.apps.sorted(by: { $0.id < $1.id }) {
            guard apps.slot(of: app.id) == nil else {
                throw .invalidArgument(name: "snapshot", reason: "app \(app.id) appears twice")
            }
            app.activeScenes = 0
            app.inactiveScenes = 0
            app.backgroundScenes = 0
            app.sessions = []
            app.tasks = []
            app.scheduledWake = nil
            app.wakes = []
            app.scheduled = []
            app.pendingNotifications = []
            app.pendingOpens = []
            if app.process == .notRunning { app.activeModes = [] }
            _ = apps.insert(app)
        }
        var table = snapshot.sessions
        snapshot.sessions = SessionTable()
        // Each app's sessions, gathered in table order and adopted as its sorted list.
        var appSessions = [[SessionID]](repeating: [], count: apps.records.count)
        var cache = AppSlotCache(apps.records)
        var collected = CandidateIndex.Collector(capacity: table.count)
        try table.updateEach { (s: inout SceneSession) throws(LifecycleError) in
            let slot = try restore(&s, &cache)
            appSessions[slot].append(s.id)
            withUnsafePointer(to: &s) { collected.offer($0) }
        }
        sessions = table
        // The table yields sessions in id order, so each list is sorted already (checked, in
        // one pass, by SortedSessionIDs: a snapshot given in another order is sorted there).
        for slot in appSessions.indices where !appSessions[slot].isEmpty {
            apps.records[slot].sessions = SortedSessionIDs(appSessions[slot])
            appSessions[slot] = []
        }
        appSessions = []
        for task in snapshot.tasks.sorted(by: { $0.token < $1.token }) {
            guard let slot = apps.slot(of: task.app) else {
                throw .invalidArgument(name: "snapshot", reason: "task \(task.token) belongs to unknown app \(task.app)")
            }
            tasks[task.token] = task
            apps.records[slot].tasks.append(task.token)
        }
        try restoreBackgroundWork(snapshot.schedules, snapshot.notifications, nextNotification: snapshot.nextNotificationNumber)
        try restoreRouting(snapshot.pendingOpens, nextOpen: snapshot.nextOpenNumber,
                           conditions: snapshot.activationConditions)
        for slot in apps.records.indices {
            if apps.records[slot].process != .notRunning { residentBytes &+= apps.records[slot].baseFootprint }
            // Stored while woken: the wake is gone (not stored), so the app is idle from now.
            let app = apps.records[slot]
            if app.process == .running && !app.hasForegroundScene && app.holdsNoBackgroundWork && app.idleSince == nil {
                apps.records[slot].idleSince = clock
            }
            schedule(slot)
        }
        candidates = CandidateIndex(restoring: collected)
    }

    /// One restored session, checked and fixed up in place (a copy of the record would retain
    /// and release its references, for every session of the table); returns its app's slot.
    private mutating func restore(_ session: inout SceneSession, _ cache: inout AppSlotCache) throws(LifecycleError) -> Int {
        guard let slot = cache.slot(of: session.app, in: apps) else {
            throw .invalidArgument(name: "snapshot", reason: "session \(session.id) belongs to unknown app \(session.app)")
        }
        guard session.id.rawValue < nextSessionNumber else {
            throw .invalidArgument(name: "snapshot", reason: "session \(session.id) is beyond the id high-water mark")
        }
        guard session.condition != .discarded else {
            throw .invalidArgument(name: "snapshot", reason: "session \(session.id) is discarded")
        }
        // The app id and the details share the engine's storage. An equal id is left as it is:
        // the store's sessions already share their app record's (comparing identical strings
        // costs nothing; replacing one costs two atomic reference count changes).
        if session.app != apps.records[slot].id { session.app = apps.records[slot].id }
        if let own = session.ownDetails {
            let details = shared(own)
            if details !== own { session.details = details }
        }
        session.appSlot = Int32(slot)
        if session.condition != .live { session.sceneState = .unattached }
        if session.condition == .live && session.sceneState != .unattached {
            adjustCount(slot, state: session.sceneState, by: 1)
            residentBytes &+= session.footprint
        }
        return slot
    }

    /// Everything needed to rebuild the engine. The wake-up queue is not state (it is rebuilt
    /// from the deadlines on restore), so each record's queue hint is left out: engines in the
    /// same state have equal snapshots whatever their queue history.
    public var snapshot: EngineSnapshot {
        EngineSnapshot(apps: apps.records.map { app in
                           var stored = app
                           stored.scheduledWake = nil
                           return stored
                       }.sorted { $0.id < $1.id },
                       sessions: sessions.values.sorted { $0.id < $1.id },
                       tasks: tasks.values.sorted { $0.token < $1.token },
                       clock: clock, nextSequence: nextSequence,
                       nextSessionNumber: nextSessionNumber, nextTaskNumber: nextTaskNumber,
                       schedules: schedules.values.sorted { $0.key < $1.key },
                       notifications: notifications.values.sorted { $0.id < $1.id },
                       nextNotificationNumber: nextNotificationNumber,
                       pendingOpens: pendingOpens.values.sorted { $0.id < $1.id }, nextOpenNumber: nextOpenNumber,
                       activationConditions: activationConditions)
    }

    /// Whether an identifier names a session that existed and was discarded (R15). Identifiers
    /// are allocated densely from 1, so every allocated one that is no longer open was discarded.
    public func wasDiscarded(_ id: SessionID) -> Bool {
        id.rawValue > 0 && id.rawValue < nextSessionNumber && sessions[id] == nil
    }

    /// Applies one command at `now`. Due timers fire first (their effects are appended even if the
    /// command itself is then refused); a refused command changes nothing else.
    @discardableResult
    public mutating func handle(_ command: Command, now: Timestamp,
                                effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        let first = effects.count
        // Every change to a session is announced for the store; the index follows the same
        // announcements, also those of timers that fired before a refused command.
        defer { reindex(effects, from: first) }
        return try apply(command, now: now, effects: &effects)
    }

    mutating func reindex(_ effects: [Effect], from first: Int) {
        var i = first
        while i < effects.count {
            switch effects[i] {
            case .sessionChanged(let id), .sessionRemoved(let id):
                if let position = sessions.index(forKey: id) {
                    // Read in place (modify access): a copy of the session would retain its strings.
                    candidates.refresh(&sessions.values[position])
                } else {
                    candidates.remove(id)
                }
            default: break
            }
            i += 1
        }
    }

    mutating func apply(_ command: Command, now: Timestamp,
                        effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        advance(to: now, effects: &effects)
        switch command {
        case .tick:
            return .done
        case .launch(let app, let cause):
            try launch(app, cause: cause, effects: &effects)
            return .done
        case .terminate(let app, let cause):
            try terminate(app, cause: cause, effects: &effects)
            return .done
        case .processDied(let app, let reason):
            try processDied(app, reason: reason, effects: &effects)
            return .done
        case .connect(let request):
            return .session(try connect(request, effects: &effects))
        case .activate(let id):
            try activate(id, effects: &effects)
            return .done
        case .deactivate(let id):
            try deactivate(id, effects: &effects)
            return .done
        case .background(let id):
            try background(id, effects: &effects)
            return .done
        case .disconnect(let id, let cause):
            try disconnect(id, cause: cause, effects: &effects)
            return .done
        case .discard(let id, let cause):
            try discard(id, cause: cause, effects: &effects)
            return .done
        case .saveState(let id, let data):
            try updateSession(id, effects: &effects) { $0.restoration = data }
            return .done
        case .saveUserInfo(let id, let info):
            try updateSession(id, effects: &effects) { $0.userInfo = info }
            return .done
        case .setFootprint(let id, let bytes):
            try setFootprint(id, bytes, effects: &effects)
            return .done
        case .setProtected(let id, let flag):
            try updateSession(id, effects: &effects) { $0.isProtected = flag }
            return .done
        case .setAppFootprint(let app, let bytes):
            try setAppFootprint(app, bytes, effects: &effects)
            return .done
        case .beginTask(let request):
            return .task(try beginTask(request, effects: &effects))
        case .endTask(let token):
            try endTask(token, effects: &effects)
            return .done
        case .memoryWarning(let targets, let cause):
            try memoryWarning(targets, cause: cause, effects: &effects)
            return .done
        case .suspend(let app, let cause):
            try suspendEarly(app, cause: cause, effects: &effects)
            return .done
        case .resume(let app, let cause):
            try resume(app, cause: cause, effects: &effects)
            return .done
        case .setHolds(let policy):
            setHolds(policy, effects: &effects)
            return .done
        case .scheduleTask, .cancelTask, .queueNotification, .wake, .endWake, .expireWakes, .beginActivity,
             .endActivity:
            return try applyBackground(command, effects: &effects)
        case .open, .setActivationConditions:
            return try applyRouting(command, effects: &effects)
        }
    }

    // MARK: - Shared helpers

    /// Looks up an open session (a copy), telling a discarded one from one that never existed.
    func openSession(_ id: SessionID) throws(LifecycleError) -> SceneSession {
        if let s = sessions[id] { return s }
        throw wasDiscarded(id) ? .sessionDiscarded(id) : .noSuchSession(id)
    }

    mutating func intern(_ name: String) -> String {
        if let existing = internedNames[name] { return existing }
        internedNames[name] = name
        return name
    }

    /// One object for all plain details of a configuration; `SessionDetails.standard` and
    /// details with userInfo or restoration data are kept as they are.
    mutating func shared(_ details: SessionDetails) -> SessionDetails {
        guard details !== SessionDetails.standard, details.isPlain else { return details }
        if let existing = internedDetails[details.configurationName] { return existing }
        internedDetails[details.configurationName] = details
        return details
    }

    /// Appends an event; `app` is the app's slot.
    mutating func emit(_ name: EventName, app: Int, session: SessionID? = nil, sceneInstance: UInt32 = 0,
                       state: EventState, cause: EventCause, detail: EventDetail = .none,
                       effects: inout [Effect]) {
        // Field by field: copying the whole record would retain its collections for nothing.
        let event = LifecycleEvent(seq: nextSequence, time: clock, name: name, app: apps.records[app].id, session: session,
                                   sceneInstance: sceneInstance, state: state,
                                   appState: apps.records[app].applicationState, cause: cause, detail: detail)
        nextSequence += 1
        effects.append(.event(event))
    }

    /// Moves a scene between activation states, keeping its app's per-state counts and the
    /// resident bytes exact. Returns the app's slot.
    @discardableResult
    mutating func setSceneState(_ id: SessionID, _ new: SceneActivationState) -> Int {
        let (old, slot, footprint): (SceneActivationState, Int, UInt64) = withSession(id) { s in
            let old = s.sceneState
            s.sceneState = new
            return (old, Int(s.appSlot), s.footprint)
        }
        guard old != new else { return slot }
        adjustCount(slot, state: old, by: -1)
        adjustCount(slot, state: new, by: 1)
        // A scene holds memory while attached (its footprint counts from connection to release).
        if old == .unattached { residentBytes &+= footprint }
        if new == .unattached {
            residentBytes &-= footprint
            forgetHeld(id)
        }
        return slot
    }

    /// One lookup, changed in place.
    @inline(__always)
    mutating func withSession<R>(_ id: SessionID, _ body: (inout SceneSession) -> R) -> R {
        // In place: through the subscript it would be a copy out and a copy back in.
        body(&sessions.values[sessions.index(forKey: id)!])
    }

    mutating func adjustCount(_ slot: Int, state: SceneActivationState, by delta: Int32) {
        switch state {
        case .foregroundActive: apps.records[slot].activeScenes += delta
        case .foregroundInactive: apps.records[slot].inactiveScenes += delta
        case .background: apps.records[slot].backgroundScenes += delta
        case .unattached: break
        }
    }

    mutating func updateSession(_ id: SessionID, effects: inout [Effect],
                                _ change: (inout SceneSession) -> Void) throws(LifecycleError) {
        _ = try openSession(id)
        change(&sessions.values[sessions.index(forKey: id)!])
        effects.append(.sessionChanged(id))
    }
}

/// Stored engine state with the sessions keyed by id, as the engine holds them: what the store
/// builds at start-up, so that the engine can adopt the table instead of copying an array.
public struct EngineTables: Sendable {
    public var apps: [AppRecord]
    public var sessions: SessionTable
    public var tasks: [BackgroundTask]
    public var clock: Timestamp
    public var nextSequence: UInt64
    public var nextSessionNumber: UInt64
    public var nextTaskNumber: UInt64
    public var schedules: [ScheduledTask] = []
    public var notifications: [PendingNotification] = []
    public var nextNotificationNumber: UInt64 = 1
    public var pendingOpens: [PendingOpen] = []
    public var nextOpenNumber: UInt64 = 1
    public var activationConditions: [SessionID: ActivationConditions] = [:]

    public init(apps: [AppRecord], sessions: SessionTable, tasks: [BackgroundTask], clock: Timestamp,
                nextSequence: UInt64, nextSessionNumber: UInt64, nextTaskNumber: UInt64,
                schedules: [ScheduledTask] = [], notifications: [PendingNotification] = [],
                nextNotificationNumber: UInt64 = 1, pendingOpens: [PendingOpen] = [], nextOpenNumber: UInt64 = 1,
                activationConditions: [SessionID: ActivationConditions] = [:]) {
        self.pendingOpens = pendingOpens
        self.nextOpenNumber = nextOpenNumber
        self.activationConditions = activationConditions
        self.schedules = schedules
        self.notifications = notifications
        self.nextNotificationNumber = nextNotificationNumber
        self.apps = apps
        self.sessions = sessions
        self.tasks = tasks
        self.clock = clock
        self.nextSequence = nextSequence
        self.nextSessionNumber = nextSessionNumber
        self.nextTaskNumber = nextTaskNumber
    }
}

/// Stored engine state, as the store saves and restores it.
public struct EngineSnapshot: Sendable, Equatable {
    public var apps: [AppRecord]
    public var sessions: [SceneSession]
    public var tasks: [BackgroundTask]
    public var clock: Timestamp
    public var nextSequence: UInt64
    public var nextSessionNumber: UInt64
    public var nextTaskNumber: UInt64
    public var schedules: [ScheduledTask] = []
    public var notifications: [PendingNotification] = []
    public var nextNotificationNumber: UInt64 = 1
    public var pendingOpens: [PendingOpen] = []
    public var nextOpenNumber: UInt64 = 1
    public var activationConditions: [SessionID: ActivationConditions] = [:]

    public init(apps: [AppRecord], sessions: [SceneSession], tasks: [BackgroundTask], clock: Timestamp,
                nextSequence: UInt64, nextSessionNumber: UInt64, nextTaskNumber: UInt64,
                schedules: [ScheduledTask] = [], notifications: [PendingNotification] = [],
                nextNotificationNumber: UInt64 = 1, pendingOpens: [PendingOpen] = [], nextOpenNumber: UInt64 = 1,
                activationConditions: [SessionID: ActivationConditions] = [:]) {
        self.pendingOpens = pendingOpens
        self.nextOpenNumber = nextOpenNumber
        self.activationConditions = activationConditions
        self.schedules = schedules
        self.notifications = notifications
        self.nextNotificationNumber = nextNotificationNumber
        self.apps = apps
        self.sessions = sessions
        self.tasks = tasks
        self.clock = clock
        self.nextSequence = nextSequence
        self.nextSessionNumber = nextSessionNumber
        self.nextTaskNumber = nextTaskNumber
    }
}

/// Changing the timing rules of a running engine (a daemon reload).
extension LifecycleEngine {
    /// New delays apply to every app from now on: each app's deadline is re-derived and queued;
    /// wake-ups queued under the old rules are dropped when they come due (they no longer match).
    public mutating func reconfigure(_ configuration: EngineConfiguration) {
        guard configuration != self.configuration else { return }
        self.configuration = configuration
        for slot in apps.records.indices {
            apps.records[slot].scheduledWake = nil
            schedule(slot)
        }
    }
}

/// Read-only views the daemon reports.
extension LifecycleEngine {
    /// When the task's expiration handler is (or was) due; nil while its app is in the foreground.
    public func expiry(of task: BackgroundTask) -> Timestamp? {
        guard let app = apps[task.app], app.process == .running, let entered = app.backgroundEnteredAt else { return nil }
        return max(entered + configuration.backgroundTaskBudget, task.beganAt)
    }

    /// When the app will be suspended if nothing changes.
    public func suspensionTime(of app: AppRecord) -> Timestamp? {
        guard app.process == .running, let idle = app.idleSince else { return nil }
        return idle + configuration.suspendDelay
    }

    /// Bytes held by the app's connected scenes.
    public func sceneFootprint(of app: AppRecord) -> UInt64 {
        var total: UInt64 = 0
        for id in app.sessions {
            if let s = sessions[id], s.condition == .live { total &+= s.footprint }
        }
        return total
    }

    /// Sessions with a connected scene, counted from the apps' per-state counts.
    public var liveSessionCount: Int {
        var n = 0
        for app in apps.records { n += Int(app.connectedScenes) }
        return n
    }

    public var foregroundActiveSceneCount: Int {
        var n = 0
        for app in apps.records { n += Int(app.activeScenes) }
        return n
    }
}

extension LifecycleEngine {
    /// What a connected scene holds: a live session's change moves the resident total.
    mutating func setFootprint(_ id: SessionID, _ bytes: UInt64, effects: inout [Effect]) throws(LifecycleError) {
        let old = try openSession(id)
        try Self.checkFootprint(bytes)
        if old.condition == .live { residentBytes = residentBytes &- old.footprint &+ bytes }
        sessions.values[sessions.index(forKey: id)!].footprint = bytes
        effects.append(.sessionChanged(id))
    }

    /// What the process holds apart from its scenes: counted only while it runs.
    mutating func setAppFootprint(_ app: AppID, _ bytes: UInt64, effects: inout [Effect]) throws(LifecycleError) {
        guard let slot = apps.slot(of: app) else { throw .noSuchApp(app) }
        try Self.checkFootprint(bytes)
        if apps.records[slot].process != .notRunning {
            residentBytes = residentBytes &- apps.records[slot].baseFootprint &+ bytes
        }
        apps.records[slot].baseFootprint = bytes
        effects.append(.appChanged(app))
    }
}
