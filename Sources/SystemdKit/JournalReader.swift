import CSystemd
import Glibc

/// Reads journal entries (sd-journal(3)): matches, seeking, fields, and follow mode.
///
/// Not thread-safe and tied to the creating process, like the underlying sd_journal: use it
/// on one thread (for follow mode, the event loop's).
public final class JournalReader {
    /// What changed, from `wait` or `process`.
    public enum WaitResult: Sendable, Hashable {
        /// Nothing changed (a timeout or a spurious wake-up).
        case nop
        /// New entries were appended; keep calling `next()` from where you were.
        case append
        /// Files were added or removed (rotation, vacuuming): entries may have appeared anywhere.
        case invalidate
    }

    private let journal: OpaquePointer

    /// Opens the journals of the system (and, unless `systemOnly`, the current user).
    /// `localOnly` skips journals of other machines (e.g. from systemd-journal-remote).
    public init(localOnly: Bool = true, systemOnly: Bool = false) throws(SystemdError) {
        var flags: Int32 = 0
        if localOnly { flags |= Int32(SD_JOURNAL_LOCAL_ONLY) }
        if systemOnly { flags |= Int32(SD_JOURNAL_SYSTEM) }
        var journal: OpaquePointer?
        try SystemdError.check(sd_journal_open(&journal, flags), "sd_journal_open")
        self.journal = journal!
    }

    /// Opens the journal files in `directory` (e.g. `/var/log/journal/<machine-id>`).
    public init(directory: String) throws(SystemdError) {
        var journal: OpaquePointer?
        try SystemdError.check(sd_journal_open_directory(&journal, directory, 0), "sd_journal_open_directory")
        self.journal = journal!
    }

    /// Opens exactly the given journal files.
    public init(files: [String]) throws(SystemdError) {
        var journal: OpaquePointer?
        // strdup'd so the C array outlives the Swift strings' temporary C views.
        var paths: [UnsafePointer<CChar>?] = files.map { UnsafePointer(strdup($0)) }
        paths.append(nil)
        defer { for path in paths { free(UnsafeMutablePointer(mutating: path)) } }
        try SystemdError.check(sd_journal_open_files(&journal, &paths, 0), "sd_journal_open_files")
        self.journal = journal!
    }

    deinit {
        sd_journal_close(journal)
    }

    // MARK: Matches

    /// Adds a `FIELD=value` match. Matches on the same field are ORed, on different fields
    /// ANDed, until `addDisjunction()`/`addConjunction()` start a new group.
    public func addMatch(_ match: String) throws(SystemdError) {
        try SystemdError.check(sd_journal_add_match(journal, match, 0), "sd_journal_add_match")
    }

    /// ORs the matches added so far with the ones added next.
    public func addDisjunction() throws(SystemdError) {
        try SystemdError.check(sd_journal_add_disjunction(journal), "sd_journal_add_disjunction")
    }

    /// ANDs the disjunctions added so far with the ones added next.
    public func addConjunction() throws(SystemdError) {
        try SystemdError.check(sd_journal_add_conjunction(journal), "sd_journal_add_conjunction")
    }

    /// Removes all matches.
    public func flushMatches() {
        sd_journal_flush_matches(journal)
    }

    // MARK: Position

    /// Before the first entry; `next()` then reads it.
    public func seekHead() throws(SystemdError) {
        try SystemdError.check(sd_journal_seek_head(journal), "sd_journal_seek_head")
    }

    /// After the last entry; `previous()` then reads it, and `next()` waits for new ones.
    public func seekTail() throws(SystemdError) {
        try SystemdError.check(sd_journal_seek_tail(journal), "sd_journal_seek_tail")
    }

    /// Positions after the last matching entry, so that `next()` returns exactly the entries
    /// appended from now on, in order: the starting point for following.
    ///
    /// Plain `seekTail()` is not enough when nothing matches yet: `next()` from the tail then
    /// jumps to the newest entry, skipping others appended meanwhile (seen with 252). Stepping
    /// back onto the last entry avoids that; with no entry at all, the head is the same place.
    public func seekAfterLastEntry() throws(SystemdError) {
        try seekTail()
        if !previous() { try seekHead() }
    }

    /// Next to the entry with `cursor` (or the nearest one); call `next()` to read it.
    public func seek(cursor: String) throws(SystemdError) {
        try SystemdError.check(sd_journal_seek_cursor(journal, cursor), "sd_journal_seek_cursor")
    }

    /// Next to the first entry at or after `realtimeUSec` (µs since the epoch).
    public func seek(realtimeUSec: UInt64) throws(SystemdError) {
        try SystemdError.check(sd_journal_seek_realtime_usec(journal, realtimeUSec), "sd_journal_seek_realtime_usec")
    }

    /// Moves to the next matching entry; false at the end (or on a read error).
    public func next() -> Bool {
        sd_journal_next(journal) > 0
    }

