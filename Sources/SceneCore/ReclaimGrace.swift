/// The grace of reclaim-policy.md §3.5 for scenes whose app takes part (attached apps in the
/// daemon, scenes with an `ack_profile` in a replay): before a reclaim disconnect the app gets a
/// notice with a deadline and saves its state. It answers `ack` (disconnect at once), `defer`
/// (skip to the next victim; once per scene per episode) or nothing (disconnect at the
/// deadline, counted as a timeout, and the app's grace is halved next time).
///
/// Pure bookkeeping: the controller turns planned disconnects into notices here and takes back
/// the disconnects that answers and deadlines release.
public struct ReclaimGrace: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var warning: TimeSpan
        public var critical: TimeSpan
        /// However often an app was silent, its grace is never shorter.
        public var minimum: TimeSpan

        public init(warning: TimeSpan = .seconds(2), critical: TimeSpan = .milliseconds(250),
                    minimum: TimeSpan = .milliseconds(50)) {
            self.warning = warning
            self.critical = critical
            self.minimum = minimum
        }
    }

    /// A disconnect waiting for the app's answer.
    public struct Notice: Sendable, Equatable {
        /// Numbers notices for the answers (never reused in one controller's life).
        public var id: UInt64
        public var session: SessionID
        public var app: AppID
        public var deadline: Timestamp
        /// The plan step that is carried out when the notice is settled.
        public var step: ReclaimStep
    }

    public enum Answer: Sendable, Equatable {
        /// Saved: disconnect now.
        case ack
        /// Not now (mid-transaction): the next victim instead, once per scene per episode.
        case deferral
    }

    /// What an answer settled.
    public enum Resolution: Sendable, Equatable {
        /// Disconnect now.
        case disconnect(Notice)
        /// Deferred: the scene is left alone for the rest of the episode; decide again now.
        case deferred(Notice)
        /// No such notice pending (settled already, cancelled, never given).
        case unknown
    }

    public struct Counters: Sendable, Equatable {
        public var notices = 0
        public var acks = 0
        public var deferrals = 0
        /// Deferrals beyond the one allowed: disconnected at once.
        public var refusedDeferrals = 0
        public var timeouts = 0
        /// Pending notices dropped because the episode ended.
        public var cancelled = 0
    }

    public var configuration: Configuration
    public private(set) var pending: [UInt64: Notice] = [:]
    private var pendingBySession: [SessionID: UInt64] = [:]
    /// Scenes that deferred in this episode.
    public private(set) var deferred: Set<SessionID> = []
    /// Per app, the deadlines it let pass: each halves its grace.
    public private(set) var silences: [AppID: Int] = [:]
    public private(set) var counters = Counters()
    private var nextID: UInt64 = 1

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public var isEmpty: Bool { pending.isEmpty }

    /// Whether the policy must leave the scene alone: a notice is out, or it deferred.
    public func isExcluded(_ id: SessionID) -> Bool { pendingBySession[id] != nil || deferred.contains(id) }

    public func notice(for session: SessionID) -> Notice? { pendingBySession[session].flatMap { pending[$0] } }

    /// The grace an app gets at this level.
    public func grace(for app: AppID, level: PressureLevel) -> TimeSpan {
        let base = level == .critical ? configuration.critical : configuration.warning
        let halvings = min(silences[app] ?? 0, 16)
        return max(TimeSpan(microseconds: base.microseconds >> halvings), configuration.minimum)
    }

    /// Holds a planned disconnect back and returns the notice to send.
    public mutating func hold(_ step: ReclaimStep, session: SessionID, app: AppID, level: PressureLevel,
                              now: Timestamp) -> Notice {
        let notice = Notice(id: nextID, session: session, app: app, deadline: now + grace(for: app, level: level), step: step)
        nextID += 1
        pending[notice.id] = notice
        pendingBySession[session] = notice.id
        counters.notices += 1
        return notice
    }

    public mutating func answer(_ id: UInt64, _ answer: Answer, app: AppID) -> Resolution {
        guard let notice = pending[id], notice.app == app else { return .unknown }
        settle(notice)
        switch answer {
        case .ack:
            counters.acks += 1
            return .disconnect(notice)
        case .deferral:
            guard !deferred.contains(notice.session) else {
                counters.refusedDeferrals += 1
                return .disconnect(notice)
            }
            deferred.insert(notice.session)
            counters.deferrals += 1
            return .deferred(notice)
        }
    }

    /// Notices whose deadline has passed: disconnected from the last state they saved.
    public mutating func expire(now: Timestamp) -> [Notice] {
        let due = pending.values.filter { $0.deadline <= now }.sorted { $0.id < $1.id }
        for notice in due {
            settle(notice)
            counters.timeouts += 1
            silences[notice.app, default: 0] += 1
        }
        return due
    }

    /// The episode ended: nothing more needs freeing, and deferrals start afresh next time.
    public mutating func episodeEnded() {
        counters.cancelled += pending.count
        pending = [:]
        pendingBySession = [:]
        deferred = []
    }

    public var nextDeadline: Timestamp? { pending.values.map(\.deadline).min() }

    /// Bytes the pending disconnects will free: the policy counts them as already going.
    public func pendingBytes(_ engine: LifecycleEngine) -> UInt64 {
        var total: UInt64 = 0
        for id in pendingBySession.keys { total &+= engine.sessions[id]?.footprint ?? 0 }
        return total
    }

    private mutating func settle(_ notice: Notice) {
        pending[notice.id] = nil
        pendingBySession[notice.session] = nil
    }
}
