import SceneCore
import SceneTrace

/// The five evaluation scenarios of reclaim-policy.md §3.7.
public enum Scenario: String, Sendable, CaseIterable {
    /// (a) Zipf(α≈1) popularity over 20–80 scenes, usage sessions calibrated on LSApp's
    /// published statistics: median 2 and mean 2.18 unique apps per session, median 2 and mean
    /// 5.46 switches per session, median session length 1 min 46 s.
    case mix
    /// (b) Two scenes alternate while a third slot scans a cyclic pool of many others.
    case pingpong
    /// (c) One 1 GB scene among many 50 MB ones.
    case size
    /// (d) Continuous use while the budget drops by 30 % for 10 s, again and again.
    case spikes
    /// (e) The mix, with slow, deferring and never-acknowledging scenes (`ack_profile` lines).
    case acks

    public var letter: String {
        switch self {
        case .mix: "a"
        case .pingpong: "b"
        case .size: "c"
        case .spikes: "d"
        case .acks: "e"
        }
    }

    /// Accepts the name or the letter.
    public init?(named name: String) {
        if let s = Scenario(rawValue: name) {
            self = s
        } else if let s = Scenario.allCases.first(where: { $0.letter == name }) {
            self = s
        } else {
            return nil
        }
    }
}

/// A seeded generator of traces for the five scenarios. The same scenario, seed and size give
/// the same trace, byte for byte (own PRNG and own elementary functions, integer output).
public struct TraceGenerator {
    public enum Size: String, Sendable {
        /// Small enough to ship as a test fixture (a few hundred lines).
        case fixture
        /// The size used for the figures (a few thousand lines).
        case full
    }

    public let scenario: Scenario
    public let seed: UInt64
    public let size: Size

    public init(scenario: Scenario, seed: UInt64, size: Size = .full) {
        self.scenario = scenario
        self.seed = seed
        self.size = size
    }

    /// The trace, starting with a `meta` line and a budget of 50 % of its working set.
    public func generate() -> Trace {
        var b = Builder(seed: seed ^ (UInt64(Scenario.allCases.firstIndex(of: scenario)!) &* 0x9E37_79B9))
        switch scenario {
        case .mix: b.mix(sessions: size == .fixture ? 24 : 160, gapMedianMs: 300_000)
        case .pingpong: b.pingPong(cycles: size == .fixture ? 14 : 150)
        case .size: b.sizeMismatch(bursts: size == .fixture ? 14 : 120)
        case .spikes: b.spikes(sessions: size == .fixture ? 14 : 120)
        case .acks: b.acks(sessions: size == .fixture ? 16 : 160)
        }
        b.lockIfNeeded()
        var events = b.events
        let provisional = Trace(events: events)
        let workingSet = Replayer.workingSet(of: provisional)
        let header = [TraceEvent(time: 0, .meta(scenario: scenario.rawValue, seed: seed)),
                      TraceEvent(time: 0, .budget(.bytes(workingSet / 2)))]
        events.insert(contentsOf: header, at: 0)
        return Trace(events: events, scenario: scenario.rawValue, seed: seed)
    }

    /// The file name fixtures use: `a-mix-seed1.jsonl`.
    public var fileName: String { "\(scenario.letter)-\(scenario.rawValue)-seed\(seed).jsonl" }
}

/// Builds the events of one trace.
struct Builder {
    var rng: SeededRandom
    var events: [TraceEvent] = []
    var now: Int64 = 0
    var names: [String] = []
    var specs: [String: TraceScene] = [:]
    var isOpen: Set<String> = []
    var current: String?

    static let mb: Double = 1_000_000

    init(seed: UInt64) { rng = SeededRandom(seed: seed) }

    mutating func emit(_ kind: TraceEvent.Kind) { events.append(TraceEvent(time: now, kind)) }

    mutating func advance(_ ms: Double) { now += max(Int64(ms.rounded()), 1) }

    mutating func define(_ name: String, mem: Double, restoreMs: Double, flags: [String] = []) {
        names.append(name)
        let state = UInt64(rng.logNormal(median: 40_000, sigma: 0.8).rounded())
        specs[name] = TraceScene(name: name, bytes: UInt64(mem.rounded()), restoreMs: UInt32(restoreMs.rounded()),
                                 stateBytes: state, flags: flags)
    }

    /// Brings `name` to the foreground: the current scene goes to the background first (one
    /// window at a time, as on a phone), the scene is opened on first use.
    mutating func switchTo(_ name: String) {
        if let c = current, c != name { emit(.background(c)) }
        if !isOpen.contains(name) {
            emit(.open(specs[name]!))
            isOpen.insert(name)
        }
        emit(.activate(name))
        current = name
    }

    /// The screen locks: the foreground scene goes to the background.
    mutating func lockIfNeeded() {
        if let c = current { emit(.background(c)) }
        current = nil
    }

