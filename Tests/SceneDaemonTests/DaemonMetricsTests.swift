import SceneCore
import Testing
@testable import SceneDaemon

/// The daemon's own counters for GetMetrics: fixed buckets, reclaim tallies, event tallies.
@Suite struct DaemonMetricsTests {
    @Test func histogramBucketsByUpperBound() {
        var h = LatencyHistogram(bounds: [10, 100])
        for us: UInt64 in [0, 10, 11, 100, 101, 5_000] { h.record(microseconds: us) }
        #expect(h.counts == [2, 2] && h.overflow == 2 && h.count == 6 && h.sum == 5_222)
        let passes = LatencyHistogram.passes()
        #expect(passes.bounds == passes.bounds.sorted() && passes.counts.allSatisfy { $0 == 0 })
    }

    @Test func reclaimTallyByKindAndFreedBytes() {
        var t = ReclaimTally()
        func note(_ before: UInt64, _ after: UInt64) -> ReclaimNote {
            ReclaimNote(level: "critical", usageBefore: before, usageAfter: after, budget: 100, score: nil, reason: "test")
        }
        t.record(.disconnect(SessionID(1)), note(90, 60))
        t.record(.disconnect(SessionID(2)), note(60, 50))
        t.record(.suspend(AppID("a.b")!), note(50, 50))
        // A note whose usage rose (another change in between) frees nothing rather than wrapping.
        t.record(.terminate(AppID("a.b")!), note(50, 70))
        let disconnect = ReclaimTally.kinds.firstIndex(of: "disconnect")!
        let terminate = ReclaimTally.kinds.firstIndex(of: "terminate")!
        #expect(t.counts[disconnect] == 2 && t.bytesFreed[disconnect] == 40)
        #expect(t.counts[terminate] == 1 && t.bytesFreed[terminate] == 0)
        #expect(t.counts.reduce(0, +) == 4)
    }
}
