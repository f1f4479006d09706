import CSQLite
import SceneCore

/// Reads one row's columns with their checks: each accessor returns a usable value and notes
/// the first problem, so a row is read in one pass and rejected once, with the reason that
/// comes first. SQLite is dynamically typed: a damaged row may hold text where an integer
/// belongs, which sqlite3_column_int64 would quietly turn into 0.
struct RowCheck {
    let s: Statement
    private(set) var problem: String?

    init(_ s: Statement) { self.s = s }

    var isValid: Bool { problem == nil }

    /// Called only on the failing path, so building the reason costs nothing on good rows.
    mutating func fail(_ reason: String) {
        if problem == nil { problem = reason }
    }

    @inline(__always)
    mutating func integer(_ c: Int32, _ column: StaticString) -> Int64 {
        // The column looked up once for its type and its value (column_type, then column_int64,
        // would look it up twice, for every column of every row). The value is SQLite's
        // "unprotected" kind, i.e. read without the connection's mutex: the store's connection
        // has none (NOMUTEX) and one thread at a time.
        let value = sqlite3_column_value(s.handle, c)
        guard sqlite3_value_type(value) == SQLITE_INTEGER else {
            notInteger(c, column)
            return 0
        }
        return sqlite3_value_int64(value)
    }

    /// Out of line: the failing path stays out of every inlined read.
    @inline(never)
    private mutating func notInteger(_ c: Int32, _ column: StaticString) {
        fail("\(column) is \(Self.typeName(s.type(c))), not an integer")
    }

    mutating func optionalInteger(_ c: Int32, _ column: StaticString) -> Int64? {
        s.isNull(c) ? nil : integer(c, column)
    }

    @inline(__always)
    mutating func timestamp(_ c: Int32, _ column: StaticString) -> Timestamp {
        Timestamp(microseconds: integer(c, column))
    }

    mutating func optionalTimestamp(_ c: Int32, _ column: StaticString) -> Timestamp? {
        optionalInteger(c, column).map { Timestamp(microseconds: $0) }
    }

    @inline(__always)
    mutating func uint32(_ c: Int32, _ column: StaticString) -> UInt32 {
        let value = integer(c, column)
        guard let v = UInt32(exactly: value) else {
            fail("\(column) \(value) is out of range")
            return 0
        }
        return v
    }

    @inline(__always)
    mutating func flag(_ c: Int32, _ column: StaticString) -> Bool {
        let value = integer(c, column)
        guard value == 0 || value == 1 else {
            fail("\(column) is \(value), neither 0 nor 1")
            return false
        }
        return value == 1
    }

    /// Bytes stored as an unsigned 64-bit value (SQLite keeps its bit pattern).
    @inline(__always)
    mutating func unsigned(_ c: Int32, _ column: StaticString) -> UInt64 {
        UInt64(bitPattern: integer(c, column))
    }

    /// Text that is well-formed UTF-8.
    mutating func text(_ c: Int32, _ column: StaticString) -> String {
        guard s.type(c) == SQLITE_TEXT else {
            fail("\(column) is \(Self.typeName(s.type(c))), not text")
            return ""
        }
        let bytes = s.textBytes(c)
        guard UTF8Check.isValid(bytes) else {
            fail("\(column) is not valid UTF-8")
            return ""
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Text that is one JSON object: what userInfo is, and what replies carry verbatim.
    mutating func jsonObject(_ c: Int32, _ column: StaticString) -> String {
        guard s.type(c) == SQLITE_TEXT else {
            fail("\(column) is \(Self.typeName(s.type(c))), not text")
            return "{}"
        }
        let bytes = s.textBytes(c)
        // Most sessions have no userInfo: the empty object, with nothing to check or copy.
        if bytes.count == 2 && bytes[0] == UInt8(ascii: "{") && bytes[1] == UInt8(ascii: "}") { return "{}" }
        guard JSONCheck.isObject(bytes) else {
            fail("\(column) is not a JSON object (\(Self.excerpt(bytes)))")
            return "{}"
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A session's restoration data: none, a JSON object (text) or opaque bytes (a blob).
    mutating func restoration(_ c: Int32, _ column: StaticString) -> RestorationData? {
        switch s.type(c) {
        case SQLITE_NULL:
            return nil
        case SQLITE_BLOB:
            return .bytes(Array(s.blobBytes(c)))
        case SQLITE_TEXT:
            let bytes = s.textBytes(c)
            guard JSONCheck.isObject(bytes) else {
                fail("\(column) is text but not a JSON object (\(Self.excerpt(bytes)))")
                return nil
            }
            return .json(String(decoding: bytes, as: UTF8.self))
        default:
            fail("\(column) is \(Self.typeName(s.type(c))), neither text nor bytes")
            return nil
        }
    }

    /// A session id, task token or sequence number as a row stores it: from 1 up to what the
    /// counters can ever reach.
    static func isStoredNumber(_ value: Int64) -> Bool {
        value > 0 && UInt64(value) < Tuning.storedNumberLimit
    }

    static func typeName(_ type: Int32) -> String {
        switch type {
        case SQLITE_NULL: "NULL"
        case SQLITE_INTEGER: "an integer"
        case SQLITE_FLOAT: "a real number"
        case SQLITE_TEXT: "text"
        default: "a blob"
        }
    }

    /// The start of a damaged value, printable, for a reason.
    static func excerpt(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        var out = ""
        for b in bytes.prefix(24) {
            if b == UInt8(ascii: "\\") || b == UInt8(ascii: "\"") {
                out += "\\" + String(Unicode.Scalar(b))
            } else if b >= 0x20 && b < 0x7f {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "\\x" + (b < 16 ? "0" : "") + String(b, radix: 16)
            }
        }
        return bytes.count > 24 ? "begins \"\(out)…\"" : "\"\(out)\""
    }
}