    /// The user swipes a background scene away; it is opened afresh (cold) if used again.
    mutating func closeOne() {
        let candidates = names.filter { isOpen.contains($0) && $0 != current && !(specs[$0]!.isProtected) }
        guard !candidates.isEmpty else { return }
        let victim = candidates[rng.below(candidates.count)]
        emit(.close(victim))
        isOpen.remove(victim)
    }

    /// Occasionally the foreground scene's footprint drifts.
    mutating func maybeDrift(_ name: String, probability: Double) {
        guard rng.chance(probability), var spec = specs[name] else { return }
        let factor = 0.85 + 0.35 * rng.unit()
        let bytes = min(max(Double(spec.bytes) * factor, 10 * Self.mb), 2_000 * Self.mb)
        spec.bytes = UInt64(bytes.rounded())
        specs[name] = spec
        emit(.mem(scene: name, bytes: spec.bytes))
    }

    // MARK: - Calibrated ingredients

    /// Zipf weights 1/k^α for ranks 1…n.
    static func zipf(_ n: Int, alpha: Double) -> [Double] {
        (1...n).map { alpha == 1 ? 1 / Double($0) : 1 / DeterministicMath.pow(Double($0), alpha) }
    }

    /// Unique apps in a usage session: P(1..5) = .33 .35 .18 .09 .05 (median 2, mean 2.18).
    mutating func uniqueApps() -> Int { 1 + rng.weighted([0.33, 0.35, 0.18, 0.09, 0.05]) }

    /// Switches in a session with `unique` apps: none with one app, else at least unique − 1,
    /// log-normal (median 3, σ 1.5) otherwise; over all sessions median 2 (P(≤ 2) ≈ 0.57) and
    /// mean ≈ 5.45.
    mutating func switches(unique: Int) -> Int {
        guard unique > 1 else { return 0 }
        let x = Int(rng.logNormal(median: 3, sigma: 1.5).rounded())
        return min(max(unique - 1, x), 60)
    }

    /// Session length, ms: log-normal, median 106 s.
    mutating func sessionLength() -> Double {
        min(max(rng.logNormal(median: 106_000, sigma: 0.9), 8_000), 1_800_000)
    }

    /// Splits a session's length over its visits (at least 1 s each).
    mutating func dwells(total: Double, visits: Int) -> [Double] {
        var weights: [Double] = []
        var sum = 0.0
        for _ in 0..<visits {
            let w = rng.exponential(mean: 1)
            weights.append(w)
            sum += w
        }
        return weights.map { max(total * $0 / sum, 1_000) }
    }

    /// Scene sizes and restore costs for the mixes: size log-normal (median 120 MB, σ 0.7,
    /// 20 MB–1.5 GB); restore cost log-normal (median 600 ms, σ 0.6), growing weakly with size.
    mutating func defineMixScenes(count: Int, prefix: String) {
        for i in 1...count {
            let mem = min(max(rng.logNormal(median: 120 * Self.mb, sigma: 0.7), 20 * Self.mb), 1_500 * Self.mb)
            let sizeFactor = DeterministicMath.pow(mem / (120 * Self.mb), 0.3)
            let restore = min(max(rng.logNormal(median: 600, sigma: 0.6) * sizeFactor, 100), 8_000)
            define("\(prefix)\(i)", mem: mem, restoreMs: restore)
        }
    }

    /// One LSApp-like usage session over scenes drawn from `weights` (by index into `pool`).
    mutating func usageSession(pool: [String], weights: [Double], driftProbability: Double = 0.2) {
        let unique = min(uniqueApps(), pool.count)
        var chosen: [String] = []
        while chosen.count < unique {
            let name = pool[rng.weighted(weights)]
            if !chosen.contains(name) { chosen.append(name) }
        }
        let switchCount = unique == 1 ? 0 : switches(unique: unique)
        var visits = chosen
        while visits.count < switchCount + 1 {
            var next = chosen[rng.below(chosen.count)]
            while next == visits.last! { next = chosen[rng.below(chosen.count)] }
            visits.append(next)
        }
        let times = dwells(total: sessionLength(), visits: visits.count)
        for (name, dwell) in zip(visits, times) {
            switchTo(name)
            maybeDrift(name, probability: driftProbability)
            advance(dwell)
        }
        lockIfNeeded()
    }

    // MARK: - Scenarios

    /// (a) Zipf α = 1 over 20–80 scenes (20–30 for a fixture), one of them protected (audio),
    /// LSApp-like sessions separated by idle gaps (log-normal, median `gapMedianMs`).
    mutating func mix(sessions: Int, gapMedianMs: Double, sceneRange: ClosedRange<Int>? = nil) {
        let range = sceneRange ?? (sessions <= 30 ? 20...30 : 20...80)
        let count = rng.between(range.lowerBound, range.upperBound)
        defineMixScenes(count: count, prefix: "s")
        // Popularity ranks are a random permutation, so names carry no rank.
        var pool = names
        for i in stride(from: pool.count - 1, to: 0, by: -1) { pool.swapAt(i, rng.below(i + 1)) }
        let protectedName = pool[rng.below(min(5, pool.count))]
        specs[protectedName]!.flags = ["protected"]
        let weights = Self.zipf(pool.count, alpha: 1)
        for _ in 0..<sessions {
            usageSession(pool: pool, weights: weights)
            if rng.chance(0.03) { closeOne() }
            advance(min(max(rng.logNormal(median: gapMedianMs, sigma: 1.0), 30_000), 7_200_000))
        }
    }

