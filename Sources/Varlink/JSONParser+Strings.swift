import Glibc

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
