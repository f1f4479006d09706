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

    @Test("Durability=full: committing → written (deliver to the apps) → durable (settle); the next batch waits for durable")
    func writtenThenDurable() {
        var p = CommitPipeline()
        #expect(p.batchReady(hasChanges: true) == .submit(1))
        #expect(p.state == .committing(1) && p.writtenThrough == 0)
        #expect(p.commitWritten() == .deliver(1))
        #expect(p.state == .written(1) && p.writtenThrough == 1 && p.settledThrough == 0)
        // Written is not durable: batch 2 keeps gathering, and a second report changes nothing.
        #expect(p.isCommitting)
        #expect(p.batchReady(hasChanges: true) == .none)
        #expect(p.batchReady(hasChanges: false) == .none)
        #expect(p.commitWritten() == .none)
        #expect(p.gathering == 2)
        #expect(p.commitFinished(succeeded: true) == .settle(through: 1))
        #expect(p.state == .idle && p.settledThrough == 1)
        #expect(p.batchReady(hasChanges: true) == .submit(2))
        #expect(p.commitWritten() == .deliver(2))
        #expect(p.commitFinished(succeeded: true) == .settle(through: 2))
        #expect(p.writtenThrough == 2 && p.settledThrough == 2 && !p.isCommitting)
    }

    @Test("written is reported only for the batch in flight, never twice, never after it settled")
    func writtenOnlyInFlight() {
        var p = CommitPipeline()
        #expect(p.commitWritten() == .none)
        #expect(p.batchReady(hasChanges: false) == .settle(through: 1))
        #expect(p.commitWritten() == .none)
        #expect(p.writtenThrough == 1)
        _ = p.batchReady(hasChanges: true)
        _ = p.commitWritten()
        _ = p.commitFinished(succeeded: true)
        #expect(p.commitWritten() == .none)
        #expect(p.commitFinished(succeeded: true) == .none)
        #expect(p.state == .idle && p.settledThrough == 2)
    }

    @Test("a COMMIT that fails is never reported written: the batch and the one gathered on it are lost")
    func failureBeforeWritten() {
        var p = CommitPipeline()
        _ = p.batchReady(hasChanges: true)
        #expect(p.commitFinished(succeeded: false) == .fail(through: 2))
        #expect(p.writtenThrough == 2 && p.settledThrough == 2 && p.state == .idle)
        #expect(p.commitWritten() == .none)
    }

    @Test("a sync that fails after the batch was written is neither settled nor failed: unsynced")
    func syncFailure() {
        var p = CommitPipeline()
        _ = p.batchReady(hasChanges: true)
        _ = p.batchReady(hasChanges: true)          // batch 2 gathering behind it
        #expect(p.commitWritten() == .deliver(1))
        #expect(p.commitFinished(succeeded: false) == .unsynced(1))
        #expect(p.settledThrough == 0 && p.writtenThrough == 1 && p.state == .idle)
    }
}
