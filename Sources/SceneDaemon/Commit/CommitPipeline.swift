/// The numbering of batches and the one commit in flight, without I/O: group commit as a
/// state machine. Changes and replies belong to the batch being gathered; at the end of a pass
/// that batch is handed to the commit thread, unless one is in flight (then it keeps growing);
/// the commit thread reports the batch written (COMMIT returned: in the log, which a crash of
/// scened cannot undo), then durable (under Durability=full, after its fdatasync; otherwise at
/// once), and what it made durable — and every batch before it — is settled.
///
/// Written releases the batch's events to attached apps only: an app that reattaches after a
/// crash resumes from the log, which holds them. Settling means: the replies, journal entries
/// and Monitor events held for those batches go out (or, for a failed commit, become
/// StorageFailure): a reply still means durable. A batch that changed nothing is settled at
/// once: its replies may only read, but must not overtake a reply of an earlier batch, which
/// the per-connection order of the outbox guarantees. The next batch starts only once the one
/// in flight is durable, so batches are written, and reach the apps, in order.
struct CommitPipeline: Equatable, Sendable {
    enum State: Equatable, Sendable {
        /// No commit in flight.
        case idle
        /// The commit thread is writing this batch.
        case committing(UInt64)
        /// This batch is written, not yet durable.
        case written(UInt64)
    }

    enum Action: Equatable, Sendable {
        case none
        /// Give the changes gathered so far to the commit thread as batch `batch`.
        case submit(UInt64)
        /// Batch `batch` is written: its events may go to the attached apps.
        case deliver(UInt64)
        /// Every batch up to `through` is durable: release what they hold.
        case settle(through: UInt64)
        /// The commit failed: the batches up to `through` are lost (the one in flight and those
        /// gathered since, which built on it); what they hold becomes an error; memory goes back
        /// to the committed state.
        case fail(through: UInt64)
        /// Batch `batch` is written (its events are with the attached apps) but could not be
        /// made durable: neither a success nor a loss can be reported for it.
        case unsynced(UInt64)
    }

    private(set) var state = State.idle
    /// The batch new changes and replies belong to.
    private(set) var gathering: UInt64 = 1
    /// Every batch up to this one is settled.
    private(set) var settledThrough: UInt64 = 0
    /// Every batch up to this one is written (or settled).
    private(set) var writtenThrough: UInt64 = 0

    var isCommitting: Bool { state != .idle }

    /// A pass ended (or a commit just finished). `hasChanges`: the gathered batch must be written.
    mutating func batchReady(hasChanges: Bool) -> Action {
        guard state == .idle else { return .none }
        let number = gathering
        gathering += 1
        guard hasChanges else {
            settledThrough = number
            writtenThrough = number
            return .settle(through: number)
        }
        state = .committing(number)
        return .submit(number)
    }

    /// The commit thread wrote the batch in flight.
    mutating func commitWritten() -> Action {
        guard case .committing(let number) = state else { return .none }
        state = .written(number)
        writtenThrough = number
        return .deliver(number)
    }

    /// The commit thread finished the batch in flight: durable (written just before, or with
    /// it, when there is no sync to wait for), or failed.
    mutating func commitFinished(succeeded: Bool) -> Action {
        switch state {
        case .idle:
            return .none
        case .committing(let number) where succeeded, .written(let number) where succeeded:
            state = .idle
            settledThrough = number
            writtenThrough = number
            return .settle(through: number)
        case .committing:
            state = .idle
            let through = gathering
            gathering += 1
            settledThrough = through
            writtenThrough = through
            return .fail(through: through)
        case .written(let number):
            state = .idle
            return .unsynced(number)
        }
    }
}
