import Testing
@testable import SceneCore
@testable import SceneReplay

/// The value score of `ours`: usage sessions, recent activations, restore cost, bytes.
@Suite struct ScoringTests {
    /// Session numbers far apart (the store raises its counters past a damaged log's losses or
    /// a damaged row's id) cost no more memory than near ones, and are counted the same.
    @Test func usageOfFarSessionNumbersIsKeptWithoutFillingTheGap() {
        var table = UsageTable()
        let near = SessionID(3), far = SessionID(1 << 40), farther = SessionID((1 << 40) + 5)
        let t = Timestamp(microseconds: 1_000_000_000)
        let gap = TimeSpan.seconds(60)
        table.noteActivation(near, now: t, gap: gap)
        table.noteActivation(far, now: t, gap: gap)
        table.noteActivation(far, now: t + .seconds(120), gap: gap)
        table.noteActivation(farther, now: t, gap: gap)
        #expect(table.sessions(near) == 1 && table.sessions(far) == 2 && table.sessions(farther) == 1)
        #expect(table.sessions(SessionID((1 << 40) + 1)) == nil)
        table.remove(far)
        #expect(table.sessions(far) == nil && table.sessions(farther) == 1)
        // Once the array reaches a number kept aside, its count moves in with it.
        table.noteActivation(SessionID(100), now: t, gap: gap)
        let edge = SessionID(101 + UInt64(UsageTable.maxGrowth))
        table.noteActivation(edge, now: t, gap: gap)                            // aside
        table.noteActivation(SessionID(edge.rawValue - 10), now: t, gap: gap)   // in the array
        table.noteActivation(SessionID(edge.rawValue + 1), now: t, gap: gap)    // the array reaches edge
        table.noteActivation(edge, now: t + .seconds(120), gap: gap)
        #expect(table.sessions(edge) == 2 && table.sessions(SessionID(edge.rawValue - 10)) == 1)
    }

    @Test func activationsCloseTogetherAreOneUsageSession() throws {
        var w = World()
        try w.open("fg", 10 * MB, active: true)
        let busy = try w.open("busy", 100 * MB)
        let regular = try w.open("regular", 100 * MB)
        for _ in 0..<10 {                  // ten switches within a minute: one usage session
            try w.use(busy)
            w.advance(5)
        }
        for _ in 0..<3 {                   // three visits six minutes apart: three sessions
            try w.use(regular)
            w.advance(360)
        }
        #expect(w.policy.usageSessions(busy, activations: 10) == 1)
        #expect(w.policy.usageSessions(regular, activations: 3) == 3)
        // Hours later the burst has decayed: the regular scene is worth more and goes last.
        w.advance(6 * 3_600)
        #expect(w.policy.valueScore(w.engine.sessions[regular]!, now: w.now)
                > w.policy.valueScore(w.engine.sessions[busy]!, now: w.now))
        // While the burst is on, the busy scene is worth more.
        var v = World()
        try v.open("fg", 10 * MB, active: true)
        let b = try v.open("busy", 100 * MB)
        let r = try v.open("regular", 100 * MB)
        for _ in 0..<3 {
            try v.use(r)
            v.advance(360)
        }
        for _ in 0..<10 {
            try v.use(b)
            v.advance(5)
        }
        #expect(v.policy.valueScore(v.engine.sessions[b]!, now: v.now) > v.policy.valueScore(v.engine.sessions[r]!, now: v.now))
    }

    @Test func aSessionUnseenByThePolicyFallsBackToItsActivations() throws {
        var w = World()
        let s = try w.open("a", 100 * MB)
        #expect(w.policy.usageSessions(s, activations: 9) == 3, "three activations per usage session")
        try w.use(s)
        #expect(w.policy.usageSessions(s, activations: 9) == 1, "seen: counted, not estimated")
        w.policy.noteDiscarded(s)
        #expect(w.policy.usageSessions(s, activations: 9) == 3)
    }

    @Test func costAndSizeWeighAsDocumented() {
        let p = ReclaimPolicy()
        // Twice the bytes: half the value per byte.
        #expect(p.valueScore(uses: 2, cost: 500, bytes: 200, meanCost: 500)
                == p.valueScore(uses: 2, cost: 500, bytes: 100, meanCost: 500) / 2)
        // A restore at the mean cost weighs twice one that costs nothing.
        #expect(p.valueScore(uses: 2, cost: 500, bytes: 100, meanCost: 500)
                == 2 * p.valueScore(uses: 2, cost: 0, bytes: 100, meanCost: 500))
        // The prior: one usage session.
        #expect(p.valueScore(uses: 0, cost: 0, bytes: 1, meanCost: 1) == 1)
        // The cost is relative to the mean: the unit does not matter.
        #expect(p.valueScore(uses: 2, cost: 900, bytes: 100, meanCost: 600)
                == p.valueScore(uses: 2, cost: 0.9, bytes: 100, meanCost: 0.6))
    }

    /// The candidates' mean restore cost normalises the cost term within a decision.
    @Test func theMeanCostIsTheCandidates() throws {
        var w = World()
        try w.open("fg", 10 * MB, active: true)
        let cheap = try w.open("cheap", 100 * MB, cost: 100)
        let dear = try w.open("dear", 100 * MB, cost: 900)
        w.advance(60)
        let ranked = w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now, nextUse: nil).victims
        #expect(ranked.map(\.id) == [cheap.rawValue, dear.rawValue])
        // Mean 500: (0 + 1) × (1 + 100/500) and (0 + 1) × (1 + 900/500), per 100 MB.
        #expect(abs(ranked[0].score - 1.2 / 100e6) < 1e-18 && abs(ranked[1].score - 2.8 / 100e6) < 1e-18)
    }
}
