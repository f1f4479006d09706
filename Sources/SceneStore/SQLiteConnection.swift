import CSQLite
import SceneCore

/// SQLITE_TRANSIENT is a macro Swift does not import; -1 tells SQLite to copy the bytes at once,
/// so a Swift buffer only has to live for the bind call.
@inline(__always) var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
}

/// One open SQLite connection, used from one thread. Errors come back as `StoreError`s that name
/// the file.
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    /// The log's length after each commit (`watchLog`), kept alive with the connection.
    private(set) var log: LogWatch?

    /// Opens an existing file only (no SQLITE_OPEN_CREATE): the store creates the file itself, so
    /// SQLite can never make a new database where an old one was expected.
    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot allocate a connection"
            let err = db.map { sqlite3_system_errno($0) } ?? 0
            sqlite3_close(db)
            throw StoreError(sqlite: rc, sqliteMessage: message, systemErrno: err, path: path, context: "opening")
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        // A scened database is never touched by anyone else's busy work for long (flock keeps
        // other daemons out); this covers an operator's sqlite3 shell writing.
        sqlite3_busy_timeout(db, 1000)
    }

    func close() {
        sqlite3_close_v2(handle)
    }

    /// Replaces SQLite's autocheckpoint with a hook that does the same (a passive checkpoint
    /// once the log holds `checkpointAt` frames) and also records the log's length, so that
    /// the store can tell whether its next commit may run a checkpoint.
    func watchLog(checkpointAt: Int32) -> LogWatch {
        let watch = LogWatch(checkpointAt: checkpointAt)
        log = watch
        sqlite3_wal_hook(handle, logHook, Unmanaged.passUnretained(watch).toOpaque())
        return watch
    }

    func error(_ code: Int32, _ context: String) -> StoreError {
        StoreError(sqlite: code, sqliteMessage: String(cString: sqlite3_errmsg(handle)),
                   systemErrno: sqlite3_system_errno(handle), path: path, context: context)
    }

    /// Runs SQL that returns no rows (DDL, pragmas that set, transaction control).
    func execute(_ sql: String, _ context: String) throws(StoreError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, context) }
    }

    /// Prepares a statement. `persistent` ones are kept for the connection's life (SQLite then
    /// keeps them off its lookaside memory).
    func prepare(_ sql: String, persistent: Bool = true, _ context: String) throws(StoreError) -> Statement {
        var stmt: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let rc = sqlite3_prepare_v3(handle, sql, -1, flags, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, context) }
        return Statement(handle: stmt)
    }

    /// The first column of every row of a query, as text (pragmas that report).
    func texts(_ sql: String, _ context: String) throws(StoreError) -> [String] {
        let stmt = try prepare(sql, persistent: false, context)
        defer { stmt.finalize() }
        var out: [String] = []
        while true {
            let rc = stmt.step()
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw error(rc, context) }
            out.append(stmt.text(0))
        }
    }

    /// The first column of the first row, as an integer (nil when no row or NULL).
    func integer(_ sql: String, _ context: String) throws(StoreError) -> Int64? {
        let stmt = try prepare(sql, persistent: false, context)
        defer { stmt.finalize() }
        let rc = stmt.step()
        if rc == SQLITE_DONE { return nil }
        guard rc == SQLITE_ROW else { throw error(rc, context) }
        return stmt.isNull(0) ? nil : stmt.int64(0)
    }

    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
}

/// A prepared statement. A value type over the handle: the owner finalizes it exactly once.
struct Statement {
    let handle: OpaquePointer

    @inline(__always) func step() -> Int32 { sqlite3_step(handle) }

    /// Ready for the next use; bindings are all overwritten by the next use, so they are not
    /// cleared.
    @inline(__always) func reset() { sqlite3_reset(handle) }

    func finalize() { sqlite3_finalize(handle) }

    // MARK: Binding (1-based, as SQLite counts)

    @inline(__always) func bind(_ i: Int32, _ value: Int64) { sqlite3_bind_int64(handle, i, value) }
    @inline(__always) func bind(_ i: Int32, _ value: UInt64) { sqlite3_bind_int64(handle, i, Int64(bitPattern: value)) }
    @inline(__always) func bind(_ i: Int32, _ value: UInt32) { sqlite3_bind_int64(handle, i, Int64(value)) }
    @inline(__always) func bind(_ i: Int32, _ value: UInt8) { sqlite3_bind_int64(handle, i, Int64(value)) }
    @inline(__always) func bind(_ i: Int32, _ value: Bool) { sqlite3_bind_int64(handle, i, value ? 1 : 0) }
    @inline(__always) func bindNull(_ i: Int32) { sqlite3_bind_null(handle, i) }
    /// NaN binds as NULL (SQLite would turn it into NULL anyway); `double` reads NULL back as NaN.
    @inline(__always) func bind(_ i: Int32, _ value: Double) {
        if value.isNaN { sqlite3_bind_null(handle, i) } else { sqlite3_bind_double(handle, i, value) }
    }

