/// An operator's forced level (SetPressure; a trace's `pressure` line), optionally for a while.
public struct PressureOverride: Equatable, Sendable {
    public var level: PressureLevel
    /// When it lapses; nil: until cleared.
    public var until: Timestamp?

    public init(level: PressureLevel, until: Timestamp? = nil) {
        self.level = level
        self.until = until
    }
}

/// What the controller is given at each evaluation, besides the engine.
public struct PressureReadings: Equatable, Sendable {
    /// Resident bytes by the engine's accounting (apps' base footprints, live scenes').
    public var usage: UInt64
    /// The memory budget; nil: unlimited.
    public var budget: UInt64?
    /// The highest level of the sources that are not the budget accounting (PSI).
    public var external: PressureLevel

    public init(usage: UInt64, budget: UInt64?, external: PressureLevel = .normal) {
        self.usage = usage
        self.budget = budget
        self.external = external
    }
}

/// The reclaim controller: everything around the policy, pure, so that the daemon and the
/// replayer run exactly the same one (time and readings are parameters).
///
/// It combines the sources (the budget gauge with its hysteresis and hold, an operator's
/// override, external sources such as PSI: the level is the highest of them), decides when the
/// policy is asked (the level changed; pressure persists and the settle time is over; a cap is
/// due; an episode is to be closed), turns the plan into engine commands caused by `.reclaim`
/// (caps: `.cap`), and says when it next needs to run. Rules settled once for both users:
/// the override is combined with the other sources by max (it can raise the level, never
/// hide a real one; `normal` clears it); the policy is consulted only under those conditions,
/// not after every event; caps are swept by the same gating everywhere.
public struct ReclaimController: Sendable {
    public var policy: ReclaimPolicy
    public var gauge: PressureGauge
    /// Whether the budget accounting is a pressure source (the daemon's `Sources=simulated`).
    public var gaugeIsSource: Bool
    public var override: PressureOverride?
    public private(set) var level: PressureLevel = .normal
    /// When the policy asked to be consulted again.
    public private(set) var nextDecision: Timestamp?
    /// The levels of the last evaluation, per source.
    public private(set) var gaugeLevel: PressureLevel = .normal
    public private(set) var externalLevel: PressureLevel = .normal
    private var reportedUnrelievable = false
    /// Reclaim notices to apps that take part (§3.5), and their answers.
    public var grace = ReclaimGrace()

    /// How often archived sessions are checked against `archivedMaxAge` when nothing else
    /// wakes the controller.
    public static let capSweep = TimeSpan.seconds(60)

    public init(policy: ReclaimPolicy, gauge: PressureGauge, gaugeIsSource: Bool = true) {
        self.policy = policy
        self.gauge = gauge
        self.gaugeIsSource = gaugeIsSource
    }

    /// One reclaim command, with the plan step it came from.
    public struct Step: Sendable, Equatable {
        public var command: Command
        public var step: ReclaimStep
    }

    public struct Outcome: Sendable {
        /// The level before, when it changed.
        public var previousLevel: PressureLevel?
        /// The policy's plan, when it was consulted.
        public var plan: ReclaimPlan?
        /// The plan as engine commands, in order; report each with `executed(_:succeeded:)`.
        public var steps: [Step] = []
        /// Only foreground and protected scenes remain: said once per episode.
        public var becameUnrelievable = false
        /// When to evaluate again at the latest (nil: only when something happens).
        public var wake: Timestamp?
        /// The level came from a source other than the accounting (for the plan).
        public var external = false
        /// Disconnects held back for the app's answer: send each notice to its app, then
        /// report the answer with `answer(_:_:app:)`. Its deadline is in `wake`.
        public var notices: [ReclaimGrace.Notice] = []
    }

    /// The level the override stands for now (after lapsing it).
    public var overrideLevel: PressureLevel { override?.level ?? .normal }

    private var capsConfigured: Bool {
        policy.configuration.maxSessions > 0 || policy.configuration.archivedMaxAge > .zero
    }

