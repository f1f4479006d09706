/// A byte size, 1024-based, as systemd reads sizes (parse_size) and prints them (format_bytes):
/// the one parser and formatter of the project (scenectl's options and output, the daemon's
/// configuration, log messages and status line, scene-replay's options, tables and charts).
///
/// Accepted: digits, optionally a fraction, then optionally one of K, M, G, T, P, E (upper
/// case, as systemd; a fraction needs one), then optionally B: "52428800", "4096B", "512K",
/// "64KB", "1.5G". Nothing else: no sign, no spaces (a configuration value is trimmed before),
/// no exponent, no lower-case unit; nil for anything that does not fit in 64 bits.
public struct ByteSize: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var bytes: UInt64

    public init(_ bytes: UInt64) { self.bytes = bytes }

    public init?(parsing text: String) {
        guard let bytes = Self.parse(text) else { return nil }
        self.bytes = bytes
    }

    /// "512B", "1.5K", "50.0M": see `format`.
    public var description: String { Self.format(bytes) }

    /// The exact size, as a configuration would write it: see `formatExact`.
    public var exact: String { Self.formatExact(bytes) }

    public static func < (a: ByteSize, b: ByteSize) -> Bool { a.bytes < b.bytes }

    private static let units: [(suffix: Character, factor: UInt64)] = [
        ("E", 1 << 60), ("P", 1 << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10),
    ]

    /// "512B", "1.5K", "50.0M": one decimal, truncated rather than rounded (as systemd does).
    public static func format(_ bytes: UInt64) -> String {
        for (suffix, factor) in units where bytes >= factor {
            // The remainder is below 2^60, so ten times it still fits.
            let tenths = (bytes % factor) * 10 / factor
            return "\(bytes / factor).\(tenths)\(suffix)"
        }
        return "\(bytes)B"
    }

    /// A signed count as the daemon's replies carry it (negative ones shown as they are).
    @_disfavoredOverload
    public static func format(_ bytes: Int64) -> String {
        bytes < 0 ? "\(bytes)B" : format(UInt64(bytes))
    }

    /// The largest of K, M, G, T that divides the size exactly, else the plain number ("8G",
    /// "1536", "512"): what `parse` reads back as the same size (--dump-config, limits).
    public static func formatExact(_ bytes: UInt64) -> String {
        for (suffix, factor) in units where factor <= 1 << 40 && bytes >= factor && bytes % factor == 0 {
            return "\(bytes / factor)\(suffix)"
        }
        return "\(bytes)"
    }

    /// Parses "52428800", "50M", "1.5G", "512K", "4096B"; nil for anything else or overflow.
    public static func parse(_ text: String) -> UInt64? {
        var digits = Substring(text)
        var factor: UInt64 = 1
        if digits.last == "B" { digits = digits.dropLast() }
        if let last = digits.last, let unit = units.first(where: { $0.suffix == last }) {
            factor = unit.factor
            digits = digits.dropLast()
        }
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCIIDigit),
              let integer = UInt64(whole) else { return nil }
        let (scaled, overflow) = integer.multipliedReportingOverflow(by: factor)
        guard !overflow else { return nil }
        guard parts.count == 2 else { return scaled }
        // A fraction only makes sense with a unit; it is rounded up to the byte, so that the
        // size shows back as written ("1.2T" truncated to the byte would show as "1.1T").
        let fraction = parts[1]
        guard factor > 1, !fraction.isEmpty, fraction.count <= 9, fraction.allSatisfy(\.isASCIIDigit),
              let numerator = UInt64(fraction) else { return nil }
        var denominator: UInt64 = 1
        for _ in fraction { denominator *= 10 }
        // numerator/denominator < 1, so the quotient stays below factor and fits, plus one too.
        let product = numerator.multipliedFullWidth(by: factor)
        let (quotient, remainder) = denominator.dividingFullWidth((high: product.high, low: product.low))
        let part = remainder == 0 ? quotient : quotient + 1
        let (sum, overflowed) = scaled.addingReportingOverflow(part)
        return overflowed ? nil : sum
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
