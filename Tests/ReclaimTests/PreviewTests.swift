import Testing
@testable import SceneCore

/// `pressure plan`: the ranking and the plan, computed without changing anything.
@Suite("ReclaimPolicy.preview")
struct PreviewTests {
    @Test("the ranking is the order decide takes victims in; score parts add up; nothing changes")
    func rankingAndPlan() throws {
        var world = World(budget: 800 * MB) { $0.aging = .zero }
        var ids: [SessionID] = []
        for (i, bytes) in [200, 150, 300, 100].enumerated() {
            let id = try world.open("app\(i)", UInt64(bytes) * MB, cost: UInt32(200 * (i + 1)))
            ids.append(id)
        }
        try world.use(ids[1])
        try world.use(ids[1])
        world.advance(60)
        let usage = world.engine.residentBytes
        let before = world.policy
        let preview = world.policy.preview(engine: world.engine, level: .normal, usage: usage, now: world.now)
        #expect(before.episode == nil && world.policy.episode == nil, "the preview began an episode")
        #expect(preview.level == .warning, "at normal, the plan a warning would bring")
        #expect(preview.candidates.count == 4 && preview.candidates.map(\.rank) == [1, 2, 3, 4])
        for c in preview.candidates {
            let expected = (c.uses + ReclaimPolicy.priorUses) * (1 + c.restoreCostMs / c.meanRestoreCostMs) / Double(c.bytes)
            #expect(abs(c.score - expected) <= expected * 1e-9, "\(c)")
        }
        #expect(preview.candidates.map(\.score) == preview.candidates.map(\.score).sorted(), "best victim (lowest score) first")
        // The plan's disconnects follow the ranking.
        var copy = before
        let plan = copy.decide(engine: world.engine, level: .warning, usage: usage, now: world.now)
        let disconnected = plan.steps.compactMap { if case .disconnect(let id) = $0.action { id } else { nil } }
        #expect(!disconnected.isEmpty)
        #expect(disconnected == Array(preview.candidates.compactMap(\.session).prefix(disconnected.count)))
        #expect(preview.plan == plan)
        #expect(preview.usageAfter == plan.steps.last!.note.usageAfter && preview.usageAfter < usage)
        // The most used session ranks last.
        #expect(preview.candidates.last?.session == ids[1])
    }
}
