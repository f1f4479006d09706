import Testing
@testable import SceneCore
@testable import SceneReplay

/// The pressure gauge's hysteresis and hold time, and the caps that discard.
@Suite struct HysteresisTests {
    /// Usage oscillating ±0.5 % around a watermark for a minute, sampled every 100 ms.
    func oscillate(around fraction: Double, gauge: inout PressureGauge) -> [PressureLevel] {
        let budget: UInt64 = 1_000_000_000
        var levels: [PressureLevel] = []
        for i in 0..<600 {
            let wobble = i % 2 == 0 ? -0.005 : 0.005
            let usage = UInt64(Double(budget) * (fraction + wobble))
            let level = gauge.update(usage: usage, budget: budget, now: Timestamp(microseconds: Int64(i) * 100_000))
            if levels.last != level { levels.append(level) }
        }
        return levels
    }

    @Test func hoveringAtTheHighWatermarkRisesOnceAndNeverDrops() {
        var gauge = PressureGauge()
        #expect(oscillate(around: 0.90, gauge: &gauge) == [.normal, .warning])
    }

    @Test func hoveringAtTheCriticalWatermarkRisesOnceAndNeverDrops() {
        var gauge = PressureGauge()
        #expect(oscillate(around: 0.97, gauge: &gauge) == [.warning, .critical])
    }

    @Test func hoveringAtTheLowWatermarkDropsOnlyAfterTheHold() {
        var gauge = PressureGauge(hold: .seconds(4))
        let budget: UInt64 = 1_000
        #expect(gauge.update(usage: 950, budget: budget, now: at(0)) == .warning)
        // Dipping to the low watermark and back every second never completes a 4 s hold.
        for i in 1...60 {
            let usage: UInt64 = i % 2 == 0 ? 800 : 805
            #expect(gauge.update(usage: usage, budget: budget, now: at(Int64(i))) == .warning)
        }
        #expect(gauge.update(usage: 800, budget: budget, now: at(61)) == .warning)
        #expect(gauge.nextDrop == at(64))
        #expect(gauge.update(usage: 800, budget: budget, now: atMs(63_999)) == .warning)
        #expect(gauge.update(usage: 800, budget: budget, now: at(64)) == .normal)
    }

    @Test func criticalFallsToWarningBelowHighThenToNormalAtLow() {
        var gauge = PressureGauge(hold: .seconds(4))
        #expect(gauge.update(usage: 980, budget: 1_000, now: at(0)) == .critical)
        #expect(gauge.update(usage: 899, budget: 1_000, now: at(1)) == .critical)
        #expect(gauge.update(usage: 899, budget: 1_000, now: at(5)) == .warning)
        #expect(gauge.update(usage: 800, budget: 1_000, now: at(6)) == .warning)
        #expect(gauge.update(usage: 800, budget: 1_000, now: at(10)) == .normal)
    }

    /// The same through the replayer: a foreground scene whose size wobbles around the high
    /// watermark for a minute with nothing to reclaim makes one episode, not sixty.
    @Test func theReplayerSeesOneEpisodeWhenUsageHovers() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        b.open("fg", 900 * MB)
        b.add(.activate("fg"))
        for i in 1...600 {
            _ = b.at(Int64(i) * 100)
            b.add(.mem(scene: "fg", bytes: i % 2 == 0 ? 905 * MB : 895 * MB))
        }
        let m = Replayer.run(b.trace, settings: ReplaySettings(order: .ours)).metrics
        #expect(m.episodes == 1)
        #expect(m.warnings == 1)
        #expect(m.victims == 0 && m.foregroundViolations == 0)
    }
}

@Suite struct CapTests {
    /// Five background sessions opened 10 s apart, never active: s1…s3 archived (s1 oldest),
    /// s4 and s5 live.
    func world(_ configure: (inout ReclaimConfiguration) -> Void) throws -> (World, [SessionID]) {
        var w = World(configure: configure)
        var ids: [SessionID] = []
        for i in 1...5 {
            ids.append(try w.open("a\(i)", 10 * MB))
            w.advance(10)
        }
        for id in ids.prefix(3) {
            try w.run(.disconnect(id))
            w.advance(10)
        }
        return (w, ids)
    }

    @Test func capsAreOffByDefault() throws {
        var (w, _) = try world { _ in }
        w.advance(1_000_000)
        #expect(w.decide(.normal).discards.isEmpty)
    }

    @Test func maxSessionsDiscardsTheOldestArchivedFirst() throws {
        var (w, ids) = try world { $0.maxSessions = 3 }
        let plan = w.decide(.normal)
        #expect(plan.discards == [ids[0], ids[1]])
        try w.execute(plan)
        let told = w.events.filter { $0.name == .didDiscardSceneSessions }
        #expect(told.map(\.session) == [ids[0], ids[1]])
        #expect(told.allSatisfy { $0.cause == .cap("MaxSessions=3 exceeded") })
        #expect(w.engine.sessions.count == 3)
        #expect(w.decide(.normal).discards.isEmpty)
    }

    @Test func maxSessionsNeverDiscardsLiveSessions() throws {
        var (w, ids) = try world { $0.maxSessions = 1 }
        let plan = w.decide(.critical)
        #expect(plan.discards == Array(ids.prefix(3)), "only the archived ones, though 4 over")
        try w.execute(plan)
        #expect(w.engine.sessions.count == 2)
        #expect(w.engine.sessions.values.allSatisfy { $0.condition == .live })
    }

    @Test func archivedMaxAgeDiscardsTheOnesTooOld() throws {
        var (w, ids) = try world { $0.archivedMaxAge = .seconds(60) }
        // Last active: s1 at 0 s, s2 at 10 s, s3 at 20 s; now 80 s.
        #expect(w.now == at(80))
        var plan = w.decide(.normal)
        #expect(plan.discards == [ids[0], ids[1]])
        try w.execute(plan)
        w.advance(1)
        plan = w.decide(.normal)
        #expect(plan.discards == [ids[2]])
        try w.execute(plan)
        #expect(w.engine.sessions.keys.sorted() == [ids[3], ids[4]])
    }

    @Test func aDiscardForAnAppNotRunningIsToldAtItsNextLaunch() throws {
        var (w, ids) = try world { $0.maxSessions = 4 }
        try w.run(.terminate(app("a1")))
        try w.execute(w.decide(.normal))
        #expect(w.engine.wasDiscarded(ids[0]))
        #expect(w.engine.apps[app("a1")]?.pendingDiscards == [ids[0]])
        let launch = try w.run(.launch(app("a1")))
        #expect(launch.contains { $0.name == .didDiscardSceneSessions && $0.session == ids[0] })
    }

    /// Through the replayer: cap discards are counted as such, never as pressure discards.
    @Test func theReplayerCountsCapDiscardsApart() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        for i in 1...8 { b.open("s\(i)", 200 * MB) }
        b.add(.activate("s1"))
        _ = b.at(60_000)
        b.add(.background("s1"))
        b.add(.activate("s2"))
        _ = b.at(120_000)
        b.add(.background("s2"))
        b.add(.activate("s3"))
        var settings = ReplaySettings()
        settings.reclaim.maxSessions = 6
        let m = Replayer.run(b.trace, settings: settings).metrics
        #expect(m.victims > 0)
        #expect(m.capDiscards > 0)
        #expect(m.pressureDiscards == 0 && m.refusedCommands == 0)
    }
}
