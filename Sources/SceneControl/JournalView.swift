import SceneCore
import SystemdKit
import Varlink

/// One journal entry, read out of the reader so it can be formatted (and tested) on its own.
struct JournalEntry {
    var realtime: UInt64
    var cursor: String?
    var fields: [JournalField]

    init(realtime: UInt64, cursor: String? = nil, fields: [JournalField]) {
        self.realtime = realtime
        self.cursor = cursor
        self.fields = fields
    }

    init(_ reader: JournalReader) {
        self.init(realtime: reader.realtimeUSec ?? 0, cursor: reader.cursor, fields: reader.allFields())
    }

    func first(_ name: String) -> JournalField? { fields.first { $0.name == name } }
}

/// scened's journal entries, selected and printed the way `systemctl status` and journalctl do.
struct JournalView {
    /// Only the daemon's own entries, optionally of one session or app (the fields scened logs).
    var session: String?
    var app: String?
    /// Journal files in this directory instead of the system's (journalctl -D; tests).
    var directory: String?

    var matches: [String] {
        ["SYSLOG_IDENTIFIER=scened"] + (session.map { ["SCENED_SESSION=\($0)"] } ?? []) + (app.map { ["SCENED_APP=\($0)"] } ?? [])
    }

    func open() throws(SystemdError) -> JournalReader {
        let reader: JournalReader
        if let directory {
            reader = try JournalReader(directory: directory)
        } else {
            reader = try JournalReader()
        }
        // Different fields are ANDed.
        for match in matches { try reader.addMatch(match) }
        return reader
    }

    /// Emits the last `count` entries (all when nil), oldest first; with `follow`, then every
    /// new one until `shouldStop` or `emit` throws.
    static func read(_ reader: JournalReader, count: Int?, follow: Bool, shouldStop: () -> Bool,
                     emit: (JournalEntry) throws -> Void) throws {
        if let count {
            try reader.seekTail()
            var newest: [JournalEntry] = []
            while newest.count < count, reader.previous() { newest.append(JournalEntry(reader)) }
            for entry in newest.reversed() { try emit(entry) }
            if follow {
                // Continue right after the newest entry shown, so nothing is printed twice or lost.
                if let cursor = newest.first?.cursor {
                    try reader.seek(cursor: cursor)
                    _ = reader.next()
                } else {
                    try reader.seekAfterLastEntry()
                }
            }
        } else {
            try reader.seekHead()
            while reader.next() { try emit(JournalEntry(reader)) }
        }
        guard follow else { return }
        while !shouldStop() {
            // Bounded waits so that shouldStop is seen; the binary ends on SIGINT anyway.
            _ = try reader.wait(timeoutUSec: 100_000)
            while reader.next() { try emit(JournalEntry(reader)) }
        }
    }

    // MARK: Formatting

    /// journalctl's short format: "Nov 29 16:40:01 scened[1234]: message"; continuation lines
    /// are indented under the message. Nil for entries without MESSAGE, which journalctl skips.
    static func shortLine(_ entry: JournalEntry, time: TimeFormatter) -> String? {
        guard let message = entry.first("MESSAGE") else { return nil }
        let identifier = (entry.first("SYSLOG_IDENTIFIER") ?? entry.first("_COMM"))?.value ?? "unknown"
        let pid = (entry.first("SYSLOG_PID") ?? entry.first("_PID")).map { "[\($0.value)]" } ?? ""
        let prefix = "\(time.journalTime(Int64(clamping: entry.realtime))) \(identifier)\(pid): "
        guard let text = printable(message.bytes) else {
            return prefix + "[\(ByteSize.format(UInt64(message.bytes.count))) blob data]"
        }
        let indent = String(repeating: " ", count: prefix.count)
        return prefix + text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent)
    }

    /// journalctl -o json: every field (a repeated one as an array, a binary one as an array of
    /// byte values), plus __CURSOR and __REALTIME_TIMESTAMP.
    static func jsonLine(_ entry: JournalEntry) -> String {
        JSONValue.object(jsonObject(entry)).serializedString()
    }

    /// The entry as journalctl -o json shows it: one member per field, repeated fields as arrays,
    /// binary values as arrays of bytes.
    static func jsonObject(_ entry: JournalEntry) -> JSONObject {
        var object = JSONObject()
        if let cursor = entry.cursor { object["__CURSOR"] = .string(cursor) }
        object["__REALTIME_TIMESTAMP"] = .string(String(entry.realtime))
        var names: [String] = []
        var values: [String: [JSONValue]] = [:]
        for field in entry.fields {
            if values[field.name] == nil { names.append(field.name) }
            values[field.name, default: []].append(printable(field.bytes).map { .string($0) }
                ?? .array(field.bytes.map { .int(Int64($0)) }))
        }
        for name in names {
            let all = values[name]!
            object[name] = all.count == 1 ? all[0] : .array(all)
        }
        return object
    }

    /// The text when it is valid UTF-8 without control characters other than newline and tab.
    static func printable(_ bytes: [UInt8]) -> String? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        for scalar in text.unicodeScalars where scalar.value < 0x20 || scalar.value == 0x7f {
            if scalar != "\n" && scalar != "\t" { return nil }
        }
        return text
    }
}