    /// (b) "ping" and "pong" alternate 2–4 times (5–20 s each), then the user scans 3–8 scenes
    /// of a cyclic pool of 24 (2–8 s each), and again.
    mutating func pingPong(cycles: Int) {
        define("ping", mem: 150 * Self.mb, restoreMs: 1_200)
        define("pong", mem: 150 * Self.mb, restoreMs: 1_200)
        let poolSize = 24
        for i in 1...poolSize {
            define("scan\(i)", mem: rng.logNormal(median: 100 * Self.mb, sigma: 0.3),
                   restoreMs: rng.logNormal(median: 600, sigma: 0.3))
        }
        var cursor = 0
        for _ in 0..<cycles {
            for _ in 0..<rng.between(2, 4) {
                for name in ["ping", "pong"] {
                    switchTo(name)
                    advance(Double(rng.between(5_000, 20_000)))
                }
            }
            for _ in 0..<rng.between(3, 8) {
                switchTo("scan\(cursor % poolSize + 1)")
                cursor += 1
                advance(Double(rng.between(2_000, 8_000)))
            }
            if rng.chance(0.2) {
                lockIfNeeded()
                advance(rng.logNormal(median: 60_000, sigma: 0.8))
            }
        }
    }

    /// (c) One 1 GB scene (restore 2.5 s) among thirty 50 MB ones (restore ≈ 500 ms), Zipf α = 1
    /// with the big one third most popular; bursts of 2–8 visits (median dwell 20 s).
    mutating func sizeMismatch(bursts: Int) {
        define("big", mem: 1_000 * Self.mb, restoreMs: 2_500)
        for i in 1...30 {
            define("small\(i)", mem: 50 * Self.mb, restoreMs: rng.logNormal(median: 500, sigma: 0.2))
        }
        var pool = Array(names.dropFirst())
        for i in stride(from: pool.count - 1, to: 0, by: -1) { pool.swapAt(i, rng.below(i + 1)) }
        pool.insert("big", at: 2)
        let weights = Self.zipf(pool.count, alpha: 1)
        for _ in 0..<bursts {
            for _ in 0..<rng.between(2, 8) {
                var name = pool[rng.weighted(weights)]
                while name == current { name = pool[rng.weighted(weights)] }
                switchTo(name)
                advance(min(rng.logNormal(median: 20_000, sigma: 0.8), 300_000))
            }
            lockIfNeeded()
            advance(rng.logNormal(median: 90_000, sigma: 1.0))
        }
    }

    /// (d) Mix-like use with short idle gaps (median 20 s), 20–30 scenes; every 60–120 s the
    /// budget drops to 70 % for 10 s.
    mutating func spikes(sessions: Int) {
        mix(sessions: sessions, gapMedianMs: 20_000, sceneRange: 20...30)
        // Lay the spikes over the finished timeline.
        let end = now
        var spikes: [TraceEvent] = []
        var t = Int64(rng.between(30_000, 90_000))
        while t + 10_000 < end {
            spikes.append(TraceEvent(time: t, .budget(.scale(0.7))))
            spikes.append(TraceEvent(time: t + 10_000, .budget(.scale(1))))
            t += 10_000 + Int64(rng.between(60_000, 120_000))
        }
        events = Self.merge(events, spikes)
    }

    /// (e) The mix, with an `ack_profile` for every scene: 50 % prompt (50–500 ms), 20 % slow
    /// (2.5–10 s), 15 % deferring, 15 % never answering.
    mutating func acks(sessions: Int) {
        mix(sessions: sessions, gapMedianMs: 300_000)
        var profiles: [TraceEvent] = []
        for name in names {
            let kind = rng.weighted([0.5, 0.2, 0.15, 0.15])
            let profile: AckProfile
            switch kind {
            case 0: profile = AckProfile(scene: name, latencyMs: Int64(rng.between(50, 500)), defers: false)
            case 1: profile = AckProfile(scene: name, latencyMs: Int64(rng.between(2_500, 10_000)), defers: false)
            case 2: profile = AckProfile(scene: name, latencyMs: Int64(rng.between(100, 1_000)), defers: true)
            default: profile = AckProfile(scene: name, latencyMs: nil, defers: false)
            }
            profiles.append(TraceEvent(time: 0, .ackProfile(profile)))
        }
        events = profiles + events
    }

    /// Merges two time-ordered lists; on equal times `a` comes first.
    static func merge(_ a: [TraceEvent], _ b: [TraceEvent]) -> [TraceEvent] {
        var out: [TraceEvent] = []
        out.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].time <= b[j].time) {
                out.append(a[i])
                i += 1
            } else {
                out.append(b[j])
                j += 1
            }
        }
        return out
    }
}