    /// Moves to the previous matching entry; false at the beginning (or on a read error).
    public func previous() -> Bool {
        sd_journal_previous(journal) > 0
    }

    // MARK: The current entry

    /// The first value of field `name` in the current entry, decoded as UTF-8.
    public func field(_ name: String) -> String? {
        data(name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The first value of field `name` in the current entry, as bytes.
    public func data(_ name: String) -> [UInt8]? {
        var pointer: UnsafeRawPointer?
        var length = 0
        guard sd_journal_get_data(journal, name, &pointer, &length) >= 0, let pointer else { return nil }
        return Self.value(of: name, in: UnsafeRawBufferPointer(start: pointer, count: length))
    }

    /// Every value of field `name` in the current entry, in order (a field may repeat).
    public func allValues(of name: String) -> [String] {
        var values: [String] = []
        forEachField { raw in
            if let value = Self.value(of: name, in: raw) { values.append(String(decoding: value, as: UTF8.self)) }
        }
        return values
    }

    /// All fields of the current entry, trusted (`_PID`, …) ones included.
    public func allFields() -> [JournalField] {
        var fields: [JournalField] = []
        forEachField { raw in
            guard let equals = raw.firstIndex(of: UInt8(ascii: "=")) else { return }
            fields.append(JournalField(
                name: String(decoding: raw[..<equals], as: UTF8.self), bytes: Array(raw[(equals + 1)...])))
        }
        return fields
    }

    private func forEachField(_ body: (UnsafeRawBufferPointer) -> Void) {
        sd_journal_restart_data(journal)
        var pointer: UnsafeRawPointer?
        var length = 0
        while sd_journal_enumerate_data(journal, &pointer, &length) > 0, let pointer {
            body(UnsafeRawBufferPointer(start: pointer, count: length))
        }
    }

    /// The bytes after "NAME=" when `raw` (journal data, not NUL-terminated) is field `name`.
    private static func value(of name: String, in raw: UnsafeRawBufferPointer) -> [UInt8]? {
        let prefix = name.utf8
        guard raw.count > prefix.count, raw[prefix.count] == UInt8(ascii: "="),
              raw.prefix(prefix.count).elementsEqual(prefix) else { return nil }
        return Array(raw[(prefix.count + 1)...])
    }

    /// When the current entry was written, in µs since the epoch.
    public var realtimeUSec: UInt64? {
        var usec: UInt64 = 0
        return sd_journal_get_realtime_usec(journal, &usec) >= 0 ? usec : nil
    }

    /// An opaque, stable position of the current entry, for `seek(cursor:)` later.
    public var cursor: String? {
        var text: UnsafeMutablePointer<CChar>?
        guard sd_journal_get_cursor(journal, &text) >= 0, let text else { return nil }
        defer { free(text) }
        return String(cString: text)
    }

    /// Whether the current entry is the one `cursor` names.
    public func test(cursor: String) -> Bool {
        sd_journal_test_cursor(journal, cursor) > 0
    }

    /// Fields larger than this (bytes; default 64 KiB) may be truncated; 0 means no limit.
    public func setDataThreshold(_ bytes: Int) throws(SystemdError) {
        try SystemdError.check(sd_journal_set_data_threshold(journal, bytes), "sd_journal_set_data_threshold")
    }

    // MARK: Following

    /// Blocks up to `timeoutUSec` (µs; `UInt64.max` for ever) until the journal changes.
    public func wait(timeoutUSec: UInt64) throws(SystemdError) -> WaitResult {
        Self.result(try SystemdError.check(sd_journal_wait(journal, timeoutUSec), "sd_journal_wait"))
    }

    /// An inotify fd that becomes readable when the journal changes; watch it with
    /// `EventLoop.addIO(fd:events:)` using `pollEvents`, and call `process()` when it fires.
    /// Fetch it right after opening, so no change between opening and watching is missed.
    public var fd: Int32 {
        get throws(SystemdError) { try SystemdError.check(sd_journal_get_fd(journal), "sd_journal_get_fd") }
    }

    /// The events to watch `fd` for.
    public var pollEvents: IOEvents {
        get throws(SystemdError) {
            IOEvents(rawValue: UInt32(try SystemdError.check(sd_journal_get_events(journal), "sd_journal_get_events")))
        }
    }

    /// After `fd` fired: what changed. Then read on with `next()`.
    public func process() throws(SystemdError) -> WaitResult {
        Self.result(try SystemdError.check(sd_journal_process(journal), "sd_journal_process"))
    }

    private static func result(_ code: Int32) -> WaitResult {
        switch code {
        case Int32(SD_JOURNAL_APPEND): .append
        case Int32(SD_JOURNAL_INVALIDATE): .invalidate
        default: .nop
        }
    }
}
