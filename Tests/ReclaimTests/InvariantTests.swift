import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

/// A random but valid trace: scenes sharing apps or not, several foreground windows, inactive
/// scenes, protection flags toggled, sizes changing, budgets jumping (absolute, scaled,
/// unlimited), explicit pressure, closes and reopens, suspends, app footprints, ack profiles.
func chaosTrace(seed: UInt64) -> Trace {
    var rng = SeededRandom(seed: seed)
    let sceneCount = rng.between(3, 14)
    let appCount = max(2, sceneCount / 2)
    var events: [TraceEvent] = []
    var t: Int64 = 0
    var open: [String] = []
    var closed = (0..<sceneCount).map { "c\($0)" }
    var protected: Set<String> = []
    func add(_ kind: TraceEvent.Kind) { events.append(TraceEvent(time: t, kind)) }
    add(.budget(.bytes(UInt64(rng.between(300, 2_500)) * MB)))
    for _ in 0..<rng.between(60, 220) {
        if !rng.chance(0.2) { t += Int64(rng.between(0, 25_000)) }
        let roll = rng.unit()
        let target = open.isEmpty ? nil : open[rng.below(open.count)]
        switch roll {
        case ..<0.18 where !closed.isEmpty:
            let name = closed.remove(at: rng.below(closed.count))
            let shared = rng.chance(0.4) ? "app\(rng.below(appCount))" : nil
            let flags = rng.chance(0.1) ? ["protected"] : []
            if !flags.isEmpty { protected.insert(name) } else { protected.remove(name) }
            add(.open(TraceScene(name: name, app: shared, bytes: UInt64(rng.between(20, 600)) * MB,
                                 restoreMs: UInt32(rng.between(100, 3_000)), flags: flags)))
            open.append(name)
            if rng.chance(0.6) { add(.activate(name)) }
        case ..<0.45 where target != nil:
            if rng.chance(0.7), let other = open.randomElement(using: &rng), other != target { add(.background(other)) }
            add(.activate(target!))
        case ..<0.52 where target != nil: add(.deactivate(target!))
        case ..<0.66 where target != nil: add(.background(target!))
        case ..<0.70 where target != nil: add(.suspend(target!))
        case ..<0.74 where target != nil:
            add(.close(target!))
            open.removeAll { $0 == target! }
            closed.append(target!)
        case ..<0.82 where target != nil: add(.mem(scene: target!, bytes: UInt64(rng.between(10, 700)) * MB))
        case ..<0.85 where target != nil:
            let on = !protected.contains(target!)
            if on { protected.insert(target!) } else { protected.remove(target!) }
            add(.protect(scene: target!, on: on))
        case ..<0.91:
            switch rng.below(5) {
            case 0, 1: add(.budget(.bytes(UInt64(rng.between(200, 2_500)) * MB)))
            case 2, 3: add(.budget(.scale(0.4 + 0.8 * rng.unit())))
            default: add(.budget(.unlimited))
            }
        case ..<0.94:
            let levels: [PressureLevel?] = [nil, .normal, .warning, .critical, nil]
            add(.pressure(levels[rng.below(levels.count)]))
        case ..<0.97: add(.appMem(app: "app\(rng.below(appCount))", bytes: UInt64(rng.between(0, 200)) * MB))
        case ..<1.0 where target != nil:
            add(.ackProfile(AckProfile(scene: target!, latencyMs: rng.chance(0.3) ? nil : Int64(rng.between(0, 9_000)),
                                       defers: rng.chance(0.3))))
        default: break
        }
    }
    return Trace(events: events)
}

extension SeededRandom: RandomNumberGenerator {}

@Suite struct InvariantTests {
    struct Violation: CustomStringConvertible {
        var seed: UInt64
        var time: Timestamp
        var what: String
        var description: String { "seed \(seed) at \(time.microseconds / 1000) ms: \(what)" }
    }

