import CSQLite
import SceneCore

/// What opening a damaged write-ahead log with `recover: true` did.
public struct LogRecovery: Sendable, Equatable {
    /// What the log held.
    public var inspection: WALInspection
    /// The copies taken before anything was rewritten.
    public var evidence: DamageEvidence
    /// How far each counter was raised beyond what the intact part holds: lost frames times
    /// `perCommit`.
    public var allowance: UInt64
    /// The most of each kind one commit may allocate.
    public var perCommit: UInt64
    /// The counters before and after (clock aside).
    public var before: EngineCounters
    public var after: EngineCounters
}

extension SceneStore {
    /// Keeps what SQLite replays (the intact prefix), raises every counter past whatever the
    /// lost transactions can have handed out, then folds the log into the database and empties
    /// it, so that the lost frames can never be mistaken for damage again. The evidence is
    /// already copied.
    ///
    /// The bound. SQLite replays the log up to the last commit before the first failing frame;
    /// every committed transaction after that is lost, and each of them holds at least one of the
    /// `inspection.unreplayedFrames` frames that follow, so at most that many were lost. One
    /// commit allocates at most `Tuning.maxAllocationsPerCommit` session ids, task tokens and
    /// sequence numbers of each kind, counted from the marks committed before it (the store
    /// refuses any batch that goes further). So the lost transactions allocated nothing beyond
    /// the intact marks plus frames × cap, which is where the counters are put. The intact marks
    /// are the counters row, or one past the highest id in any row when that is higher (the
    /// store measures a commit from what load() raised, too). Stored bytes would not bound it:
    /// a session connected and discarded in one batch, or events trimmed in the batch that
    /// logged them, leave no row behind.
    func recoverFromDamagedLog(_ db: SQLiteConnection, inspection: WALInspection,
                               evidence: DamageEvidence) throws(StoreError) -> LogRecovery {
        let before = try readCounters(db)
        let (allowance, overflow) = UInt64(inspection.unreplayedFrames)
            .multipliedReportingOverflow(by: Tuning.maxAllocationsPerCommit)
        let limit = Int64(Tuning.storedNumberLimit)
        guard !overflow, allowance < Tuning.storedNumberLimit / 4 else {
            throw StoreError(kind: .corrupt, path: path,
                             message: "the damaged write-ahead log has \(inspection.unreplayedFrames) lost frames, "
                                 + "too many to raise the counters past what they may have allocated")
        }
        try db.execute("BEGIN IMMEDIATE", "raising the counters past the lost transactions")
        do throws(StoreError) {
            let raise = try db.prepare("""
                UPDATE counters SET
                    next_sequence = max(next_sequence, coalesce((SELECT max(seq) FROM events WHERE seq < ?2), 0) + 1) + ?1,
                    next_session = max(next_session, coalesce((SELECT max(id) FROM sessions WHERE id < ?2), 0) + 1) + ?1,
                    next_task = max(next_task, coalesce((SELECT max(token) FROM tasks WHERE token < ?2), 0) + 1) + ?1
                WHERE id = 1
                """, persistent: false, "raising the counters past the lost transactions")
            defer { raise.finalize() }
            raise.bind(1, Int64(allowance))
            raise.bind(2, limit)
            try run(raise, db, "raising the counters past the lost transactions")
            try db.execute("COMMIT", "raising the counters past the lost transactions")
        } catch {
            if db.inTransaction { try? db.execute("ROLLBACK", "rolling back") }
            throw error
        }
        let after = try readCounters(db)
        // Until this, a crash leaves the damaged frames in the log and the next start finds
        // them (and recovers again: the raise only grows). TRUNCATE copies the replayed prefix
        // into the database and empties the log.
        let result = try db.texts("PRAGMA wal_checkpoint(TRUNCATE)", "folding the log into the database")
        guard result.first == "0" else {
            throw StoreError(kind: .busy, path: path,
                             message: "folding the write-ahead log into the database: the checkpoint could not finish "
                                 + "(another connection is reading the database); nothing was lost, start again")
        }
        return LogRecovery(inspection: inspection, evidence: evidence, allowance: allowance,
                           perCommit: Tuning.maxAllocationsPerCommit, before: before, after: after)
    }
}
