import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

/// The replayer's accounting, on traces small enough to work out by hand.
@Suite struct ReplayerTests {
    /// a and b are open; b is disconnected under pressure while a is in front, then wanted back.
    func restoreTrace(comeback: Int64) -> Trace {
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        b.open("a", 400 * MB, cost: 700)
        b.open("b", 300 * MB, cost: 1_300)
        b.add(.activate("b"))
        _ = b.at(30_000)
        b.switchTo("a", from: "b")
        _ = b.at(60_000)
        b.add(.mem(scene: "a", bytes: 600 * MB))   // 900 MB: warning; b (30 s in the background) goes
        _ = b.at(60_000 + comeback)
        b.add(.mem(scene: "a", bytes: 400 * MB))   // room for b again
        b.switchTo("b", from: "a")
        return b.trace
    }

    @Test func anActivationOfAReleasedSceneIsARestore() {
        let m = Replayer.run(restoreTrace(comeback: 90_000), settings: ReplaySettings()).metrics
        #expect(m.victims == 1)
        #expect(m.activations == 3)
        #expect(m.reactivations == 1)
        #expect(m.restores == 1)
        #expect(m.weightedRestoreCost == 1_300)
        #expect(m.regrets == 0, "back after 90 s: not within the 60 s window")
        #expect(m.restoreRatio == 1)
    }

    @Test func aQuickComebackIsARegret() {
        let m = Replayer.run(restoreTrace(comeback: 20_000), settings: ReplaySettings()).metrics
        #expect(m.restores == 1)
        #expect(m.regrets == 1)
        #expect(m.regretRate == 1)
    }

    @Test func overshootIsTheIntegralOverTheBudget() {
        // A foreground scene 100 MB over the budget for exactly 10 s; nothing to reclaim.
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        b.open("fg", 500 * MB)
        b.add(.activate("fg"))
        _ = b.at(5_000)
        b.add(.mem(scene: "fg", bytes: 1_100 * MB))
        _ = b.at(15_000)
        b.add(.mem(scene: "fg", bytes: 500 * MB))
        let m = Replayer.run(b.trace, settings: ReplaySettings()).metrics
        #expect(m.overshoot == Double(100 * MB) * 10)
        #expect(m.peakBytes == 1_100 * MB)
        #expect(m.peakOverBudget == 100 * MB)
        #expect(m.unrelievablePlans > 0)
        #expect(m.episodes == 1)
        #expect(m.timesToRelief == [10_000], "relief when the scene shrank")
    }

