import CSQLite
import SceneCore

/// What opening a damaged write-ahead log with `recover: true` did.
public struct LogRecovery: Sendable, Equatable {
    /// What the log held.
    public var inspection: WALInspection
    /// The copies taken before anything was rewritten.
    public var evidence: DamageEvidence
    /// How far the sequence and session counters were raised beyond what the intact part
    /// holds, and why (the bound, in words).
    public var allowance: UInt64
    public var allowanceReason: String
    /// How far the task counter was raised, and why.
    public var taskAllowance: UInt64
    public var taskAllowanceReason: String
    /// How far the notification counter was raised (lost frames × the per-commit cap).
    public var notificationAllowance: UInt64
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
    /// The bounds. SQLite replays the log up to the last commit before the first failing frame;
    /// what the transactions after it handed out lies in the `unreplayedBytes` after that.
    /// - Sequence numbers: each is an event, and each event of a commit is a row of the events
    ///   table when that commit ends (a trim never removes the batch's own rows), so it lies in
    ///   a page the transaction wrote into one of its frames. A row takes at least 6 bytes of
    ///   a page, so the lost frames held at most unreplayedBytes / 6 events.
    /// - Session ids: each new session comes with its configurationForConnecting event, so at
    ///   most as many as events.
    /// - Task tokens leave no row when begun and ended in one batch: instead, one commit may
    ///   allocate at most `Tuning.maxTaskTokensPerCommit`, and each lost transaction takes at
    ///   least one of the unreplayed frames.
    /// - Notification ids likewise (queued and delivered in one batch leaves no row):
    ///   `Tuning.maxNotificationsPerCommit` per lost frame.
    /// With the event log off (capacity 0) events leave no row either, and the sequence and
    /// session bound is the per-commit cap times the frames. Each counter is put past the intact
    /// marks plus its bound; the intact marks are the counters row, or one past the highest id
    /// in a row when that is higher (a commit is measured from what load() raised, too).
    func recoverFromDamagedLog(_ db: SQLiteConnection, inspection: WALInspection,
                               evidence: DamageEvidence) throws(StoreError) -> LogRecovery {
        let before = try readCounters(db)
        let frames = UInt64(max(inspection.unreplayedFrames, 1))
        let bytes = UInt64(max(inspection.unreplayedBytes, 0))
        let allowance: UInt64, allowanceReason: String
        if eventLogCapacity > 0 {
            allowance = bytes / Tuning.minimumRowBytes
            allowanceReason = "\(bytes) lost bytes / \(Tuning.minimumRowBytes), the fewest bytes a stored event takes"
        } else {
            allowance = frames.multipliedReportingOverflow(by: Tuning.maxAllocationsPerCommit).partialValue
            allowanceReason = "\(frames) lost frames × \(Tuning.maxAllocationsPerCommit) per commit (no event log)"
        }
        let taskAllowance = frames * Tuning.maxTaskTokensPerCommit
        let taskAllowanceReason = "\(frames) lost frames × \(Tuning.maxTaskTokensPerCommit) per commit"
        let notificationAllowance = frames * Tuning.maxNotificationsPerCommit
        guard allowance < Tuning.storedNumberLimit / 4, taskAllowance < Tuning.storedNumberLimit / 4,
              notificationAllowance < Tuning.storedNumberLimit / 4 else {
            throw StoreError(kind: .corrupt, path: path,
                             message: "the damaged write-ahead log has \(frames) lost frames, too many to raise the "
                                 + "counters past what they may have allocated")
        }
        let limit = Int64(Tuning.storedNumberLimit)
        try db.execute("BEGIN IMMEDIATE", "raising the counters past the lost transactions")
        do throws(StoreError) {
            let raise = try db.prepare("""
                UPDATE counters SET
                    next_sequence = max(next_sequence, coalesce((SELECT max(seq) FROM events WHERE seq < ?3), 0) + 1) + ?1,
                    next_session = max(next_session, coalesce((SELECT max(id) FROM sessions WHERE id < ?3), 0) + 1) + ?1,
                    next_task = max(next_task, coalesce((SELECT max(token) FROM tasks WHERE token < ?3), 0) + 1) + ?2,
                    next_notification = max(next_notification,
                                            coalesce((SELECT max(id) FROM notifications WHERE id < ?3), 0) + 1) + ?4,
                    next_open = max(next_open, coalesce((SELECT max(id) FROM opens WHERE id < ?3), 0) + 1) + ?4
                WHERE id = 1
                """, persistent: false, "raising the counters past the lost transactions")
            defer { raise.finalize() }
            raise.bind(1, Int64(allowance))
            raise.bind(2, Int64(taskAllowance))
            raise.bind(3, limit)
            raise.bind(4, Int64(notificationAllowance))
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
                           allowanceReason: allowanceReason, taskAllowance: taskAllowance,
                           taskAllowanceReason: taskAllowanceReason, notificationAllowance: notificationAllowance,
                           before: before, after: after)
    }
}
