import SceneCore

/// Durations counted into fixed buckets: an array of counters, so recording costs a few
/// comparisons and an increment. Counts are per bucket (not cumulative); `overflow` is above
/// the last bound.
struct LatencyHistogram: Sendable, Equatable {
    /// Upper bounds, microseconds, ascending.
    let bounds: [UInt64]
    private(set) var counts: [UInt64]
    private(set) var overflow: UInt64 = 0
    private(set) var sum: UInt64 = 0
    private(set) var count: UInt64 = 0

    init(bounds: [UInt64]) {
        precondition(bounds == bounds.sorted() && Set(bounds).count == bounds.count, "bounds must ascend")
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count)
    }

    /// Loop passes: from tens of microseconds (an idle pass) to a second (a stall).
    static func passes() -> LatencyHistogram {
        LatencyHistogram(bounds: [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000])
    }

    mutating func record(microseconds: UInt64) {
        count &+= 1
        sum &+= microseconds
        // Bounds are few: a linear scan beats a binary search and most passes stop early.
        for (i, bound) in bounds.enumerated() where microseconds <= bound {
            counts[i] &+= 1
            return
        }
        overflow &+= 1
    }
}

/// The reclaim actions of one kind carried out since start, and what they freed by the
/// daemon's accounting (the usage before the step minus the usage after it).
struct ReclaimTally: Sendable, Equatable {
    static let kinds = ["memoryWarning", "suspend", "disconnect", "terminate", "discard"]
    private(set) var counts = Array(repeating: UInt64(0), count: kinds.count)
    private(set) var bytesFreed = Array(repeating: UInt64(0), count: kinds.count)

    mutating func record(_ step: ReclaimStep) { record(step.action, step.note) }

    mutating func record(_ action: ReclaimAction, _ note: ReclaimNote) {
        let index: Int
        switch action {
        case .memoryWarning: index = 0
        case .suspend: index = 1
        case .disconnect: index = 2
        case .terminate: index = 3
        case .discard: index = 4
        }
        counts[index] &+= 1
        bytesFreed[index] &+= note.usageBefore - min(note.usageBefore, note.usageAfter)
    }
}

/// Counters since start that no other part keeps: published events by name, terminations by
/// reason, reclaim actions by kind, and loop pass durations. Fed by the daemon's loop only.
struct DaemonMetrics: Sendable {
    private(set) var events = Array(repeating: UInt64(0), count: EventName.allCases.count)
    private(set) var terminations = Array(repeating: UInt64(0), count: TerminationReason.allCases.count)
    private(set) var reclaims = ReclaimTally()
    var passLatency = LatencyHistogram.passes()

    /// Published events (each once, after its batch committed).
    mutating func observe(_ published: [LifecycleEvent]) {
        for e in published {
            events[Int(e.name.rawValue)] &+= 1
            if case .terminated(let reason, _) = e.detail { terminations[Int(reason.rawValue)] &+= 1 }
        }
    }

    mutating func noteReclaim(_ step: ReclaimStep) { reclaims.record(step) }

    /// Sessions by condition and scene state (index condition × states + state), from the
    /// counts the engine keeps per app: an archived session has no scene (unattached), a live
    /// one is counted in its app's state counts. Linear in apps, never in sessions: a walk of
    /// a million sessions took 64–79 ms, and anyone may call GetMetrics after each Connect.
    func sessionCounts(_ engine: LifecycleEngine) -> [Int] {
        let states = SceneActivationState.allCases.count
        var counts = Array(repeating: 0, count: SessionCondition.allCases.count * states)
        func add(_ condition: SessionCondition, _ state: SceneActivationState, _ n: Int) {
            counts[Int(condition.rawValue) * states + Int(state.rawValue)] += n
        }
        var connected = 0
        for app in engine.apps.values {
            add(.live, .foregroundActive, Int(app.activeScenes))
            add(.live, .foregroundInactive, Int(app.inactiveScenes))
            add(.live, .background, Int(app.backgroundScenes))
            connected += Int(app.connectedScenes)
        }
        add(.archived, .unattached, engine.sessions.count - connected)
        return counts
    }
}
