import Testing
@testable import SceneCore
@testable import SceneReplay

/// Decisions from the engine's candidate index must be the decisions of the scan they replace:
/// the same steps, notes and scores, the same next decision, on random states (ties, protected
/// and foreground scenes, suspended apps with memory of their own, regrets, exclusions).
@Suite struct IndexedSelectionTests {
    /// A random world: apps, scenes in every state, uses spread over time, some apps
    /// suspended or terminated.
    static func world(seed: UInt64, order: VictimOrder) -> (World, SeededRandom) {
        var rng = SeededRandom(seed: seed)
        let maxVictims = [1, 2, 3, 8, 32][rng.below(5)]
        let terminate = rng.chance(0.80)
        let aging = Int64([0, 5, 30, 120][rng.below(4)])
        var w = World(budget: UInt64(200 + rng.below(2_000)) * MB, order: order) { c in
            c.maxVictimsPerBatch = maxVictims
            c.terminateSuspendedAtCritical = terminate
            c.aging = .seconds(aging)
            c.settle = .zero
        }
        let appCount = 1 + rng.below(12)
        // Few distinct sizes and costs, so that scores tie and the tie-breaks decide.
        let sizes: [UInt64] = [1, 10 * MB, 10 * MB, 40 * MB, 150 * MB]
        var ids: [SessionID] = []
        for _ in 0..<rng.below(90) {
            let name = "a\(rng.below(appCount))"
            let id = try? w.open(name, sizes[rng.below(sizes.count)] + (rng.chance(0.50) ? 0 : UInt64(rng.below(1_000))),
                                 cost: [0, 100, 500, 3_000][rng.below(4)], active: rng.chance(0.20),
                                 protected: rng.chance(0.10))
            if let id { ids.append(id) }
            if rng.chance(0.30) { w.advanceMs(Int64(rng.below(90_000))) }
        }
        for i in 0..<appCount where rng.chance(0.40) {
            _ = try? w.run(.setAppFootprint(app("a\(i)"), UInt64(rng.below(200)) * MB))
        }
        for _ in 0..<rng.below(150) {
            guard !ids.isEmpty else { break }
            let id = ids[rng.below(ids.count)]
            w.advanceMs(Int64(rng.below(600_000)))
            switch rng.below(10) {
            case 0..<5: try? w.use(id)
            case 5: _ = try? w.run(.activate(id))
            case 6: _ = try? w.run(.setProtected(id, rng.chance(0.30)))
            case 7: _ = try? w.run(.setFootprint(id, sizes[rng.below(sizes.count)]))
            case 8: _ = try? w.run(.disconnect(id, cause: .request))
            default: if rng.chance(0.20) { _ = try? w.run(.terminate(app("a\(rng.below(appCount))"), cause: .request)) }
            }
        }
        // Let idle apps suspend, some scenes age.
        w.advance(Int64(rng.below(200)))
        _ = try? w.run(.tick)
        return (w, rng)
    }

    static func compare(_ w: World, level: PressureLevel, usage: UInt64, rng: inout SeededRandom,
                        context: String) -> Bool {
        let salt = rng.next()
        let nextUse: ((SessionID) -> Timestamp?)? = w.policy.order == .opt ? { id in
            let h = (id.rawValue &* 0x9E37_79B9_7F4A_7C15) ^ salt
            return h % 5 == 0 ? nil : w.now + .seconds(Int64(h % 3_600))
        } : nil
        let excludedShare = [0, 0, 30, 70][rng.below(4)]
        let excluded: ((SessionID) -> Bool)? = excludedShare == 0 ? nil : { id in
            Int((id.rawValue &* 0xD6E8_FEB8_6659_FD93 ^ salt) % 100) < excludedShare
        }
        var indexed = w.policy
        indexed.victimSelection = .index
        var scanned = w.policy
        scanned.victimSelection = .scan
        let a = indexed.decide(engine: w.engine, level: level, usage: usage, now: w.now, nextUse: nextUse, excluded: excluded)
        let b = scanned.decide(engine: w.engine, level: level, usage: usage, now: w.now, nextUse: nextUse, excluded: excluded)
        #expect(a == b, "\(context): index \(a.steps.map(\.action)) vs scan \(b.steps.map(\.action))")
        return a == b
    }

    @Test(arguments: VictimOrder.allCases)
    func sameDecisionsAsTheScan(order: VictimOrder) throws {
        var compared = 0, withVictims = 0, previousUnknown = 0, withRegrets = 0
        for seed in UInt64(0)..<150 {
            var (w, rng) = Self.world(seed: seed &* 7 &+ UInt64(VictimOrder.allCases.firstIndex(of: order)!), order: order)
            for round in 0..<4 {
                let level: PressureLevel = rng.chance(0.50) ? .critical : .warning
                let usage = w.usage + UInt64(rng.below(3)) * UInt64(rng.below(400)) * MB
                let context = "order \(order) seed \(seed) round \(round) \(level.name)"
                guard Self.compare(w, level: level, usage: usage, rng: &rng, context: context) else { return }
                compared += 1
                if w.engine.candidates.previousUnknown { previousUnknown += 1 }
                if !w.policy.regrets.isEmpty && level == .warning { withRegrets += 1 }
                // Carry the world on through the plan, so that later rounds see regrets,
                // terminated apps and reclaimed scenes.
                let plan = w.decide(level, usage: usage)
                if plan.steps.contains(where: { if case .disconnect = $0.action { true } else { false } }) { withVictims += 1 }
                try? w.execute(plan)
                w.advance(Int64(rng.below(90)))
                for _ in 0..<rng.below(6) {
                    let open = Array(w.engine.sessions.keys).sorted()
                    if !open.isEmpty { try? w.use(open[rng.below(open.count)]) }
                }
            }
        }
        #expect(compared == 600)
        // The comparisons mean something only if many decisions chose victims.
        #expect(withVictims > 150, "only \(withVictims) decisions chose victims")
        // Both ways of finding the previous scene were compared: kept by the index, and by a pass.
        #expect(withRegrets > 10, "regrets in only \(withRegrets) decisions at warning")
        #expect(previousUnknown > 20 && previousUnknown < compared - 20, "previous unknown in \(previousUnknown) of \(compared)")
    }

    /// Many sessions and a batch limit far above the first pass's keep: the stream refills.
    @Test func largeBatchesRefillTheStream() {
        for seed in UInt64(0)..<6 {
            var (w, rng) = Self.world(seed: 900 + seed, order: .ours)
            w.policy.configuration.maxVictimsPerBatch = 400
            for _ in 0..<1_500 {
                _ = try? w.open("b\(rng.below(40))", UInt64(1 + rng.below(50)) * MB, cost: UInt32(rng.below(2_000)))
                if rng.chance(0.05) { w.advanceMs(1_000) }
            }
            w.advance(300)
            _ = try? w.run(.tick)
            for level in [PressureLevel.warning, .critical] {
                #expect(Self.compare(w, level: level, usage: w.usage * 3, rng: &rng, context: "seed \(seed) \(level.name)"))
            }
        }
    }
}
