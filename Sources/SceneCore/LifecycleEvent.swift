/// The public vocabulary of callbacks and state-only events. These names appear unchanged on the
/// socket, in the CLI and in the journal.
public enum EventName: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    // App delegate callbacks.
    case didFinishLaunching
    case configurationForConnecting
    case didDiscardSceneSessions
    case didReceiveMemoryWarning
    case willTerminate
    case backgroundTaskWillExpire
    // Scene delegate callbacks.
    case willConnectTo
    case willEnterForeground
    case didBecomeActive
    case willResignActive
    case didEnterBackground
    case didDisconnect
    // State-only events: no callback is delivered (R21), but the change is observable.
    case suspended
    case resumed
    case terminated
    // Background wakes (R34), app callbacks: appended so the stored codes stay.
    case performBackgroundTask
    case didReceiveNotification
    // Routing, scene callbacks: scene(_:openURLContexts:) and scene(_:continue:).
    case openURLContexts
    case continueUserActivity

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .didFinishLaunching: "didFinishLaunching"
        case .configurationForConnecting: "configurationForConnecting"
        case .didDiscardSceneSessions: "didDiscardSceneSessions"
        case .didReceiveMemoryWarning: "didReceiveMemoryWarning"
        case .willTerminate: "willTerminate"
        case .backgroundTaskWillExpire: "backgroundTaskWillExpire"
        case .willConnectTo: "willConnectTo"
        case .willEnterForeground: "willEnterForeground"
        case .didBecomeActive: "didBecomeActive"
        case .willResignActive: "willResignActive"
        case .didEnterBackground: "didEnterBackground"
        case .didDisconnect: "didDisconnect"
        case .suspended: "suspended"
        case .resumed: "resumed"
        case .terminated: "terminated"
        case .performBackgroundTask: "performBackgroundTask"
        case .didReceiveNotification: "didReceiveNotification"
        case .openURLContexts: "openURLContexts"
        case .continueUserActivity: "continueUserActivity"
        }
    }
    public var name: String { staticName.description }
    public init?(name: String) {
        guard let e = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = e
    }
    public var description: String { name }

    /// Scene-delegate callbacks concern one scene instance; the rest concern the app.
    public var isSceneCallback: Bool {
        switch self {
        case .willConnectTo, .willEnterForeground, .didBecomeActive, .willResignActive,
             .didEnterBackground, .didDisconnect, .openURLContexts, .continueUserActivity: true
        default: false
        }
    }
    /// An Open's delivery to a connected scene.
    public var isOpen: Bool { self == .openURLContexts || self == .continueUserActivity }
    /// State-only events carry no callback.
    public var isCallback: Bool { self != .suspended && self != .resumed && self != .terminated }
}

/// The state an event leaves behind: the scene's activation state for scene callbacks and
/// `configurationForConnecting`, the process state for app events.
public enum EventState: Sendable, Equatable, CustomStringConvertible {
    case scene(SceneActivationState)
    case process(ProcessState)

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .scene(let s): s.staticName
        case .process(let p): p.staticName
        }
    }
    public var name: String { staticName.description }
    public var description: String { name }
}

/// Why something happened.
public enum EventCause: Sendable, Equatable {
    /// A client asked for it.
    case request
    /// A timer fired: suspension delay, task expiry.
    case timer
    /// The reclaim policy acted under memory pressure.
    case reclaim(ReclaimNote)
    /// A session cap (MaxSessions, archived maximum age) discarded it.
    case cap(String)
    /// The daemon restored its state at start-up.
    case restore
    /// A stop of scened or of the machine (R32).
    case shutdown
    /// A shell holds an interruption: a call, the app switcher (R28).
    case interruption
    /// The login sessions the app follows are locked (R29), inactive (R30) or idle.
    case lock
    case session
    case idle
    /// The machine is about to sleep, or has resumed (R31).
    case sleep
    /// A background wake: a scheduled task or a notification (R34).
    case background

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .request: "request"
        case .timer: "timer"
        case .reclaim: "reclaim"
        case .cap: "cap"
        case .restore: "restore"
        case .shutdown: "shutdown"
        case .interruption: "interruption"
        case .lock: "lock"
        case .session: "session"
        case .idle: "idle"
        case .sleep: "sleep"
        case .background: "background"
        }
    }
    public var name: String { staticName.description }
}

