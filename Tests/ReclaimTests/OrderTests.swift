import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

/// Each victim order picks what its name says, and Belady's OPT is never beaten on restores.
@Suite struct BaselineTests {
    /// Four aged background scenes with the orders' criteria pulling different ways:
    /// - "old":    least recently active (used at 0 s), backgrounded late (deactivated at 0 s,
    ///             left inactive until 100 s), 100 MB;
    /// - "big":    900 MB, used at 20 s;
    /// - "early":  used last (at 30 s), so the previous scene;
    /// - "kept":   backgrounded first (at 10 s) but its app runs (another window is in the
    ///             foreground), used at 10 s; the other apps are suspended.
    func world(order: VictimOrder) throws -> (World, [String: SessionID]) {
        var w = World(order: order)
        var ids: [String: SessionID] = [:]
        ids["old"] = try w.open("old", 100 * MB, active: true)
        try w.run(.deactivate(ids["old"]!))
        w.advance(10)
        ids["kept"] = try w.open("kept", 200 * MB, active: true)
        try w.run(.background(ids["kept"]!))
        try w.open("kept", 10 * MB, active: true)  // a second window keeps the app running
        w.advance(10)
        ids["big"] = try w.open("big", 900 * MB, active: true)
        try w.run(.background(ids["big"]!))
        w.advance(10)
        ids["early"] = try w.open("early", 150 * MB, active: true)
        try w.run(.background(ids["early"]!))
        // "early" is the previous scene now; make another one the last to leave the foreground.
        let fg = try w.open("fg", 10 * MB, active: true)
        w.advance(70)
        try w.run(.background(ids["old"]!))
        w.advance(1)
        try w.run(.background(fg))
        try w.run(.activate(fg))
        w.advance(120)
        _ = try w.run(.tick)
        #expect(w.engine.apps[app("kept")]?.process == .running)
        #expect(w.engine.apps[app("big")]?.process == .suspended)
        return (w, ids)
    }

    func first(_ order: VictimOrder, nextUse: ((SessionID) -> Timestamp?)? = nil) throws -> (String, [String: SessionID]) {
        let (w, ids) = try world(order: order)
        let ranked = w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now, nextUse: nextUse).victims
        let name = ids.first { $0.value.rawValue == ranked.first?.id }?.key ?? "?"
        return (name, ids)
    }

    @Test func lruTakesTheLeastRecentlyActive() throws {
        #expect(try first(.lru).0 == "old")
    }

    @Test func largestTakesTheLargest() throws {
        #expect(try first(.largest).0 == "big")
    }

    @Test func chromeTakesTheOldestBackgroundEntry() throws {
        // "old" was least recently active but entered the background last.
        #expect(try first(.chrome).0 == "kept")
    }

    @Test func lmkdTakesCachedProcessesFirstThenLRU() throws {
        let (w, ids) = try world(order: .lmkd)
        let ranked = w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now, nextUse: nil).victims
        let names = ranked.map { c in ids.first { $0.value.rawValue == c.id }!.key }
        #expect(names.last == "kept", "the running app's scene comes after every suspended one")
        #expect(names.first == "old")
    }

    @Test func optTakesTheFarthestNextUseAndNeverUsedFirst() throws {
        let (_, ids) = try world(order: .opt)
        let next: [SessionID: Timestamp] = [ids["old"]!: at(1_000), ids["big"]!: at(2_000), ids["kept"]!: at(500)]
        #expect(try first(.opt) { next[$0] }.0 == "early", "never used again")
        let all: [SessionID: Timestamp] = next.merging([ids["early"]!: at(600)]) { a, _ in a }
        #expect(try first(.opt) { all[$0] }.0 == "big")
    }

    @Test func oursTakesTheLowestValuePerByte() throws {
        let (w, ids) = try world(order: .ours)
        let ranked = w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now, nextUse: nil).victims
        let scores = ranked.map(\.score)
        #expect(scores == scores.sorted())
        #expect(ranked.first?.id == ids["big"]!.rawValue, "one use, 900 MB: the least worth per byte")
    }

    /// All orders share the ladder: same eligibility, different choice.
    @Test func ordersDifferOnlyInTheChoice() throws {
        var sets: [Set<UInt64>] = []
        for order in VictimOrder.allCases {
            let (w, _) = try world(order: order)
            sets.append(Set(w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now,
                                                   nextUse: { _ in nil }).victims.map(\.id)))
        }
        #expect(Set(sets).count == 1)
    }
}

