/// Strict RFC 8259 parser producing `JSONValue`.
///
/// Beyond the grammar it rejects invalid UTF-8 (overlongs, surrogates, code points above
/// U+10FFFF), unpaired `\u` surrogates, duplicate keys, non-finite numbers and nesting deeper
/// than `maxDepth`.
public enum JSONParser {
    public static let defaultMaxDepth = 128

    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONError) -> JSONValue {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            throw JSONError(offset: 0, kind: .unexpectedEnd)
        }
        var reader = JSONReader(base: base.assumingMemoryBound(to: UInt8.self), end: bytes.count, maxDepth: maxDepth)
        return try reader.parseDocument()
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONError) -> JSONValue {
        // withUnsafeBytes is only `rethrows`; a Result carries the typed error across it.
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONError) in try parse(buffer, maxDepth: maxDepth) }
        }.get()
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONError) -> JSONValue {
        var text = text
        return try text.withUTF8 { buffer in
            Result { () throws(JSONError) in try parse(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth) }
        }.get()
    }
}

/// The parser's cursor over one input buffer.
struct JSONReader {
    let base: UnsafePointer<UInt8>
    let end: Int
    let maxDepth: Int
    var pos = 0
    var depth = 0

    init(base: UnsafePointer<UInt8>, end: Int, maxDepth: Int) {
        self.base = base
        self.end = end
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard pos == end else { throw failure(.trailingCharacters) }
        return value
    }

    func failure(_ kind: JSONError.Kind, at offset: Int? = nil) -> JSONError {
        JSONError(offset: offset ?? pos, kind: kind)
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < end {
            switch base[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONError) -> JSONValue {
        guard pos < end else { throw failure(.unexpectedEnd) }
        switch base[pos] {
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "{"):
            return .object(try parseObject())
        case UInt8(ascii: "["):
            return .array(try parseArray())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            throw unexpectedByte()
        }
    }

    /// Reports a stray byte; a non-ASCII one is checked first so broken UTF-8 is named as such.
    func unexpectedByte() -> JSONError {
        if base[pos] >= 0x80 {
            var probe = self
            do throws(JSONError) {
                try probe.skipUTF8Sequence()
            } catch {
                return error
            }
        }
        return failure(.unexpectedCharacter)
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        let text = literal.utf8Start
        for i in 0..<count {
            guard pos + i < end else { throw failure(.unexpectedEnd, at: end) }
            guard base[pos + i] == text[i] else { throw failure(.invalidLiteral) }
        }
        pos += count
    }

    mutating func enterContainer() throws(JSONError) {
        depth += 1
        guard depth <= maxDepth else { throw failure(.tooDeep) }
        pos += 1
        skipWhitespace()
    }

    mutating func parseObject() throws(JSONError) -> JSONObject {
        try enterContainer()
        var object = JSONObject(minimumCapacity: 4)
        if pos < end, base[pos] == UInt8(ascii: "}") {
            pos += 1
            depth -= 1
            return object
        }
        while true {
            guard pos < end else { throw failure(.unexpectedEnd) }
            guard base[pos] == UInt8(ascii: "\"") else { throw unexpectedByte() }
            let keyOffset = pos
            let key = try parseString(interning: depth == 1)
            guard !object.contains(key: key) else { throw failure(.duplicateKey, at: keyOffset) }
            skipWhitespace()
            guard pos < end else { throw failure(.unexpectedEnd) }
            guard base[pos] == UInt8(ascii: ":") else { throw unexpectedByte() }
            pos += 1
            skipWhitespace()
            object.appendNew(key, try parseValue())
            if try endOfMember(closing: UInt8(ascii: "}")) { return object }
        }
    }

    /// After an object member or array element: a comma (false, and on to the next) or the
    /// container's closing byte (true, and the container is left).
    private mutating func endOfMember(closing: UInt8) throws(JSONError) -> Bool {
        skipWhitespace()
        guard pos < end else { throw failure(.unexpectedEnd) }
        switch base[pos] {
        case UInt8(ascii: ","):
            pos += 1
            skipWhitespace()
            return false
        case closing:
            pos += 1
            depth -= 1
            return true
        default:
            throw unexpectedByte()
        }
    }

    mutating func parseArray() throws(JSONError) -> [JSONValue] {
        try enterContainer()
        var array: [JSONValue] = []
        if pos < end, base[pos] == UInt8(ascii: "]") {
            pos += 1
            depth -= 1
            return array
        }
        array.reserveCapacity(4)
        while true {
            array.append(try parseValue())
            if try endOfMember(closing: UInt8(ascii: "]")) { return array }
        }
    }
}
