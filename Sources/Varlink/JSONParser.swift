import Glibc

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

extension JSONReader {
    /// Parses a number. Plain integers that fit `Int64` are accumulated directly; anything with a
    /// fraction, an exponent or too many digits goes through the standard library's
    /// locale-independent `Double(_:)`.
    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = pos
        let negative = base[pos] == UInt8(ascii: "-")
        if negative { pos += 1 }
        guard pos < end, isDigit(base[pos]) else { throw failure(pos < end ? .invalidNumber : .unexpectedEnd) }

        var magnitude: UInt64 = 0
        var overflow = false
        if base[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < end, isDigit(base[pos]) { throw failure(.leadingZero, at: pos - 1) }
        } else {
            while pos < end, isDigit(base[pos]) {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(base[pos] &- UInt8(ascii: "0")))
                magnitude = sum
                overflow = overflow || o1 || o2
                pos += 1
            }
        }

        var integral = true
        if pos < end, base[pos] == UInt8(ascii: ".") {
            integral = false
            pos += 1
            try skipDigits()
        }
        if pos < end, base[pos] | 0x20 == UInt8(ascii: "e") {
            integral = false
            pos += 1
            if pos < end, base[pos] == UInt8(ascii: "+") || base[pos] == UInt8(ascii: "-") { pos += 1 }
            try skipDigits()
        }

        if integral, !overflow {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(truncatingIfNeeded: 0 &- magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw failure(.numberOutOfRange, at: start) }
        return .double(value)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// One or more digits, as required after '.' and after the exponent marker.
    private mutating func skipDigits() throws(JSONError) {
        guard pos < end else { throw failure(.unexpectedEnd) }
        guard isDigit(base[pos]) else { throw failure(.invalidNumber) }
        while pos < end, isDigit(base[pos]) { pos += 1 }
    }
}

extension JSONReader {
    /// Parses a string starting at its opening quote. Escape-free strings (the common case)
    /// are validated in one pass and copied once. With `interning`, the fixed keys of Varlink
    /// messages come back as literals, skipping String construction for every message.
    mutating func parseString(interning: Bool = false) throws(JSONError) -> String {
        pos += 1
        let start = pos
        while pos < end {
            let byte = base[pos]
            if byte == UInt8(ascii: "\"") {
                let bytes = UnsafeBufferPointer(start: base + start, count: pos - start)
                pos += 1
                if interning, let known = Self.varlinkKey(bytes) { return known }
                return String(decoding: bytes, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(from: start)
            }
            if byte < 0x20 { throw failure(.controlCharacter) }
            if byte < 0x80 {
                pos += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw failure(.unexpectedEnd)
    }

    private static func varlinkKey(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        func matches(_ literal: StaticString) -> Bool {
            memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
        }
        switch bytes.count {
        case 4: return matches("more") ? "more" : nil
        case 5: return matches("error") ? "error" : nil
        case 6: return matches("method") ? "method" : matches("oneway") ? "oneway" : nil
        case 7: return matches("upgrade") ? "upgrade" : nil
        case 9: return matches("continues") ? "continues" : nil
        case 10: return matches("parameters") ? "parameters" : nil
        default: return nil
        }
    }

    /// Slow path once a backslash has been seen: decode into a byte buffer.
    private mutating func parseEscapedString(from start: Int) throws(JSONError) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(pos - start + 16)
        decoded.append(contentsOf: UnsafeBufferPointer(start: base + start, count: pos - start))
        while pos < end {
            let byte = base[pos]
            switch byte {
            case UInt8(ascii: "\""):
                pos += 1
                return String(decoding: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try decodeEscape(into: &decoded)
            case ..<0x20:
                throw failure(.controlCharacter)
            case ..<0x80:
                decoded.append(byte)
                pos += 1
            default:
                let sequenceStart = pos
                try skipUTF8Sequence()
                decoded.append(contentsOf: UnsafeBufferPointer(start: base + sequenceStart, count: pos - sequenceStart))
            }
        }
        throw failure(.unexpectedEnd)
    }

    private mutating func decodeEscape(into decoded: inout [UInt8]) throws(JSONError) {
        let escapeStart = pos
        guard pos + 1 < end else { throw failure(.unexpectedEnd, at: end) }
        let code = base[pos + 1]
        pos += 2
        switch code {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(code)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try readHex4())
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed at once by an escaped low surrogate.
                guard pos + 1 < end, base[pos] == UInt8(ascii: "\\"), base[pos + 1] == UInt8(ascii: "u") else {
                    throw failure(.loneSurrogate, at: escapeStart)
                }
                pos += 2
                let low = UInt32(try readHex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw failure(.loneSurrogate, at: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure(.loneSurrogate, at: escapeStart)
            }
            appendUTF8(scalar, to: &decoded)
        default:
            throw failure(.invalidEscape, at: escapeStart)
        }
    }

    private mutating func readHex4() throws(JSONError) -> UInt16 {
        guard pos + 4 <= end else { throw failure(.unexpectedEnd, at: end) }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = base[pos]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure(.invalidEscape)
            }
            value = value << 4 | UInt16(digit)
            pos += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: UInt32, to bytes: inout [UInt8]) {
        switch scalar {
        case ..<0x80:
            bytes.append(UInt8(scalar))
        case ..<0x800:
            bytes.append(0xC0 | UInt8(scalar >> 6))
            bytes.append(0x80 | UInt8(scalar & 0x3F))
        case ..<0x10000:
            bytes.append(0xE0 | UInt8(scalar >> 12))
            bytes.append(0x80 | UInt8((scalar >> 6) & 0x3F))
            bytes.append(0x80 | UInt8(scalar & 0x3F))
        default:
            bytes.append(0xF0 | UInt8(scalar >> 18))
            bytes.append(0x80 | UInt8((scalar >> 12) & 0x3F))
            bytes.append(0x80 | UInt8((scalar >> 6) & 0x3F))
            bytes.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    /// Validates one multi-byte UTF-8 sequence at `pos` (RFC 3629 table: no overlongs,
    /// no surrogates, nothing above U+10FFFF) and steps over it.
    mutating func skipUTF8Sequence() throws(JSONError) {
        let lead = base[pos]
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        let continuationCount: Int
        switch lead {
        case 0xC2...0xDF: continuationCount = 1
        case 0xE0: continuationCount = 2; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: continuationCount = 2
        case 0xED: continuationCount = 2; high = 0x9F
        case 0xF0: continuationCount = 3; low = 0x90
        case 0xF1...0xF3: continuationCount = 3
        case 0xF4: continuationCount = 3; high = 0x8F
        default: throw failure(.invalidUTF8)
        }
        guard pos + continuationCount < end else { throw failure(.invalidUTF8) }
        let second = base[pos + 1]
        guard second >= low, second <= high else { throw failure(.invalidUTF8) }
        var i = 2
        while i <= continuationCount {
            guard base[pos + i] & 0xC0 == 0x80 else { throw failure(.invalidUTF8) }
            i += 1
        }
        pos += continuationCount + 1
    }
}