    @Test func theWorkingSetIsThePeakWithNoBudget() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(100 * MB)))
        b.open("a", 300 * MB)
        b.open("b", 200 * MB)
        _ = b.at(1_000)
        b.add(.close("a"))
        b.open("c", 250 * MB)
        #expect(Replayer.workingSet(of: b.trace) == 500 * MB)
    }

    @Test func aBudgetOverrideRescalesTheTracesBudgets() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        b.open("fg", 10 * MB)
        _ = b.at(1_000)
        b.add(.budget(.bytes(700 * MB)))
        _ = b.at(2_000)
        b.add(.budget(.scale(0.5)))
        _ = b.at(3_000)
        b.add(.budget(.unlimited))
        _ = b.at(4_000)
        b.add(.mem(scene: "fg", bytes: 20 * MB))
        let r = Replayer.run(b.trace, settings: ReplaySettings(budget: 2_000 * MB, recordTimeline: true))
        var budgets: [UInt64?] = []
        for p in r.points where budgets.isEmpty || budgets.last! != p.budget { budgets.append(p.budget) }
        #expect(budgets == [2_000 * MB, 1_400 * MB, 700 * MB, nil])
        #expect(r.metrics.budget == 2_000 * MB)
    }

    @Test func explicitPressureOverridesTheGaugeUntilTheNextLine() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(10_000 * MB)))
        b.open("fg", 100 * MB)
        b.add(.activate("fg"))
        for i in 0..<5 { b.open("bg\(i)", 100 * MB) }
        _ = b.at(60_000)
        b.add(.pressure(.critical))
        _ = b.at(70_000)
        b.add(.pressure(nil))
        let m = Replayer.run(b.trace, settings: ReplaySettings()).metrics
        #expect(m.episodes == 1)
        #expect(m.victims > 0, "external pressure frees a tenth of the usage per batch")
        #expect(m.unrelievedEpisodes == 0)
    }

    @Test func ackProfilesAreRecordedForVictims() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        b.add(.ackProfile(AckProfile(scene: "slow", latencyMs: 5_000, defers: false)))
        b.add(.ackProfile(AckProfile(scene: "silent", latencyMs: nil, defers: false)))
        b.add(.ackProfile(AckProfile(scene: "shy", latencyMs: 100, defers: true)))
        b.open("slow", 300 * MB)
        b.open("silent", 300 * MB)
        b.open("shy", 300 * MB)
        b.open("fg", 50 * MB)
        b.add(.activate("fg"))
        _ = b.at(60_000)
        b.add(.budget(.bytes(100 * MB)))
        let m = Replayer.run(b.trace, settings: ReplaySettings()).metrics
        #expect(m.victims == 3)
        #expect(m.slowAckVictims == 1 && m.silentVictims == 1 && m.deferringVictims == 1)
    }

    @Test func decisionsAreTimedWithTheInjectedClock() {
        final class Ticker: @unchecked Sendable { var t: UInt64 = 0 }
        let ticker = Ticker()
        let trace = TraceGenerator(scenario: .mix, seed: 3, size: .fixture).generate()
        let m = Replayer.run(trace, settings: ReplaySettings(), clock: { ticker.t += 2_000; return ticker.t }).metrics
        #expect(m.decisionMicros.count == m.decisions)
        #expect(m.decisionMicrosP50 == 2 && m.decisionMicrosP99 == 2)
    }

    @Test func replaysAreDeterministic() {
        let trace = TraceGenerator(scenario: .spikes, seed: 5, size: .fixture).generate()
        for order in VictimOrder.allCases {
            let a = Replayer.run(trace, settings: ReplaySettings(order: order, recordTimeline: true))
            let b = Replayer.run(trace, settings: ReplaySettings(order: order, recordTimeline: true))
            #expect(a.metrics == b.metrics)
            #expect(a.points == b.points && a.marks == b.marks)
        }
    }

    // MARK: What the replayer counts when a plan goes wrong

    /// A plan that aims at a foreground scene is refused by the engine and counted.
    @Test func aReclaimCommandOnAForegroundSceneIsAViolation() {
        var b = TraceBuilder()
        b.open("fg", 100 * MB)
        b.add(.activate("fg"))
        var r = Replayer(trace: b.trace, settings: ReplaySettings())
        r.run()
        let id = r.sessionOf["fg"]!
        let note = ReclaimNote(level: "critical", usageBefore: 0, usageAfter: 0, budget: 0, score: nil, reason: "test")
        var plan = ReclaimPlan()
        plan.steps = [ReclaimStep(action: .disconnect(id), note: note),
                      ReclaimStep(action: .terminate(r.engine.sessions[id]!.app), note: note)]
        r.execute(plan.steps.map { ReclaimController.Step(command: ReclaimController.command(for: $0), step: $0) }, at: at(100), usage: r.engine.residentBytes)
        #expect(r.metrics.foregroundViolations == 2)
        #expect(r.metrics.refusedCommands == 2)
        #expect(r.engine.sessions[id]?.sceneState == .foregroundActive)
    }

    /// A discard with no cap configured is a discard caused by pressure.
    @Test func aDiscardWithoutACapIsAPressureDiscard() throws {
        var b = TraceBuilder()
        b.open("a", 100 * MB)
        b.open("b", 100 * MB)
        b.add(.activate("b"))
        var r = Replayer(trace: b.trace, settings: ReplaySettings())
        r.run()
        let id = r.sessionOf["a"]!
        var effects: [Effect] = []
        try r.engine.handle(.disconnect(id), now: at(50), effects: &effects)
        let note = ReclaimNote(level: "warning", usageBefore: 0, usageAfter: 0, budget: 0, score: nil, reason: "test")
        var plan = ReclaimPlan()
        plan.steps = [ReclaimStep(action: .discard(id), note: note)]
        r.execute(plan.steps.map { ReclaimController.Step(command: ReclaimController.command(for: $0), step: $0) }, at: at(100), usage: r.engine.residentBytes)
        #expect(r.metrics.pressureDiscards == 1)
    }

    @Test func aCapDiscardedSceneComesBackColdAsARestore() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(1_000 * MB)))
        b.open("old", 500 * MB, cost: 900)
        b.open("fg", 200 * MB)
        b.add(.activate("fg"))
        _ = b.at(60_000)
        b.add(.mem(scene: "fg", bytes: 450 * MB))  // 950 MB: warning; "old" goes
        _ = b.at(200_000)
        b.switchTo("old", from: "fg")
        var settings = ReplaySettings()
        settings.reclaim.archivedMaxAge = .seconds(60)
        let m = Replayer.run(b.trace, settings: settings).metrics
        #expect(m.capDiscards >= 1)
        #expect(m.restores == 1 && m.weightedRestoreCost == 900)
        #expect(m.pressureDiscards == 0)
    }
}
