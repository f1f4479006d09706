/// "Why this victim, and what would it do next?": the policy's ranking and the plan it would
/// make, computed on a copy so that nothing changes (the policy's episode, its memory of
/// batches and regrets stay as they are). Works at any level: at normal the plan is the one a
/// warning would bring, so an operator sees the order before pressure comes.
public struct ReclaimPreview: Sendable, Equatable {
    /// One candidate, best victim first, with the parts of its score.
    public struct Candidate: Sendable, Equatable {
        public var rank: Int
        /// A scene's session, or nil for a suspended app's process (critical only).
        public var session: SessionID?
        public var app: AppID
        /// 1: aged background scenes and suspended processes; 2: young scenes (critical only).
        public var tier: Int
        /// What keeping it is worth per byte (lowest goes first): (uses + 1) × (1 + cost / mean
        /// cost) / bytes.
        public var score: Double
        /// How often it is used: usage sessions, with recent activations counted in.
        public var uses: Double
        /// Its restore cost in ms (declared, or the default), and the mean over the candidates.
        public var restoreCostMs: Double
        public var meanRestoreCostMs: Double
        /// What reclaiming it frees.
        public var bytes: UInt64
        public var lastActiveAt: Timestamp
        public var backgroundFor: TimeSpan
        public var reason: String
    }

    /// The level the plan is made for.
    public var level: PressureLevel
    public var usage: UInt64
    public var budget: UInt64
    public var lowTarget: UInt64
    public var candidates: [Candidate]
    /// Candidates not listed (beyond the limit asked for).
    public var moreCandidates: Int
    /// Young scenes held back at warning, and background scenes never reclaimed (protected).
    public var withheld: Int
    public var protected: Int
    /// The plan: its steps, and the usage it would leave.
    public var plan: ReclaimPlan
    public var usageAfter: UInt64
}

extension ReclaimPolicy {
    /// The ranking and the plan at `level` (at least warning), without acting.
    public func preview(engine: LifecycleEngine, level: PressureLevel, usage: UInt64, now: Timestamp,
                        limit: Int = 20) -> ReclaimPreview {
        let planned = max(level, .warning)
        let pool = victimPool(engine: engine, level: planned, now: now, nextUse: nil)
        let meanCost = pool.candidates.isEmpty ? Double(configuration.defaultRestoreCostMs)
            : pool.candidates.filter { !$0.isProcess }.map(\.cost).reduce(0, +) / Double(max(1, pool.candidates.filter { !$0.isProcess }.count))
        var ranking = pool
        var candidates: [ReclaimPreview.Candidate] = []
        var total = 0
        while let c = ranking.popBest() {
            total += 1
            guard candidates.count < limit else { continue }
            let app = c.isProcess ? pool.processes[Int(c.id)] : engine.sessions[SessionID(c.id)]?.app
            guard let app else { continue }
            candidates.append(ReclaimPreview.Candidate(
                rank: candidates.count + 1, session: c.isProcess ? nil : SessionID(c.id), app: app, tier: c.tier,
                score: c.score, uses: c.isProcess ? 0 : c.uses, restoreCostMs: c.isProcess ? 0 : c.cost,
                meanRestoreCostMs: meanCost, bytes: c.bytes, lastActiveAt: c.lastActive,
                backgroundFor: now - c.backgroundSince, reason: c.reason))
        }
        var protectedCount = 0
        for s in engine.sessions.values where s.condition == .live && s.sceneState == .background && s.isProtected {
            protectedCount += 1
        }
        // The plan, on a copy: an episode begun or a batch recorded there is forgotten.
        var copy = self
        let plan = copy.decide(engine: engine, level: planned, usage: usage, now: now)
        let after = plan.steps.last.map { $0.note.usageAfter } ?? usage
        return ReclaimPreview(level: planned, usage: usage, budget: configuration.budget,
                              lowTarget: configuration.lowTarget, candidates: candidates,
                              moreCandidates: total - candidates.count, withheld: pool.withheld,
                              protected: protectedCount, plan: plan, usageAfter: after)
    }
}
