/// A -wal file read and edited with nothing but the layout of sqlite.org/fileformat2.html §4:
/// what the tests use to damage a log, independently of the store's own reader (which is what
/// they test).
public struct WALFileBytes {
    public var bytes: [UInt8]

    public init(_ path: String) throws {
        guard let bytes = readWholeFile(path) else { throw TestFailure("cannot read \(path): \(errnoText())") }
        guard bytes.count > 32 else { throw TestFailure("\(path) holds no frame (\(bytes.count) bytes)") }
        self.bytes = bytes
    }

    public func be32(_ offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    public var pageSize: Int { Int(be32(8)) }
    public var frameSize: Int { pageSize + 24 }
    /// Whole frames.
    public var frameCount: Int { (bytes.count - 32) / frameSize }
    /// Where frame `k` (from 1) starts.
    public func offset(_ k: Int) -> Int { 32 + (k - 1) * frameSize }
    public func isCommit(_ k: Int) -> Bool { be32(offset(k) + 4) != 0 }
    /// Whether frame `k` carries the header's salts (belongs to this generation of the log).
    public func hasHeaderSalts(_ k: Int) -> Bool { bytes[16..<24].elementsEqual(bytes[offset(k) + 8..<offset(k) + 16]) }
    public var commitFrames: [Int] { (1...frameCount).filter(isCommit) }

    /// Flips bits of one byte in the middle of frame `k`'s page.
    public mutating func damagePage(ofFrame k: Int, mask: UInt8 = 0x10) {
        bytes[offset(k) + 24 + pageSize / 2] ^= mask
    }

    public func write(_ path: String) throws { try writeFile(path, bytes, mode: 0o600) }

    /// Rewrites every checksum with the algorithm of §4, in big-endian words (magic 0x377f0683,
    /// as a big-endian host's SQLite writes them) or little-endian ones (0x377f0682).
    public mutating func rewriteChecksums(bigEndian: Bool) {
        func word(_ i: Int) -> UInt32 {
            bigEndian ? be32(i) : bytes[i..<i + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
        func sum(_ range: Range<Int>, _ s: (UInt32, UInt32)) -> (UInt32, UInt32) {
            var (a, b) = s
            for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                a = a &+ word(i) &+ b
                b = b &+ word(i + 4) &+ a
            }
            return (a, b)
        }
        func put(_ value: UInt32, at i: Int) {
            for k in 0..<4 { bytes[i + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(k))) }
        }
        put(bigEndian ? 0x377F_0683 : 0x377F_0682, at: 0)
        var s = sum(0..<24, (0, 0))
        put(s.0, at: 24)
        put(s.1, at: 28)
        for k in 1...frameCount {
            let o = offset(k)
            s = sum(o..<o + 8, s)
            s = sum(o + 24..<o + frameSize, s)
            put(s.0, at: o + 16)
            put(s.1, at: o + 20)
        }
    }
}