    /// What every plan must respect, checked against the state the policy saw.
    static func check(_ r: DecisionRecord, settings: ReplaySettings, seed: UInt64, into out: inout [Violation]) {
        let engine = r.engineBefore
        let c = settings.reclaim
        func fail(_ what: String) { out.append(Violation(seed: seed, time: r.time, what: what)) }
        var victims = 0
        for step in r.plan.steps {
            switch step.action {
            case .disconnect(let id):
                victims += 1
                guard let s = engine.sessions[id] else { fail("disconnect of unknown \(id)"); continue }
                if s.condition != .live || s.sceneState != .background { fail("disconnect of \(id) in \(s.sceneState)") }
                if s.isProtected { fail("disconnect of protected \(id)") }
                if r.level < .critical && r.time - s.backgroundSince < c.aging { fail("disconnect of young \(id) at warning") }
            case .terminate(let a):
                guard let record = engine.apps[a] else { fail("termination of unknown \(a)"); continue }
                if record.hasForegroundScene { fail("termination of \(a) with a foreground scene") }
                if record.process != .suspended { fail("termination of \(a), \(record.process)") }
                if r.level < .critical { fail("termination at \(r.level)") }
                let live = record.sessions.compactMap { engine.sessions[$0] }.filter { $0.condition == .live }
                if live.contains(where: \.isProtected) { fail("termination of \(a) with a protected scene") }
                victims += max(1, live.count)
            case .discard(let id):
                if c.maxSessions == 0 && c.archivedMaxAge == .zero { fail("discard \(id) with no cap configured") }
                if engine.sessions[id]?.condition != .archived { fail("discard of a session not archived: \(id)") }
            case .memoryWarning(let apps):
                if apps.contains(where: { engine.apps[$0]?.process != .running }) { fail("warning to an app not running") }
            case .suspend(let a):
                guard let record = engine.apps[a] else { fail("suspension of unknown \(a)"); continue }
                if record.process != .running || record.hasForegroundScene || !record.tasks.isEmpty {
                    fail("suspension of \(a) that is not idle in the background")
                }
            }
        }
        // Relief: when enough is reclaimable at this level (conservatively: aged beyond every
        // multiplier at warning), one batch reaches the low watermark, unless the batch was
        // cut by the victim limit, in which case the next batch is one settle time away.
        guard r.level > .normal, !r.external, r.usageBefore > r.lowTarget else { return }
        if let last = r.policyBefore.lastBatchAt, r.time < last + c.settle { return }
        // Scenes with a reclaim notice out are as good as gone, and deferred ones are not to be
        // taken: the grace (§3.5) holds disconnects back until the answer or the deadline.
        let going = r.graceBefore.pendingBytes(engine)
        guard r.usageBefore > r.lowTarget + going else { return }
        let need = r.usageBefore - going - r.lowTarget
        var reclaimable: UInt64 = 0
        for s in engine.sessions.values where s.condition == .live && s.sceneState == .background && !s.isProtected
            && !r.graceBefore.isExcluded(s.id) {
            if r.level == .critical || r.time - s.backgroundSince >= c.aging * 16 { reclaimable += s.footprint }
        }
        guard reclaimable >= need else { return }
        if victims >= c.maxVictimsPerBatch {
            if r.plan.nextDecision != r.time + c.settle { fail("rate-limited batch without a decision one settle time later") }
        } else if r.usageAfter - min(r.usageAfter, r.pendingBytesAfter) > r.lowTarget {
            fail("\(reclaimable) reclaimable for a need of \(need), yet usage \(r.usageAfter) > low target \(r.lowTarget)")
        }
    }