    /// Refreshes the level and, when the gating calls for it, asks the policy what to do.
    /// - Parameter takesNotice: whether a scene's app takes part in the grace protocol; its
    ///   reclaim disconnects then wait for its answer or its deadline.
    public mutating func evaluate(engine: LifecycleEngine, readings: PressureReadings, now: Timestamp,
                                  nextUse: ((SessionID) -> Timestamp?)? = nil,
                                  takesNotice: ((SessionID, AppID) -> Bool)? = nil) -> Outcome {
        var outcome = Outcome()
        // Silence until the deadline: disconnected from the state the app saved last.
        for notice in grace.expire(now: now) where Self.stillReclaimable(notice, engine) {
            outcome.steps.append(Self.step(notice.step))
        }
        if let o = override, let until = o.until, now >= until { override = nil }
        if override?.level == .normal { override = nil }
        let budget = readings.budget ?? 0
        gaugeLevel = gaugeIsSource ? gauge.update(usage: readings.usage, budget: budget, now: now) : .normal
        externalLevel = readings.external
        let newLevel = max(gaugeLevel, externalLevel, overrideLevel)
        outcome.external = max(externalLevel, overrideLevel) > gaugeLevel
        let changed = newLevel != level
        if changed {
            outcome.previousLevel = level
            level = newLevel
            if newLevel == .normal { reportedUnrelievable = false }
        }
        policy.configuration.budget = readings.budget ?? .max
        let due = nextDecision.map { now >= $0 } ?? true
        let capsDue = capsConfigured && (policy.configuration.maxSessions > 0
            ? engine.sessions.count > policy.configuration.maxSessions : due)
        if changed || (level > .normal && due) || capsDue || (level == .normal && policy.episode != nil) {
            // Scenes with a notice out are as good as gone; they and those that deferred are
            // not chosen again.
            let going = grace.isEmpty ? 0 : grace.pendingBytes(engine)
            let held = grace
            let plan = policy.decide(engine: engine, level: level, usage: readings.usage - min(readings.usage, going), now: now,
                                     external: outcome.external, nextUse: nextUse,
                                     excluded: held.isEmpty && held.deferred.isEmpty ? nil : { held.isExcluded($0) })
            nextDecision = plan.nextDecision
            outcome.plan = plan
            for step in plan.steps {
                if case .disconnect(let id) = step.action, let takesNotice, let s = engine.sessions[id], takesNotice(id, s.app) {
                    outcome.notices.append(grace.hold(step, session: id, app: s.app, level: level, now: now))
                } else {
                    outcome.steps.append(Self.step(step))
                }
            }
            if plan.episodeEnded { grace.episodeEnded() }
            if plan.unrelievable && !reportedUnrelievable {
                reportedUnrelievable = true
                outcome.becameUnrelievable = true
            }
        }
        outcome.wake = nextWake(now: now)
        return outcome
    }

    /// A scene brought back to the foreground (or gone) while its notice was out is left alone.
    static func stillReclaimable(_ notice: ReclaimGrace.Notice, _ engine: LifecycleEngine) -> Bool {
        guard let s = engine.sessions[notice.session] else { return false }
        return s.condition == .live && s.sceneState == .background
    }

    static func step(_ step: ReclaimStep) -> Step { Step(command: command(for: step), step: step) }

    /// An app answered a reclaim notice: the disconnect to carry out now, if any. A deferral
    /// lets the policy choose the next victim at the next evaluation, without waiting for the
    /// settle time.
    public mutating func answer(_ id: UInt64, _ answer: ReclaimGrace.Answer, app: AppID,
                                engine: LifecycleEngine) -> (ReclaimGrace.Resolution, [Step]) {
        let resolution = grace.answer(id, answer, app: app)
        switch resolution {
        case .disconnect(let notice):
            return (resolution, Self.stillReclaimable(notice, engine) ? [Self.step(notice.step)] : [])
        case .deferred(let notice):
            policy.noteDeferred(bytes: engine.sessions[notice.session]?.footprint ?? 0)
            nextDecision = nil
            return (resolution, [])
        case .unknown:
            return (resolution, [])
        }
    }

    /// The engine command that carries out a plan step.
    public static func command(for step: ReclaimStep) -> Command {
        switch step.action {
        case .memoryWarning(let apps): .memoryWarning(apps: apps, cause: .reclaim(step.note))
        case .suspend(let app): .suspend(app, cause: .reclaim(step.note))
        case .disconnect(let id): .disconnect(id, cause: .reclaim(step.note))
        case .terminate(let app): .terminate(app, cause: .reclaim(step.note))
        case .discard(let id): .discard(id, cause: .cap(step.note.reason))
        }
    }

    /// What became of a step: a discarded session is forgotten by the policy.
    public mutating func executed(_ step: Step, succeeded: Bool) {
        if succeeded, case .discard(let id) = step.step.action { policy.noteDiscarded(id) }
    }

    /// The earliest time something may change by itself: the policy's next decision, the
    /// gauge's hold ending, the override lapsing, the archived-age sweep.
    private func nextWake(now: Timestamp) -> Timestamp? {
        var wake: Timestamp?
        func consider(_ t: Timestamp?) {
            guard let t, t > now else { return }
            if wake == nil || t < wake! { wake = t }
        }
        consider(nextDecision)
        if gaugeIsSource { consider(gauge.nextDrop) }
        consider(override?.until)
        consider(grace.nextDeadline)
        if policy.configuration.archivedMaxAge > .zero { consider(now + Self.capSweep) }
        return wake
    }
}
