import CSQLite
import Glibc
import SceneCore

/// A stored row that does not decode or does not make sense: damaged on disk. It is left where
/// it is (so it is kept, and its identifier stays reserved), recorded in the quarantine table,
/// not loaded, and never sent to a client.
public struct QuarantinedRow: Sendable, Equatable, CustomStringConvertible {
    public enum Table: String, Sendable, CaseIterable {
        case apps, configurations, sessions, tasks, schedules, notifications, events, opens
        case activationConditions = "activation_conditions"
    }

    public var table: Table
    /// The row's key in its table: a reference, session id, task token, schedules row,
    /// notification id or sequence number.
    public var key: Int64
    /// What is wrong with it, for people.
    public var reason: String

    public init(table: Table, key: Int64, reason: String) {
        self.table = table
        self.key = key
        self.reason = reason
    }

    /// The session a sessions row was, when its key is a possible identifier.
    public var session: SessionID? {
        table == .sessions && key > 0 ? SessionID(UInt64(key)) : nil
    }

    /// "session s4", "task t2", "notification n5", "event #9", "apps row 3",
    /// "configurations row 2", "schedules row 1".
    public var name: String {
        switch table {
        case .sessions: key > 0 ? "session s\(key)" : "sessions row \(key)"
        case .tasks: key > 0 ? "task t\(key)" : "tasks row \(key)"
        case .notifications: key > 0 ? "notification n\(key)" : "notifications row \(key)"
        case .events: "event #\(key)"
        case .opens: key > 0 ? "open o\(key)" : "opens row \(key)"
        case .activationConditions: key > 0 ? "activation conditions of s\(key)" : "activation_conditions row \(key)"
        case .apps, .configurations, .schedules: "\(table.rawValue) row \(key)"
        }
    }

    public var description: String { "\(name): \(reason)" }
}

/// What `load` restored, and what it would not.
public struct StoredState: Sendable {
    public var snapshot: EngineSnapshot
    /// The rows left out, in table order (apps and configurations, sessions, tasks, schedules,
    /// notifications).
    public var quarantined: [QuarantinedRow]
    /// Why the quarantined rows could not be written to the quarantine table, when they could
    /// not (a full disk): they are still left out, kept in place and reported.
    public var recordingFailure: StoreError?
}

extension SceneStore {
    /// Adds the rows not yet in the quarantine table, with a copy of their values, in one
    /// transaction. Rows already recorded keep their first reason and time.
    func record(_ rows: [QuarantinedRow], _ db: SQLiteConnection) throws(StoreError) {
        guard !rows.isEmpty else { return }
        let known = try db.prepare("SELECT 1 FROM quarantine WHERE table_name = ?1 AND row_key = ?2",
                                   persistent: false, "reading the quarantine")
        defer { known.finalize() }
        var new: [QuarantinedRow] = []
        for row in rows {
            known.bind(1, text: row.table.rawValue)
            known.bind(2, row.key)
            let rc = known.step()
            known.reset()
            if rc == SQLITE_DONE { new.append(row) } else if rc != SQLITE_ROW { throw db.error(rc, "reading the quarantine") }
        }
        guard !new.isEmpty else { return }
        let insert = try db.prepare("""
            INSERT OR IGNORE INTO quarantine (table_name, row_key, reason, detected_at, evidence) VALUES (?1, ?2, ?3, ?4, ?5)
            """, persistent: false, "recording quarantined rows")
        defer { insert.finalize() }
        let startedHere = !db.inTransaction
        if startedHere { try db.execute("BEGIN IMMEDIATE", "recording quarantined rows") }
        do throws(StoreError) {
            for row in new {
                insert.bind(1, text: row.table.rawValue)
                insert.bind(2, row.key)
                insert.bind(3, text: row.reason)
                insert.bind(4, Self.wallClockMicroseconds())
                insert.bind(5, text: try evidence(of: row, db))
                try run(insert, db, "recording \(row.name) in the quarantine")
            }
            if startedHere { try db.execute("COMMIT", "recording quarantined rows") }
        } catch {
            if startedHere && db.inTransaction { try? db.execute("ROLLBACK", "rolling back") }
            throw error
        }
    }

    /// The row's columns as `name=literal` pairs (quote(): text quoted, blobs in hex), or a
    /// note when the row is gone.
    private func evidence(of row: QuarantinedRow, _ db: SQLiteConnection) throws(StoreError) -> String {
        let table = row.table.rawValue
        let columns = try db.texts("SELECT name FROM pragma_table_info('\(table)')", "reading the columns of \(table)")
        let parts = columns.map { "'\($0)=' || quote(\"\($0)\")" }.joined(separator: " || ' ' || ")
        let s = try db.prepare("SELECT \(parts) FROM \(table) WHERE rowid = ?1", persistent: false,
                               "copying \(row.name) into the quarantine")
        defer { s.finalize() }
        s.bind(1, row.key)
        let rc = s.step()
        if rc == SQLITE_DONE { return "(the row is no longer stored)" }
        guard rc == SQLITE_ROW else { throw db.error(rc, "copying \(row.name) into the quarantine") }
        return s.text(0)
    }

    static func wallClockMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// Every row recorded in the quarantine table (operators and tests): table, key, reason.
    public func quarantineRecords() throws(StoreError) -> [QuarantinedRow] {
        let (db, _) = try openConnection()
        let s = try db.prepare("SELECT table_name, row_key, reason FROM quarantine ORDER BY table_name, row_key",
                               persistent: false, "reading the quarantine")
        defer { s.finalize() }
        var out: [QuarantinedRow] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw db.error(rc, "reading the quarantine") }
            if let table = QuarantinedRow.Table(rawValue: s.text(0)) {
                out.append(QuarantinedRow(table: table, key: s.int64(1), reason: s.text(2)))
            }
        }
    }
}