    @inline(__always) func bind(_ i: Int32, _ value: Timestamp?) {
        if let value { sqlite3_bind_int64(handle, i, value.microseconds) } else { sqlite3_bind_null(handle, i) }
    }

    /// Binds the string's own UTF-8 storage (no intermediate array or C string); SQLite copies it.
    @inline(__always) func bind(_ i: Int32, text: String) {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { buffer in
            bindText(i, buffer)
        }
        if done == nil {
            var copy = text
            copy.withUTF8 { bindText(i, $0) }
        }
    }

    @inline(__always) private func bindText(_ i: Int32, _ buffer: UnsafeBufferPointer<UInt8>) {
        // A NULL pointer would bind SQL NULL; the empty string must stay an empty string.
        if let base = buffer.baseAddress, buffer.count > 0 {
            base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                _ = sqlite3_bind_text(handle, i, $0, Int32(buffer.count), sqliteTransient)
            }
        } else {
            sqlite3_bind_text(handle, i, "", 0, sqliteTransient)
        }
    }

    @inline(__always) func bind(_ i: Int32, blob: UnsafeRawBufferPointer) {
        // Likewise a NULL pointer would bind NULL: an empty blob stays an empty blob.
        if let base = blob.baseAddress, blob.count > 0 {
            sqlite3_bind_blob(handle, i, base, Int32(blob.count), sqliteTransient)
        } else {
            sqlite3_bind_zeroblob(handle, i, 0)
        }
    }

    @inline(__always) func bind(_ i: Int32, blob: [UInt8]) {
        blob.withUnsafeBytes { bind(i, blob: $0) }
    }

    // MARK: Columns (0-based)

    @inline(__always) func isNull(_ c: Int32) -> Bool { sqlite3_column_type(handle, c) == SQLITE_NULL }
    @inline(__always) func type(_ c: Int32) -> Int32 { sqlite3_column_type(handle, c) }
    @inline(__always) func int64(_ c: Int32) -> Int64 { sqlite3_column_int64(handle, c) }
    @inline(__always) func uint64(_ c: Int32) -> UInt64 { UInt64(bitPattern: sqlite3_column_int64(handle, c)) }

    @inline(__always) func double(_ c: Int32) -> Double {
        isNull(c) ? .nan : sqlite3_column_double(handle, c)
    }

    @inline(__always) func timestamp(_ c: Int32) -> Timestamp { Timestamp(microseconds: sqlite3_column_int64(handle, c)) }
    @inline(__always) func optionalTimestamp(_ c: Int32) -> Timestamp? {
        isNull(c) ? nil : Timestamp(microseconds: sqlite3_column_int64(handle, c))
    }

    /// The column's UTF-8 bytes, valid until the next step or reset.
    @inline(__always) func textBytes(_ c: Int32) -> UnsafeBufferPointer<UInt8> {
        // column_text before column_bytes: the documented order that avoids a conversion.
        guard let p = sqlite3_column_text(handle, c) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, c)))
    }

    @inline(__always) func text(_ c: Int32) -> String {
        String(decoding: textBytes(c), as: UTF8.self)
    }

    /// The column's bytes, valid until the next step or reset.
    @inline(__always) func blobBytes(_ c: Int32) -> UnsafeRawBufferPointer {
        guard let p = sqlite3_column_blob(handle, c) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, c)))
    }
}

/// The write-ahead log's length in frames as of the last commit (SQLite's WAL hook).
final class LogWatch {
    let checkpointAt: Int32
    /// Unknown until the first commit reports it: a log left from before may be long.
    var frames: Int32

    init(checkpointAt: Int32) {
        self.checkpointAt = checkpointAt
        frames = checkpointAt
    }
}

/// SQLite's WAL hook (after each commit, on the committing thread): records the length and
/// checkpoints as `sqlite3_wal_autocheckpoint`'s own hook would.
private func logHook(_ context: UnsafeMutableRawPointer?, _ db: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                     _ frames: Int32) -> Int32 {
    guard let context else { return SQLITE_OK }
    let watch = Unmanaged<LogWatch>.fromOpaque(context).takeUnretainedValue()
    watch.frames = frames
    if frames >= watch.checkpointAt { _ = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil) }
    return SQLITE_OK
}