    static func settings(seed: UInt64) -> ReplaySettings {
        var rng = SeededRandom(seed: seed &* 31 &+ 7)
        var s = ReplaySettings(order: Comparison.allPolicies[Int(seed % 6)])
        s.reclaim.maxVictimsPerBatch = [1, 2, 3, 32][rng.below(4)]
        s.reclaim.settle = .milliseconds(Int64([250, 1_000, 2_000][rng.below(3)]))
        s.reclaim.aging = .seconds(Int64([2, 10, 30][rng.below(3)]))
        s.reclaim.suspendEarly = rng.chance(0.8)
        s.reclaim.terminateSuspendedAtCritical = rng.chance(0.8)
        if rng.chance(0.2) { s.reclaim.maxSessions = rng.between(2, 8) }
        if rng.chance(0.2) { s.reclaim.archivedMaxAge = .seconds(Int64(rng.between(30, 600))) }
        s.budget = rng.chance(0.3) ? UInt64(rng.between(200, 2_000)) * MB : nil
        return s
    }

    @Test func invariantsHoldOnRandomTraces() {
        var violations: [Violation] = []
        var decisions = 0, victims = 0, pressured = 0
        for seed in UInt64(1)...240 {
            let trace = chaosTrace(seed: seed)
            let settings = Self.settings(seed: seed)
            let result = Replayer.run(trace, settings: settings, observer: { record in
                decisions += 1
                if record.level > .normal { pressured += 1 }
                Self.check(record, settings: settings, seed: seed, into: &violations)
            })
            let m = result.metrics
            victims += m.victims
            if m.foregroundViolations != 0 { violations.append(Violation(seed: seed, time: .zero, what: "foreground violations")) }
            if m.pressureDiscards != 0 { violations.append(Violation(seed: seed, time: .zero, what: "pressure discards")) }
            if m.refusedCommands != 0 {
                violations.append(Violation(seed: seed, time: .zero, what: "refused: \(result.notes.joined(separator: "; "))"))
            }
            if m.protectedVictims != 0 { violations.append(Violation(seed: seed, time: .zero, what: "protected victims")) }
        }
        let clean = violations.isEmpty
        #expect(clean, "\(violations.count) violations, first: \(violations.prefix(5).map(\.description).joined(separator: "; "))")
        // The traces must exercise the policy, or the test proves nothing.
        #expect(decisions > 10_000 && pressured > 2_000 && victims > 1_000,
                "decisions \(decisions), under pressure \(pressured), victims \(victims)")
    }

    /// The generated scenarios too, every policy, at the three budgets.
    @Test(arguments: Scenario.allCases)
    func invariantsHoldOnTheScenarios(_ scenario: Scenario) {
        let trace = TraceGenerator(scenario: scenario, seed: 11, size: .fixture).generate()
        let ws = Replayer.workingSet(of: trace)
        for percent in [30.0, 50, 70] {
            for order in Comparison.allPolicies {
                let settings = ReplaySettings(order: order, budget: UInt64(Double(ws) * percent / 100))
                var violations: [Violation] = []
                let m = Replayer.run(trace, settings: settings, observer: { record in
                    Self.check(record, settings: settings, seed: 11, into: &violations)
                }).metrics
                let clean = violations.isEmpty
                #expect(clean, "\(order) at \(percent)%: \(violations.prefix(5))")
                #expect(m.foregroundViolations == 0 && m.pressureDiscards == 0 && m.refusedCommands == 0)
            }
        }
    }

    /// Time to relief with a rate limit: 10 victims needed, 3 per batch, 1 s settle: relief
    /// three settle times after onset, i.e. (batches needed − 1) × settle.
    @Test func reliefTakesOneSettleTimePerExtraBatch() {
        var b = TraceBuilder()
        b.add(.budget(.bytes(3_000 * MB)))
        for i in 0..<20 { b.open("s\(i)", 100 * MB) }
        b.open("fg", 100 * MB)
        b.add(.activate("fg"))
        _ = b.at(60_000)
        b.add(.budget(.bytes(1_500 * MB)))  // 2.1 GB in use; low watermark 1.2 GB: 9 victims
        var settings = ReplaySettings()
        settings.reclaim.maxVictimsPerBatch = 3
        let m = Replayer.run(b.trace, settings: settings).metrics
        #expect(m.episodes == 1)
        #expect(m.victims == 9)
        #expect(m.timesToRelief == [2_000], "3 batches: at onset, +1 s, +2 s")
    }
}
