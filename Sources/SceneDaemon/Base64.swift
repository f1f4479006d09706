/// RFC 4648 base64, for state-restoration bytes on the wire (no Foundation in the daemon's
/// hot path).
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let decodeTable: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            var n = UInt32(bytes[i]) << 16
            if rest == 2 { n |= UInt32(bytes[i + 1]) << 8 }
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict: canonical padding required, no whitespace.
    static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count / 4 * 3)
        var i = 0
        while i < input.count {
            let last = i + 4 == input.count
            var values = [Int32](repeating: 0, count: 4)
            var padding = 0
            for j in 0..<4 {
                let c = input[i + j]
                if c == UInt8(ascii: "=") {
                    guard last, j >= 2 else { return nil }
                    padding += 1
                    continue
                }
                guard padding == 0 else { return nil }
                let v = decodeTable[Int(c)]
                guard v >= 0 else { return nil }
                values[j] = Int32(v)
            }
            let n = values[0] << 18 | values[1] << 12 | values[2] << 6 | values[3]
            out.append(UInt8(n >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(n & 0xFF)) }
            // Non-canonical trailing bits would decode two texts to the same bytes.
            if padding == 1 && (n & 0xFF) != 0 { return nil }
            if padding == 2 && (n & 0xFFFF) != 0 { return nil }
            i += 4
        }
        return out
    }
}
