import SceneCore

/// Measures the wall time of one `decide` over many sessions (build with -c release): victims
/// from the engine's candidate index, as decisions are made, and, to check it against, from a
/// scan of every session.
///
/// The engine holds `sessions` scenes, four per app, all in the background and aged, every app
/// suspended (and, optionally, holding memory of its own), with varied sizes, restore costs and
/// use histories; usage is over the critical watermark, so a decision is a full one: warning,
/// victims from every scene and every suspended app, a batch to the byte target. Each sample is one `decide` on a fresh copy of the
/// policy (a copy made before the clock starts), so every sample does the whole work.
public enum DecisionBench {
    public struct Result: Sendable {
        public var sessions: Int
        public var level: PressureLevel
        /// Wall time per decision, µs.
        public var samples: [Double]
        /// CPU time of the calling thread per decision, µs (empty without a CPU clock): what the
        /// decision costs when other processes compete for the cores.
        public var cpuSamples: [Double]
        public var p50: Double { Percentile.of(samples, 50) }
        public var p99: Double { Percentile.of(samples, 99) }
        public var max: Double { samples.max() ?? 0 }
        public var cpuP50: Double { Percentile.of(cpuSamples, 50) }
        public var cpuP99: Double { Percentile.of(cpuSamples, 99) }
        public var stepsPerDecision: Int
        /// The plan equals the one the scan of every session makes.
        public var sameAsScan: Bool
    }

    /// - Parameter appFootprint: each app's own (process) memory; with it, every suspended app
    ///   is a termination candidate of its own at critical (the costlier path).
    public static func engine(sessions: Int, seed: UInt64 = 7, appFootprint: UInt64 = 0)
        -> (LifecycleEngine, usage: UInt64, now: Timestamp) {
        let (engine, usage, now, _) = world(sessions: sessions, seed: seed, appFootprint: appFootprint)
        return (engine, usage, now)
    }

    /// The engine, and a policy that has seen every activation (as the daemon's would).
    static func world(sessions: Int, seed: UInt64 = 7, appFootprint: UInt64 = 0)
        -> (LifecycleEngine, usage: UInt64, now: Timestamp, policy: ReclaimPolicy) {
        var policy = ReclaimPolicy(configuration: ReclaimConfiguration(), order: .ours)
        var engine = LifecycleEngine()
        var rng = SeededRandom(seed: seed)
        var effects: [Effect] = []
        effects.reserveCapacity(64)
        var now = Timestamp(microseconds: 1_000_000)
        let perApp = 4
        var ids: [SessionID] = []
        ids.reserveCapacity(sessions)
        for i in 0..<sessions {
            let app = AppID("bench.app\(i / perApp)")!
            let request = ConnectRequest(app: app, footprint: UInt64(20_000_000 + rng.below(300_000_000)),
                                         background: true, restoreCostMs: UInt32(100 + rng.below(3_000)))
            if case .session(let id)? = try? engine.handle(.connect(request), now: now, effects: &effects) {
                ids.append(id)
            }
            if appFootprint > 0 && i % perApp == 0 {
                _ = try? engine.handle(.setAppFootprint(app, appFootprint), now: now, effects: &effects)
            }
            effects.removeAll(keepingCapacity: true)
        }
        // Use histories: a few activations each, spread over the last hour.
        for id in ids {
            for _ in 0..<rng.below(4) {
                now = now + TimeSpan(microseconds: 1_000)
                _ = try? engine.handle(.activate(id), now: now, effects: &effects)
                policy.noteActivation(id, now: now)
                _ = try? engine.handle(.background(id), now: now, effects: &effects)
                effects.removeAll(keepingCapacity: true)
            }
        }
        // Let every app suspend and every scene age.
        now = now + .seconds(120)
        _ = try? engine.handle(.tick, now: now, effects: &effects)
        return (engine, engine.residentBytes, now, policy)
    }

    /// `samples` decisions at `level` over an engine of `sessions` scenes.
    public static func run(sessions: Int, level: PressureLevel = .critical, appFootprint: UInt64 = 0, samples: Int,
                           clock: NanosecondClock, cpuClock: NanosecondClock? = nil,
                           selection: VictimSelection = .index) -> Result {
        var (engine, usage, now, pristine) = world(sessions: sessions, appFootprint: appFootprint)
        pristine.victimSelection = selection
        // Budget such that usage sits just over the critical watermark: a batch of many victims.
        pristine.configuration.budget = UInt64(Double(usage) / 0.98)
        var times: [Double] = []
        var cpuTimes: [Double] = []
        times.reserveCapacity(samples)
        var steps = 0
        var plan: ReclaimPlan?
        for _ in 0..<samples {
            var policy = pristine
            let c0 = cpuClock?()
            let t0 = clock()
            plan = policy.decide(engine: engine, level: level, usage: usage, now: now)
            let t1 = clock()
            if let c0, let c1 = cpuClock?() { cpuTimes.append(Double(c1 &- c0) / 1000) }
            times.append(Double(t1 &- t0) / 1000)
            steps = plan!.steps.count
        }
        var scan = pristine
        scan.victimSelection = .scan
        let same = scan.decide(engine: engine, level: level, usage: usage, now: now) == plan
        return Result(sessions: sessions, level: level, samples: times, cpuSamples: cpuTimes, stepsPerDecision: steps,
                      sameAsScan: same)
    }
}
