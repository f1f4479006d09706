/// The small binary encoding of the variable parts of a row (an app's pending discards, an
/// event's detail and cause): LEB128 varints, length-prefixed UTF-8, fixed little-endian 8-byte
/// doubles. Smaller and faster to read than JSON, and it needs nothing beyond the standard library.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func byte(_ b: UInt8) { bytes.append(b) }

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func string(_ s: String) {
        varint(UInt64(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }

    mutating func data(_ b: [UInt8]) {
        varint(UInt64(b.count))
        bytes.append(contentsOf: b)
    }

    mutating func double(_ d: Double) {
        var bits = d.bitPattern
        for _ in 0..<8 {
            bytes.append(UInt8(truncatingIfNeeded: bits))
            bits >>= 8
        }
    }
}

/// Reads what `ByteWriter` wrote, from memory SQLite owns (valid until the next step), so every
/// read is bounds-checked: a damaged value must fail, not crash.
struct ByteReader {
    struct Malformed: Error {}

    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    var isAtEnd: Bool { offset == buffer.count }

    mutating func byte() throws(Malformed) -> UInt8 {
        guard offset < buffer.count else { throw Malformed() }
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func varint() throws(Malformed) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64, shift < 63 || b <= 1 else { throw Malformed() }
            value |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func length() throws(Malformed) -> Int {
        let n = try varint()
        guard n <= UInt64(buffer.count - offset) else { throw Malformed() }
        return Int(n)
    }

    /// Well-formed UTF-8 only: decoding would otherwise replace damaged bytes without a word.
    mutating func string() throws(Malformed) -> String {
        let n = try length()
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n])
        guard UTF8Check.isValid(bytes) else { throw Malformed() }
        offset += n
        return String(decoding: bytes, as: UTF8.self)
    }

    mutating func data() throws(Malformed) -> [UInt8] {
        let n = try length()
        defer { offset += n }
        return Array(buffer[offset..<offset + n])
    }

    mutating func double() throws(Malformed) -> Double {
        guard buffer.count - offset >= 8 else { throw Malformed() }
        var bits: UInt64 = 0
        for i in 0..<8 { bits |= UInt64(buffer[offset + i]) << (8 * UInt64(i)) }
        offset += 8
        return Double(bitPattern: bits)
    }
}
