import Testing
@testable import SceneDaemon

@Suite("CommitPipeline: group commit as a state machine")
struct CommitPipelineTests {
    @Test("one batch in flight; the next keeps gathering; settled in order")
    func groupCommit() {
        var p = CommitPipeline()
        #expect(p.batchReady(hasChanges: true) == .submit(1))
        #expect(p.gathering == 2 && p.isCommitting)
        // Passes while it commits: batch 2 keeps gathering.
        #expect(p.batchReady(hasChanges: true) == .none)
        #expect(p.batchReady(hasChanges: false) == .none)
        #expect(p.gathering == 2)
        #expect(p.commitFinished(succeeded: true) == .settle(through: 1))
        #expect(p.batchReady(hasChanges: true) == .submit(2))
        #expect(p.commitFinished(succeeded: true) == .settle(through: 2))
        #expect(p.settledThrough == 2 && !p.isCommitting)
    }

    @Test("a batch with nothing to write is settled at once; a finish without a commit does nothing")
    func readOnly() {
        var p = CommitPipeline()
        #expect(p.commitFinished(succeeded: true) == .none)
        #expect(p.batchReady(hasChanges: false) == .settle(through: 1))
        #expect(p.batchReady(hasChanges: false) == .settle(through: 2))
        #expect(!p.isCommitting)
    }

    @Test("a failed commit loses the batch in flight and the one gathered on it, never one later")
    func failure() {
        var p = CommitPipeline()
        _ = p.batchReady(hasChanges: true)          // 1 in flight, 2 gathering
        #expect(p.commitFinished(succeeded: false) == .fail(through: 2))
        #expect(p.gathering == 3 && p.settledThrough == 2)
        #expect(p.batchReady(hasChanges: true) == .submit(3))
    }
}
