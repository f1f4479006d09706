import Testing
@testable import SceneCore

/// Each step of a batch says the usage it starts from and leaves: a disconnect starts where the
/// one before it ended, and a suspension frees nothing by this accounting.
@Suite("ReclaimPolicy: each step's usage before and after")
struct StepUsageTests {
    @Test("victims chain their usage; suspensions leave it as it was")
    func stepsChain() throws {
        var world = World(budget: 400 * MB) { $0.aging = .zero }
        for (i, bytes) in [200, 150, 300, 100].enumerated() {
            _ = try world.open("app\(i)", UInt64(bytes) * MB, cost: 500)
        }
        world.advance(120)
        let usage = world.engine.residentBytes
        let plan = world.policy.decide(engine: world.engine, level: .critical, usage: usage, now: world.now)
        let victims = plan.steps.filter {
            switch $0.action { case .disconnect, .terminate: true; default: false }
        }
        #expect(victims.count >= 2, "a batch of several victims: \(plan.steps.map(\.action))")
        #expect(victims.first?.note.usageBefore == usage)
        for (a, b) in zip(victims, victims.dropFirst()) {
            #expect(b.note.usageBefore == a.note.usageAfter, "\(a.action) then \(b.action)")
        }
        for step in victims { #expect(step.note.usageAfter < step.note.usageBefore, "\(step.action) frees bytes") }
        for step in plan.steps {
            if case .suspend = step.action {
                #expect(step.note.usageBefore == step.note.usageAfter, "a suspension frees nothing: \(step.note)")
            }
        }
    }
}
