/// The numbering of batches and the one commit in flight, without I/O: group commit as a
/// state machine. Changes and replies belong to the batch being gathered; at the end of a pass
/// that batch is handed to the commit thread, unless one is in flight (then it keeps growing);
/// when the commit thread reports, what it committed — and every batch before it — is settled.
///
/// Settling means: the replies, journal entries and events held for those batches go out (or,
/// for a failed commit, become StorageFailure). A batch that changed nothing is settled at
/// once: its replies may only read, but must not overtake a reply of an earlier batch, which
/// the per-connection order of the outbox guarantees.
struct CommitPipeline: Equatable, Sendable {
    enum State: Equatable, Sendable {
        /// No commit in flight.
        case idle
        /// The commit thread is writing this batch.
        case committing(UInt64)
    }

    enum Action: Equatable, Sendable {
        case none
        /// Give the changes gathered so far to the commit thread as batch `batch`.
        case submit(UInt64)
        /// Every batch up to `through` is committed: release what they hold.
        case settle(through: UInt64)
        /// The commit failed: the batches up to `through` are lost (the one in flight and those
        /// gathered since, which built on it); what they hold becomes an error; memory goes back
        /// to the committed state.
        case fail(through: UInt64)
    }

    private(set) var state = State.idle
    /// The batch new changes and replies belong to.
    private(set) var gathering: UInt64 = 1
    /// Every batch up to this one is settled.
    private(set) var settledThrough: UInt64 = 0

    var isCommitting: Bool { state != .idle }

    /// A pass ended (or a commit just finished). `hasChanges`: the gathered batch must be written.
    mutating func batchReady(hasChanges: Bool) -> Action {
        guard state == .idle else { return .none }
        let number = gathering
        gathering += 1
        guard hasChanges else {
            settledThrough = number
            return .settle(through: number)
        }
        state = .committing(number)
        return .submit(number)
    }

    /// The commit thread finished the batch in flight.
    mutating func commitFinished(succeeded: Bool) -> Action {
        guard case .committing(let number) = state else { return .none }
        state = .idle
        if succeeded {
            settledThrough = number
            return .settle(through: number)
        }
        let through = gathering
        gathering += 1
        settledThrough = through
        return .fail(through: through)
    }
}