@Suite struct OptimalityTests {
    /// A small random trace: `scenes` scenes of equal or varied size, one foreground window,
    /// random switching, a budget that holds about half of them.
    static func smallTrace(seed: UInt64, scenes: Int, equalSizes: Bool, switches: Int = 40) -> Trace {
        var rng = SeededRandom(seed: seed)
        var events: [TraceEvent] = []
        var t: Int64 = 0
        var total: UInt64 = 0
        var sizes: [UInt64] = []
        for _ in 0..<scenes {
            let bytes = equalSizes ? 100 * MB : UInt64(rng.between(50, 300)) * MB
            sizes.append(bytes)
            total += bytes
        }
        events.append(TraceEvent(time: 0, .budget(.bytes(total / 2))))
        var opened = Set<Int>()
        var current: Int?
        for _ in 0..<switches {
            t += Int64(rng.between(15_000, 90_000))
            var next = rng.below(scenes)
            while next == current { next = rng.below(scenes) }
            if let c = current { events.append(TraceEvent(time: t, .background("s\(c)"))) }
            if !opened.contains(next) {
                opened.insert(next)
                events.append(TraceEvent(time: t, .open(TraceScene(name: "s\(next)", bytes: sizes[next], restoreMs: 500))))
            }
            events.append(TraceEvent(time: t, .activate("s\(next)")))
            current = next
        }
        return Trace(events: events)
    }

    static func restores(_ trace: Trace, _ order: VictimOrder) -> Int {
        Replayer.run(trace, settings: ReplaySettings(order: order)).metrics.restores
    }

    static func restores(_ trace: Trace, rank: @escaping (String) -> Int) -> Int {
        var r = Replayer(trace: trace, settings: ReplaySettings(order: .opt))
        r.rankOverride = rank
        r.run()
        return r.metrics.restores
    }

    final class Dice {
        var rng: SeededRandom
        init(_ seed: UInt64) { rng = SeededRandom(seed: seed) }
        func roll() -> Int { rng.below(1_000_000) }
    }

    /// Belady's MIN is the optimum for equal sizes (reclaim-policy.md §3.7: "the classic
    /// optimum for unit sizes and costs"), and so it is here, batches and aging included. With
    /// unequal sizes it is not: a policy that frees more bytes per victim can need fewer
    /// restores (the replays show it by up to about 10 %, which is why gap closed can exceed
    /// 100 %), so the property is asserted for equal sizes only.
    @Test func optIsNeverBeatenOnSmallTraces() {
        var tested = 0
        for seed in UInt64(1)...150 {
            let trace = Self.smallTrace(seed: seed, scenes: 4 + Int(seed % 7), equalSizes: true)
            let opt = Self.restores(trace, .opt)
            for order in [VictimOrder.ours, .lru, .largest, .chrome, .lmkd] {
                let other = Self.restores(trace, order)
                #expect(opt <= other, "seed \(seed): opt \(opt) > \(order) \(other)")
            }
            if opt > 0 { tested += 1 }
        }
        #expect(tested > 50, "most traces must need restores at all")
    }

    /// Exhaustive over every fixed priority order of the scenes (6! = 720 per trace): none
    /// beats OPT. (An exhaustive search over adaptive choices is not feasible here; every static
    /// order is, and OPT is adaptive.)
    @Test func optIsNeverBeatenByAnyFixedOrder() {
        for seed in UInt64(1)...4 {
            let scenes = 6
            let trace = Self.smallTrace(seed: seed &+ 1_000, scenes: scenes, equalSizes: true, switches: 30)
            let opt = Self.restores(trace, .opt)
            var best = Int.max
            var permutation = Array(0..<scenes)
            repeat {
                var rank: [String: Int] = [:]
                for (position, scene) in permutation.enumerated() { rank["s\(scene)"] = position }
                best = min(best, Self.restores(trace) { rank[$0] ?? 0 })
            } while nextPermutation(&permutation)
            #expect(opt <= best, "seed \(seed): opt \(opt), best fixed order \(best)")
        }
    }

    /// Random adaptive orders never beat OPT either.
    @Test func optIsNeverBeatenByRandomAdaptiveOrders() {
        // A fresh random rank at every decision.
        for seed in UInt64(1)...20 {
            let trace = Self.smallTrace(seed: seed &+ 2_000, scenes: 6, equalSizes: true)
            let opt = Self.restores(trace, .opt)
            for run in UInt64(0)..<20 {
                let dice = Dice(seed &* 100 &+ run)
                #expect(opt <= Self.restores(trace) { _ in dice.roll() })
            }
        }
    }

    /// Gap closed is defined against LRU and OPT.
    @Test func gapClosedFormula() {
        #expect(gapClosed(lru: 100, policy: 70, opt: 40) == 0.5)
        #expect(gapClosed(lru: 100, policy: 100, opt: 40) == 0)
        #expect(gapClosed(lru: 100, policy: 40, opt: 40) == 1)
        #expect(gapClosed(lru: 100, policy: 110, opt: 40)! < 0)
        #expect(gapClosed(lru: 40, policy: 30, opt: 40) == nil)
    }
}

func nextPermutation(_ a: inout [Int]) -> Bool {
    guard a.count > 1 else { return false }
    var i = a.count - 2
    while i >= 0 && a[i] >= a[i + 1] { i -= 1 }
    if i < 0 { return false }
    var j = a.count - 1
    while a[j] <= a[i] { j -= 1 }
    a.swapAt(i, j)
    a[(i + 1)...].reverse()
    return true
}
