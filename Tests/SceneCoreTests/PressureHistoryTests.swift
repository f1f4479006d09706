import SceneCore
import Testing

@Suite("PressureHistory: what the controller saw and did, bounded")
struct PressureHistoryTests {
    func t(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    @Test("a sample is kept only when usage, budget or level changed")
    func changesOnly() {
        var h = PressureHistory()
        h.record(time: t(0), seq: 1, usage: 10, budget: 100, level: .normal)
        h.record(time: t(1), seq: 1, usage: 10, budget: 100, level: .normal)
        h.record(time: t(2), seq: 2, usage: 20, budget: 100, level: .normal)
        h.record(time: t(3), seq: 3, usage: 20, budget: 100, level: .warning)
        h.record(time: t(4), seq: 3, usage: 20, budget: 200, level: .warning)
        #expect(h.samples.map(\.time) == [t(0), t(2), t(3), t(4)])
    }

    @Test("full: the oldest go first, counted; never more than the capacity")
    func bounded() {
        var h = PressureHistory(sampleCapacity: 16, actionCapacity: 8)
        for i in 0..<100 {
            h.record(time: t(Int64(i)), seq: UInt64(i), usage: UInt64(i), budget: 1000, level: .normal)
            h.record(.disconnect(SessionID(UInt64(i + 1))), time: t(Int64(i)), seq: UInt64(i), usage: UInt64(i))
        }
        #expect(h.samples.count <= 16 && h.actions.count <= 8)
        #expect(h.samples.last?.usage == 99 && h.actions.last?.target == "s100")
        #expect(h.droppedSamples + h.samples.count == 100 && h.droppedActions + h.actions.count == 100)
        // What is kept is contiguous and in order.
        #expect(zip(h.samples, h.samples.dropFirst()).allSatisfy { $0.seq + 1 == $1.seq })
    }

    @Test("since: the sample in force at that sequence number first, then everything after")
    func since() {
        var h = PressureHistory()
        h.record(time: t(0), seq: 1, usage: 10, budget: 100, level: .normal)
        h.record(time: t(5), seq: 10, usage: 50, budget: 100, level: .warning)
        h.record(time: t(9), seq: 20, usage: 30, budget: 100, level: .normal)
        h.record(.memoryWarning([AppID("com.example.a")!, AppID("com.example.b")!]), time: t(5), seq: 10, usage: 50)
        h.record(.terminate(AppID("com.example.a")!), time: t(9), seq: 19, usage: 50)
        let from12 = h.since(12)
        #expect(from12.samples.map(\.seq) == [10, 20])
        #expect(from12.actions.map(\.kind) == [.terminate])
        #expect(h.since(10).samples.map(\.seq) == [10, 20])
        #expect(h.since(0).samples.count == 3 && h.since(0).actions.first?.target == "com.example.a,com.example.b")
        #expect(h.since(500).samples.map(\.seq) == [20], "past the end: the sample in force only")
        #expect(PressureHistory().since(0).samples.isEmpty)
        var many = PressureHistory()
        many.record(.memoryWarning((1...500).map { AppID("com.example.app\($0)")! }), time: t(0), seq: 1, usage: 0)
        #expect(many.actions.first?.target == "com.example.app1,com.example.app2,com.example.app3 and 497 more",
                "a warning to every app keeps the history small")
    }
}
