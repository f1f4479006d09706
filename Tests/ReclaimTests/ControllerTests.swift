import Testing
@testable import SceneCore

/// SceneCore's ReclaimController, the one the daemon and the replayer both run: how it combines
/// its sources, when it consults the policy, when it wants to be woken.
@Suite("ReclaimController")
struct ControllerTests {
    static func controller(simulated: Bool = true) -> ReclaimController {
        ReclaimController(policy: ReclaimPolicy(configuration: ReclaimConfiguration(budget: 1000)),
                          gauge: PressureGauge(watermarks: Watermarks(), hold: .seconds(4)), gaugeIsSource: simulated)
    }

    @Test("the level is the highest source: the gauge with its hold, an override that lapses, external sources")
    func levels() {
        var c = Self.controller()
        let engine = LifecycleEngine()
        let t0 = at(100)
        func level(_ usage: UInt64, _ t: Timestamp, external: PressureLevel = .normal) -> PressureLevel {
            _ = c.evaluate(engine: engine, readings: PressureReadings(usage: usage, budget: 1000, external: external), now: t)
            return c.level
        }
        #expect(level(950, t0) == .warning)
        #expect(level(100, t0 + .seconds(1)) == .warning, "held")
        #expect(c.evaluate(engine: engine, readings: PressureReadings(usage: 100, budget: 1000), now: t0 + .seconds(2)).wake == t0 + .seconds(5))
        #expect(level(100, t0 + .seconds(5)) == .normal)

        // The override raises the level, lapses at its time, and is woken for.
        c.override = PressureOverride(level: .critical, until: t0 + .seconds(10))
        #expect(level(100, t0 + .seconds(6)) == .critical)
        let outcome = c.evaluate(engine: engine, readings: PressureReadings(usage: 100, budget: 1000), now: t0 + .seconds(7))
        #expect(outcome.external && outcome.wake == t0 + .seconds(10))
        #expect(level(100, t0 + .seconds(10)) == .normal && c.override == nil)

        // Max, not replacement: an override of warning does not hide a critical gauge; normal clears.
        c.override = PressureOverride(level: .warning)
        #expect(level(990, t0 + .seconds(11)) == .critical)
        c.override = PressureOverride(level: .normal)
        #expect(level(100, t0 + .seconds(20)) == .critical, "held")
        #expect(c.override == nil)

        // An external source (PSI) counts, and marks the level as external.
        var e = Self.controller(simulated: false)
        let r = e.evaluate(engine: engine, readings: PressureReadings(usage: 5000, budget: 1000, external: .warning), now: t0)
        #expect(e.level == .warning && r.external && e.gaugeLevel == .normal)
    }

    @Test("the policy is consulted on a change, while pressure persists and the settle time is over, and to close an episode; not at rest")
    func gating() throws {
        var world = World(budget: 1000 * MB)
        _ = try world.open("a", 300 * MB)
        _ = try world.open("b", 300 * MB)
        var c = ReclaimController(policy: world.policy, gauge: PressureGauge())
        let calm = c.evaluate(engine: world.engine, readings: PressureReadings(usage: 100 * MB, budget: 1000 * MB), now: at(1))
        #expect(calm.plan == nil && calm.wake == nil, "normal, no episode: nothing to ask")
        let high = c.evaluate(engine: world.engine, readings: PressureReadings(usage: 950 * MB, budget: 1000 * MB), now: at(2))
        #expect(high.previousLevel == .normal && high.plan != nil)
        #expect(high.steps.map(\.command).contains { if case .memoryWarning = $0 { true } else { false } })
        // Every step is the plan's, as an engine command with a reclaim cause.
        #expect(high.steps.map(\.command) == high.plan!.steps.map(ReclaimController.command(for:)))
        c.override = PressureOverride(level: .normal)
        _ = c.evaluate(engine: world.engine, readings: PressureReadings(usage: 100 * MB, budget: 1000 * MB), now: at(3))
        let closing = c.evaluate(engine: world.engine, readings: PressureReadings(usage: 100 * MB, budget: 1000 * MB), now: at(30))
        #expect(c.level == .normal)
        #expect(closing.plan?.episodeEnded == true || c.policy.episode == nil)
    }
}
