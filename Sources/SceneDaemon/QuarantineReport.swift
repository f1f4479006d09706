import SceneCore
import SceneInterface
import SceneStore
import Varlink

/// The stored rows the store left out because they are damaged on disk, as the daemon
/// reports them: counted in GetStatus, one journal entry each (up to a cap), and a quarantined
/// session's id answers NoSuchSession saying why.
struct QuarantineReport {
    private(set) var rows: [QuarantinedRow] = []
    /// Quarantined sessions and the reason.
    private(set) var sessions: [SessionID: String] = [:]
    private(set) var eventCount = 0
    private var seen: Set<String> = []

    var count: Int { rows.count }

    /// Adds what was not known yet and returns it.
    mutating func add(_ new: [QuarantinedRow]) -> [QuarantinedRow] {
        var added: [QuarantinedRow] = []
        for row in new where seen.insert("\(row.table.rawValue) \(row.key)").inserted {
            rows.append(row)
            added.append(row)
            if let id = row.session { sessions[id] = row.reason }
            if row.table == .events { eventCount += 1 }
        }
        return added
    }

    /// At most this many rows get an entry of their own at start-up; the rest one summary. An
    /// entry per row carries SCENED_SESSION, so `journalctl SCENED_SESSION=s4` says why s4 is
    /// gone; the cap keeps a badly damaged database from flooding the journal.
    static let entriesPerRow = 20

    static func entries(for rows: [QuarantinedRow]) -> [LogEntry] {
        var out = rows.prefix(entriesPerRow).map(entry(for:))
        if rows.count > entriesPerRow {
            let rest = rows.count - entriesPerRow
            let kinds = Dictionary(grouping: rows.dropFirst(entriesPerRow), by: \.table.rawValue)
                .map { "\($0.value.count) \($0.key)" }.sorted().joined(separator: ", ")
            out.append(LogEntry(priority: .warning, messageID: MessageID.rowQuarantined,
                                message: "\(Format.count(rest, "more stored row")) quarantined (\(kinds)); the database's "
                                    + "quarantine table lists every one with its reason.",
                                fields: [("SCENED_QUARANTINED", String(rows.count))]))
        }
        return out
    }

    static func entry(for row: QuarantinedRow) -> LogEntry {
        var fields = [("SCENED_TABLE", row.table.rawValue), ("SCENED_KEY", String(row.key)), ("SCENED_REASON", row.reason)]
        if let id = row.session { fields.append(("SCENED_SESSION", id.description)) }
        let what = row.table == .events ? "is skipped, never sent" : "is kept in the database but not served"
        return LogEntry(priority: .warning, messageID: MessageID.rowQuarantined,
                        message: "Stored \(row.name) is damaged and quarantined: it \(what) (\(row.reason)).",
                        fields: fields)
    }

    /// NoSuchSession for a quarantined session, saying so.
    func refusal(for id: SessionID) -> VarlinkError? {
        guard let reason = sessions[id] else { return nil }
        var p = JSONObject()
        p["session"] = .string(id.description)
        p["message"] = .string("session \(id) is quarantined: its stored record is damaged (\(reason)); it is kept "
            + "in the database but not served")
        return VarlinkError(name: ManagerInterface.name + ".NoSuchSession", parameters: p)
    }
}
