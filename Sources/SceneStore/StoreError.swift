import CSQLite
import Glibc

/// A storage failure. `description` names the file and the problem, so it can go straight to the
/// journal and to a caller: "/var/lib/scened/scened.db: loading sessions: database disk image is
/// malformed (SQLITE_CORRUPT)".
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The file is damaged: bad header, malformed page, or a row the store cannot do without
        /// (the counters) that does not decode.
        case corrupt
        /// The write-ahead log holds committed transactions beyond a damaged frame, which SQLite
        /// would drop without a word. Nothing was opened or rewritten; copies of the database,
        /// the log and the wal-index are in `evidence`. Opening with `recover: true` proceeds.
        case damagedLog(evidence: String)
        /// The file is not an SQLite database, or is one that is not scened's.
        case notADatabase
        /// Written by a newer scened; this one will not guess at it.
        case newerSchema(found: Int, supported: Int)
        /// The file or its directory cannot be written (read-only mount, immutable, permissions).
        case notWritable
        /// No space left (SQLITE_FULL, ENOSPC, EDQUOT).
        case diskFull
        /// An I/O error reading or writing.
        case io
        /// The file cannot be opened or created: missing directory, a path through a regular file,
        /// a directory where the file should be.
        case cantOpen
        /// Another process holds the database (another scened).
        case locked
        /// SQLite stayed busy past the timeout (something else is writing to the file).
        case busy
        /// The batch broke a constraint (duplicate event sequence number, invalid state); nothing
        /// of it was written.
        case constraint
        /// The store was used wrongly: closed, or given a record that refers to nothing stored.
        case misuse
        /// Any other SQLite failure (out of memory, ...); `code` says which.
        case other
    }

    public var kind: Kind
    /// The database file concerned.
    public var path: String
    /// What went wrong, without the path.
    public var message: String
    /// The SQLite extended result code, 0 when the error did not come from SQLite.
    public var code: Int32

    public init(kind: Kind, path: String, message: String, code: Int32 = 0) {
        self.kind = kind
        self.path = path
        self.message = message
        self.code = code
    }

    public var description: String { "\(path): \(message)" }

    /// An error SQLite reported, with what the store was doing (`context`). `systemErrno` refines
    /// SQLite's I/O codes: ENOSPC under SQLITE_IOERR is a full disk, EROFS is a read-only file.
    init(sqlite code: Int32, sqliteMessage: String, systemErrno: Int32 = 0, path: String, context: String) {
        var kind: Kind
        switch code & 0xff {
        case SQLITE_CORRUPT: kind = .corrupt
        case SQLITE_NOTADB: kind = .notADatabase
        case SQLITE_FULL: kind = .diskFull
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH: kind = .notWritable
        case SQLITE_CANTOPEN: kind = .cantOpen
        case SQLITE_IOERR: kind = .io
        case SQLITE_BUSY, SQLITE_LOCKED: kind = .busy
        case SQLITE_CONSTRAINT: kind = .constraint
        case SQLITE_MISUSE: kind = .misuse
        default: kind = .other
        }
        var message = "\(context): \(sqliteMessage) (\(SQLiteCodeName.name(of: code))"
        if systemErrno != 0, kind == .io || kind == .cantOpen || kind == .diskFull || kind == .notWritable {
            switch systemErrno {
            case ENOSPC, EDQUOT: kind = .diskFull
            case EROFS, EACCES, EPERM: kind = .notWritable
            default: break
            }
            message += ", \(StoreError.errnoText(systemErrno))"
        }
        message += ")"
        self.init(kind: kind, path: path, message: message, code: code)
    }

    /// An error from a system call made by the store itself (open, flock, pread).
    init(errno err: Int32, path: String, context: String) {
        let kind: Kind
        switch err {
        case ENOSPC, EDQUOT: kind = .diskFull
        case EROFS, EACCES, EPERM, ETXTBSY: kind = .notWritable
        case EWOULDBLOCK: kind = .locked
        case EIO: kind = .io
        default: kind = .cantOpen
        }
        self.init(kind: kind, path: path, message: "\(context): \(StoreError.errnoText(err))")
    }

    static func errnoText(_ err: Int32) -> String {
        let text = strerror(err).map { String(cString: $0) } ?? "error"
        return "\(text) (\(SQLiteCodeName.errnoName(err)))"
    }
}

/// Symbolic names, so a message says SQLITE_CORRUPT rather than 11.
enum SQLiteCodeName {
    static func name(of code: Int32) -> String {
        if let extended = extendedNames[code] { return extended }
        let primary = code & 0xff
        let base = primaryNames[primary] ?? "SQLITE_ERROR \(primary)"
        return code == primary ? base : "\(base), extended code \(code)"
    }

