// The checker's options and its model of the world, built from events only.

extension ConformanceChecker {
    public struct Options: Sendable, Equatable {
        /// The timing rules to hold events to (suspension delay, task budget, expiration grace);
        /// nil checks order only. They must be the engine's for the whole stream: after a
        /// `reconfigure` to shorter delays, start a new checker (from a snapshot) or pass nil.
        public var timing: EngineConfiguration?
        /// Also reject what the reference only tolerates (observed on iOS, not documented): the
        /// S10 shortcut (didDisconnect straight from foregroundInactive), a willEnterForeground not
        /// followed by didBecomeActive (R5), a running process dying without willTerminate.
        public var strict: Bool
        /// Sequence numbers must be consecutive: true for one engine's complete output, false for
        /// a filtered stream.
        public var consecutiveSequence: Bool

        public init(timing: EngineConfiguration? = nil, strict: Bool = true, consecutiveSequence: Bool = false) {
            self.timing = timing
            self.strict = strict
            self.consecutiveSequence = consecutiveSequence
        }
    }

    /// What the next event of an app must be, because the previous one started a fixed chain.
    enum Expectation: Sendable, Equatable {
        case none
        /// configurationForConnecting(s) → willConnectTo(s) (R10, R27).
        case willConnect(SessionID)
        /// willConnectTo(s) → willEnterForeground(s), or didEnterBackground(s) for a background
        /// connection (R27, U7).
        case firstState(SessionID)
        /// willEnterForeground(s) → didBecomeActive(s) (R5, strict).
        case becomeActive(SessionID)
        /// willTerminate → terminated (R22).
        case terminated
        /// resumed for a wake → its first performBackgroundTask or didReceiveNotification (R34).
        case wakeEvent
    }

    struct AppModel: Sendable {
        var process: ProcessState = .notRunning
        /// Sessions with a connected scene.
        var live: Set<SessionID> = []
        var expect: Expectation = .none
        var previous: EventName?
        var willTerminateSent = false
        /// Since when the process has been running with no foreground scene: the lower bound of
        /// both the suspension clock and the task budget.
        var backgroundSince: Timestamp?
        /// backgroundTaskWillExpire sent during the current stay in the background.
        var expirations: [TaskToken: Timestamp] = [:]
        /// The last didEnterBackground delivered to this process: it has the suspension delay to
        /// handle it before it may be suspended (§2.2).
        var lastEnteredBackground: Timestamp?
        /// The system holds the app's scenes down (R28–R31): told by `noteHolds`, else inferred
        /// from the events (a scene moved down by a system cause, until one comes back by one).
        var held = false
        /// The deadline each task handed over by a wake was given (R34): its timer's
        /// backgroundTaskWillExpire never comes earlier.
        var wakeDeadlines: [String: Timestamp] = [:]
    }

    struct SessionModel: Sendable {
        var app: AppID
        var live: Bool
        var state: SceneActivationState
        /// The current (or last) scene instance; 0 before the first willConnectTo.
        var instance: UInt32
        /// Announced by configurationForConnecting, not yet connected.
        var announced: Bool
        /// Archived by the death of its process rather than by a didDisconnect (R26).
        var archivedByDeath: Bool
    }

    struct SavedRestoration: Sendable {
        var data: RestorationData?
    }

    /// The causes of the system's holds (R28–R32).
    static func isSystemHold(_ cause: EventCause) -> Bool {
        switch cause {
        case .interruption, .lock, .session, .idle, .sleep, .shutdown: true
        default: false
        }
    }

    static func stateAfter(_ name: EventName) -> SceneActivationState {
        switch name {
        case .willEnterForeground, .willResignActive: .foregroundInactive
        case .didBecomeActive: .foregroundActive
        case .didEnterBackground: .background
        default: .unattached
        }
    }
}
