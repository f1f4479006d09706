/// An app as the engine sees it: its process state, its scenes' states and what is queued for it.
public struct AppRecord: Sendable, Equatable {
    public let id: AppID
    public internal(set) var process: ProcessState

    /// Connected scenes per activation state; R18 derives the app state from these counts.
    public internal(set) var activeScenes: Int32 = 0
    public internal(set) var inactiveScenes: Int32 = 0
    public internal(set) var backgroundScenes: Int32 = 0

    /// Every open (live or archived) session of this app.
    public internal(set) var sessions: SortedSessionIDs = []
    /// Sessions discarded while the app was not running, delivered after its next launch (R14).
    public internal(set) var pendingDiscards: [SessionID] = []
    /// Open background tasks.
    public internal(set) var tasks: [TaskToken] = []
    /// What an open wake handed the app and it has not answered (R34). Not stored: after a
    /// restart the app is idle again and its suspension delay runs.
    public internal(set) var wakes: [WakeItem] = []
    /// The background modes the app declares active now (BeginBackgroundActivity); stored,
    /// cleared when its process ends.
    public internal(set) var activeModes: BackgroundModes = []
    /// The identifiers of its scheduled tasks, sorted, and its pending notifications in id
    /// order: derived from the engine's tables, kept with them, never stored.
    public internal(set) var scheduled: [String] = []
    public internal(set) var pendingNotifications: [NotificationID] = []
    /// Its stored Opens, oldest first: derived from the engine's table, never stored.
    public internal(set) var pendingOpens: [OpenID] = []

    /// Since when the app has been running with no foreground scene and no task: the suspension
    /// clock (R21, R24).
    public internal(set) var idleSince: Timestamp?
    /// When the app, running with tasks, entered the background: the task budget runs from here.
    public internal(set) var backgroundEnteredAt: Timestamp?

    public internal(set) var launchedAt: Timestamp?
    public internal(set) var launches: UInt32 = 0
    /// Memory the process holds apart from its scenes (simulated pressure counts it while the
    /// app is running or suspended).
    public internal(set) var baseFootprint: UInt64 = 0

    /// The earliest wake-up already queued for this app (see DeadlineQueue).
    var scheduledWake: Timestamp?

    public init(id: AppID, process: ProcessState = .notRunning) {
        self.id = id
        self.process = process
    }

    /// Rebuilds a stored app. Scene counts, sessions and tasks are derived from the stored
    /// sessions and tasks when the engine is restored, never trusted from storage.
    public init(id: AppID, process: ProcessState, pendingDiscards: [SessionID], idleSince: Timestamp?,
                backgroundEnteredAt: Timestamp?, launchedAt: Timestamp?, launches: UInt32,
                baseFootprint: UInt64, activeModes: BackgroundModes = []) {
        self.activeModes = activeModes
        self.id = id
        self.process = process
        self.pendingDiscards = pendingDiscards
        self.idleSince = idleSince
        self.backgroundEnteredAt = backgroundEnteredAt
        self.launchedAt = launchedAt
        self.launches = launches
        self.baseFootprint = baseFootprint
    }

    /// R18.
    /// The app as it is stored, without the collections derived from its sessions and tasks:
    /// a batch in flight must not share the engine's sets, or every Connect while it commits
    /// would copy the app's whole set of sessions.
    public var storedFields: AppRecord {
        var copy = self
        copy.sessions = []
        copy.tasks = []
        copy.wakes = []
        copy.scheduled = []
        copy.pendingNotifications = []
        copy.pendingOpens = []
        return copy
    }

    public var applicationState: ApplicationState {
        if activeScenes > 0 { return .active }
        if inactiveScenes > 0 { return .inactive }
        return .background
    }

    public var connectedScenes: Int32 { activeScenes + inactiveScenes + backgroundScenes }
    public var hasForegroundScene: Bool { activeScenes + inactiveScenes > 0 }
    /// Nothing keeps the process running in the background: no task, no open wake item, no
    /// declared background mode (R21, R24, R34).
    public var holdsNoBackgroundWork: Bool { tasks.isEmpty && wakes.isEmpty && activeModes.isEmpty }
}

/// A background task (`beginBackgroundTask`): keeps its app running in the background until it
/// ends or its time runs out (R24).
public struct BackgroundTask: Sendable, Equatable {
    public let token: TaskToken
    public let app: AppID
    /// The session the task was begun for, while that session is open. The task belongs to the
    /// process (`beginBackgroundTask` is an app call), so it outlives a discarded session, which
    /// it then no longer names (R15).
    public internal(set) var session: SessionID?
    public let name: String
    public let beganAt: Timestamp
    /// When backgroundTaskWillExpire was emitted (the expiration handler ran); the app is
    /// terminated if the task is still open one grace period later.
    public internal(set) var expirationSentAt: Timestamp?

    public init(token: TaskToken, app: AppID, session: SessionID?, name: String, beganAt: Timestamp,
                expirationSentAt: Timestamp?) {
        self.token = token
        self.app = app
        self.session = session
        self.name = name
        self.beganAt = beganAt
        self.expirationSentAt = expirationSentAt
    }
}