    static let primaryNames: [Int32: String] = [
        SQLITE_ERROR: "SQLITE_ERROR", SQLITE_INTERNAL: "SQLITE_INTERNAL", SQLITE_PERM: "SQLITE_PERM",
        SQLITE_ABORT: "SQLITE_ABORT", SQLITE_BUSY: "SQLITE_BUSY", SQLITE_LOCKED: "SQLITE_LOCKED",
        SQLITE_NOMEM: "SQLITE_NOMEM", SQLITE_READONLY: "SQLITE_READONLY", SQLITE_INTERRUPT: "SQLITE_INTERRUPT",
        SQLITE_IOERR: "SQLITE_IOERR", SQLITE_CORRUPT: "SQLITE_CORRUPT", SQLITE_NOTFOUND: "SQLITE_NOTFOUND",
        SQLITE_FULL: "SQLITE_FULL", SQLITE_CANTOPEN: "SQLITE_CANTOPEN", SQLITE_PROTOCOL: "SQLITE_PROTOCOL",
        SQLITE_SCHEMA: "SQLITE_SCHEMA", SQLITE_TOOBIG: "SQLITE_TOOBIG", SQLITE_CONSTRAINT: "SQLITE_CONSTRAINT",
        SQLITE_MISMATCH: "SQLITE_MISMATCH", SQLITE_MISUSE: "SQLITE_MISUSE", SQLITE_NOLFS: "SQLITE_NOLFS",
        SQLITE_AUTH: "SQLITE_AUTH", SQLITE_RANGE: "SQLITE_RANGE", SQLITE_NOTADB: "SQLITE_NOTADB",
    ]

    // The extended codes worth telling apart in a journal entry (sqlite3.h: primary | n << 8).
    static let extendedNames: [Int32: String] = [
        SQLITE_IOERR | (1 << 8): "SQLITE_IOERR_READ", SQLITE_IOERR | (2 << 8): "SQLITE_IOERR_SHORT_READ",
        SQLITE_IOERR | (3 << 8): "SQLITE_IOERR_WRITE", SQLITE_IOERR | (4 << 8): "SQLITE_IOERR_FSYNC",
        SQLITE_IOERR | (6 << 8): "SQLITE_IOERR_TRUNCATE", SQLITE_IOERR | (7 << 8): "SQLITE_IOERR_FSTAT",
        SQLITE_IOERR | (10 << 8): "SQLITE_IOERR_DELETE", SQLITE_IOERR | (13 << 8): "SQLITE_IOERR_ACCESS",
        SQLITE_IOERR | (15 << 8): "SQLITE_IOERR_LOCK", SQLITE_IOERR | (18 << 8): "SQLITE_IOERR_SHMOPEN",
        SQLITE_IOERR | (19 << 8): "SQLITE_IOERR_SHMSIZE", SQLITE_IOERR | (21 << 8): "SQLITE_IOERR_SHMMAP",
        SQLITE_IOERR | (24 << 8): "SQLITE_IOERR_MMAP",
        SQLITE_CORRUPT | (1 << 8): "SQLITE_CORRUPT_VTAB", SQLITE_CORRUPT | (2 << 8): "SQLITE_CORRUPT_SEQUENCE",
        SQLITE_CORRUPT | (3 << 8): "SQLITE_CORRUPT_INDEX",
        SQLITE_READONLY | (1 << 8): "SQLITE_READONLY_RECOVERY", SQLITE_READONLY | (2 << 8): "SQLITE_READONLY_CANTLOCK",
        SQLITE_READONLY | (3 << 8): "SQLITE_READONLY_ROLLBACK", SQLITE_READONLY | (4 << 8): "SQLITE_READONLY_DBMOVED",
        SQLITE_READONLY | (5 << 8): "SQLITE_READONLY_CANTINIT", SQLITE_READONLY | (6 << 8): "SQLITE_READONLY_DIRECTORY",
        SQLITE_CANTOPEN | (3 << 8): "SQLITE_CANTOPEN_FULLPATH", SQLITE_CANTOPEN | (2 << 8): "SQLITE_CANTOPEN_ISDIR",
        SQLITE_CONSTRAINT | (1 << 8): "SQLITE_CONSTRAINT_CHECK", SQLITE_CONSTRAINT | (5 << 8): "SQLITE_CONSTRAINT_NOTNULL",
        SQLITE_CONSTRAINT | (6 << 8): "SQLITE_CONSTRAINT_PRIMARYKEY", SQLITE_CONSTRAINT | (8 << 8): "SQLITE_CONSTRAINT_UNIQUE",
        SQLITE_BUSY | (1 << 8): "SQLITE_BUSY_RECOVERY", SQLITE_BUSY | (2 << 8): "SQLITE_BUSY_SNAPSHOT",
        SQLITE_BUSY | (3 << 8): "SQLITE_BUSY_TIMEOUT",
    ]

    static func errnoName(_ err: Int32) -> String {
        switch err {
        case ENOSPC: "ENOSPC"
        case EDQUOT: "EDQUOT"
        case EROFS: "EROFS"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EIO: "EIO"
        case EWOULDBLOCK: "EWOULDBLOCK"
        case ETXTBSY: "ETXTBSY"
        case ELOOP: "ELOOP"
        case ENAMETOOLONG: "ENAMETOOLONG"
        default: "errno \(err)"
        }
    }
}
