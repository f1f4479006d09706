// MARK: - Caps

extension ReclaimPolicy {
    /// MaxSessions and the archived maximum age discard archived sessions, oldest first.
    /// These are decisions about storage, not memory: pressure never discards (R12).
    mutating func appendCapDiscards(engine: LifecycleEngine, now: Timestamp, level: PressureLevel, usage: UInt64,
                                    into plan: inout ReclaimPlan) {
        let maxSessions = configuration.maxSessions
        let maxAge = configuration.archivedMaxAge
        let overCount = maxSessions > 0 ? engine.sessions.count - maxSessions : 0
        guard overCount > 0 || maxAge > .zero else { return }
        // With only the age cap, just the sessions over age need sorting.
        var archived = engine.sessions.values.filter {
            $0.condition == .archived && (overCount > 0 || now - $0.lastActiveAt > maxAge)
        }
        archived.sort { ($0.lastActiveAt, $0.id) < ($1.lastActiveAt, $1.id) }
        var chosen = 0
        for s in archived {
            if chosen >= configuration.maxDiscardsPerDecision { break }
            let tooOld = maxAge > .zero && now - s.lastActiveAt > maxAge
            let tooMany = chosen < overCount
            guard tooOld || tooMany else { break }
            let reason = tooMany ? "MaxSessions=\(maxSessions) exceeded" : "archived longer than ArchivedMaxAge"
            plan.steps.append(ReclaimStep(action: .discard(s.id),
                                          note: ReclaimNote(level: level.name, usageBefore: usage, usageAfter: usage,
                                                            budget: configuration.budget, score: nil, reason: reason)))
            chosen += 1
        }
    }
}