/// What the reclaim policy records with each action it takes.
public struct ReclaimNote: Sendable, Equatable {
    public var level: String
    public var usageBefore: UInt64
    public var usageAfter: UInt64
    public var budget: UInt64
    public var score: Double?
    public var reason: String

    public init(level: String, usageBefore: UInt64, usageAfter: UInt64, budget: UInt64, score: Double?,
                reason: String) {
        self.level = level
        self.usageBefore = usageBefore
        self.usageAfter = usageAfter
        self.budget = budget
        self.score = score
        self.reason = reason
    }
}

/// Extra data an event carries.
public enum EventDetail: Sendable, Equatable {
    case none
    /// `willConnectTo`: the session's saved state-restoration data (nil for a new session) and
    /// whether this is a reconnection of an existing session; what the scene is opened with.
    case connect(restoration: RestorationData?, reconnect: Bool, open: OpenPayload? = nil)
    /// openURLContexts (the URLs), continueUserActivity (the activities).
    case open(OpenPayload)
    /// `didDiscardSceneSessions`: the set delivered (R14: several at the next launch).
    case discarded([SessionID])
    /// `backgroundTaskWillExpire`.
    case task(TaskToken, name: String)
    /// `terminated`: why, and which sessions were archived by the process's death.
    case terminated(reason: TerminationReason, archived: [SessionID])
    /// performBackgroundTask, didReceiveNotification, and a scheduled task's
    /// backgroundTaskWillExpire.
    case wake(WakeDetail)
}

public enum TerminationReason: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Asked for (terminate command).
    case requested
    /// A background task was still open after its expiration grace (R24).
    case backgroundTaskExpired
    /// Reclaimed under memory pressure.
    case memoryPressure
    /// The app's attached process went away without detaching: a crash (§4.3), no callbacks.
    case exited
    /// The app's process did not answer a bounded callback in time (R23): killed, no
    /// willTerminate.
    case hung
    /// scened or the machine stopped and scened ended the process it had started (R32).
    case shutdown

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .requested: "requested"
        case .backgroundTaskExpired: "backgroundTaskExpired"
        case .memoryPressure: "memoryPressure"
        case .exited: "exited"
        case .hung: "hung"
        case .shutdown: "shutdown"
        }
    }
    public var name: String { staticName.description }
    public var description: String { name }

    /// Only a termination the system carries out itself tells the app first (R22).
    public var deliversWillTerminate: Bool { self == .requested || self == .memoryPressure || self == .shutdown }
}

/// One delivered callback or state change.
public struct LifecycleEvent: Sendable, Equatable, CustomStringConvertible {
    /// Strictly increasing across the daemon's whole life, restarts included.
    public var seq: UInt64
    public var time: Timestamp
    public var name: EventName
    public var app: AppID
    /// The session concerned, where one applies.
    public var session: SessionID?
    /// The scene instance of that session (R2), 0 when no scene applies.
    public var sceneInstance: UInt32
    /// The state after this event.
    public var state: EventState
    /// The app's derived state after this event (R18).
    public var appState: ApplicationState
    public var cause: EventCause
    public var detail: EventDetail

    public init(seq: UInt64, time: Timestamp, name: EventName, app: AppID, session: SessionID?,
                sceneInstance: UInt32, state: EventState, appState: ApplicationState, cause: EventCause,
                detail: EventDetail) {
        self.seq = seq
        self.time = time
        self.name = name
        self.app = app
        self.session = session
        self.sceneInstance = sceneInstance
        self.state = state
        self.appState = appState
        self.cause = cause
        self.detail = detail
    }

    /// Every session this event concerns: its own, the discarded set, the sessions archived by a
    /// termination.
    public var sessionsConcerned: [SessionID] {
        var out: [SessionID] = []
        if let s = session { out.append(s) }
        switch detail {
        case .discarded(let ids): out.append(contentsOf: ids.filter { $0 != session })
        case .terminated(_, let ids): out.append(contentsOf: ids.filter { $0 != session })
        default: break
        }
        return out
    }

    public func concerns(_ id: SessionID) -> Bool {
        if session == id { return true }
        switch detail {
        case .discarded(let ids), .terminated(_, let ids): return ids.contains(id)
        default: return false
        }
    }

    public var description: String {
        var s = "#\(seq) \(name) \(app)"
        if let session { s += " \(session)" }
        s += " -> \(state)"
        return s
    }
}
