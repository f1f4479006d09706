/// Value syntaxes of the configuration, as systemd writes them: time spans ("30s", "5min",
/// "1h 30min"), byte sizes with 1024-based suffixes ("512M", "8G"), booleans, percentages.
enum ConfigValues {
    /// Microseconds. A bare number means seconds, as in systemd's *Sec= settings.
    static func timeSpan(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [
            ("usec", 1), ("us", 1), ("µs", 1),
            ("msec", 1_000), ("ms", 1_000),
            ("seconds", 1_000_000), ("second", 1_000_000), ("sec", 1_000_000), ("s", 1_000_000),
            ("minutes", 60_000_000), ("minute", 60_000_000), ("min", 60_000_000), ("m", 60_000_000),
            ("hours", 3_600_000_000), ("hour", 3_600_000_000), ("hr", 3_600_000_000), ("h", 3_600_000_000),
            ("days", 86_400_000_000), ("day", 86_400_000_000), ("d", 86_400_000_000),
        ]
        let trimmed = text.trimmingSpaces
        guard !trimmed.isEmpty else { return nil }
        if let whole = Int64(trimmed) { return whole >= 0 && whole <= Int64.max / 1_000_000 ? whole * 1_000_000 : nil }
        var total: Int64 = 0
        var rest = Substring(trimmed)
        while !rest.isEmpty {
            rest = rest.drop(while: { $0 == " " })
            let digits = rest.prefix(while: { $0.isASCII && ($0.isNumber || $0 == ".") })
            guard !digits.isEmpty, let number = Double(digits), number >= 0 else { return nil }
            rest = rest.dropFirst(digits.count).drop(while: { $0 == " " })
            let unitText = rest.prefix(while: { $0.isLetter || $0 == "µ" })
            guard let unit = units.first(where: { $0.0 == unitText }) else { return nil }
            rest = rest.dropFirst(unitText.count)
            let value = number * Double(unit.1)
            guard value < 9e18 else { return nil }
            total += Int64(value.rounded())
        }
        return total
    }

    /// Bytes: a plain number, or K/M/G/T (powers of 1024, optional trailing "B").
    static func bytes(_ text: String) -> UInt64? {
        var t = Substring(text.trimmingSpaces)
        if t.hasSuffix("B") && t.count > 1 && t.dropLast().last.map({ "KMGT".contains($0) }) == true { t = t.dropLast() }
        var multiplier: Double = 1
        if let last = t.last, let index = "KMGT".firstIndex(of: last) {
            multiplier = Double(1 << (10 * ("KMGT".distance(from: "KMGT".startIndex, to: index) + 1)))
            t = t.dropLast()
        }
        guard !t.isEmpty, t.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let n = Double(t) else { return nil }
        let value = n * multiplier
        guard value >= 0, value < 1.8e19 else { return nil }
        return UInt64(value.rounded())
    }

    static func bool(_ text: String) -> Bool? {
        switch text.trimmingSpaces.lowercased() {
        case "1", "yes", "y", "true", "t", "on": true
        case "0", "no", "n", "false", "f", "off": false
        default: nil
        }
    }

    /// A percentage 0–100 as a fraction.
    static func percent(_ text: String) -> Double? {
        let t = text.trimmingSpaces
        guard t.hasSuffix("%"), let n = Double(t.dropLast()), n >= 0, n <= 100 else { return nil }
        return n / 100
    }

    static func formatTimeSpan(_ usec: Int64) -> String {
        if usec == 0 { return "0" }
        let units: [(String, Int64)] = [("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000),
                                         ("s", 1_000_000), ("ms", 1_000), ("us", 1)]
        var rest = usec
        var parts: [String] = []
        for (name, size) in units where rest >= size {
            parts.append("\(rest / size)\(name)")
            rest %= size
        }
        return parts.joined(separator: " ")
    }

    static func formatPercent(_ fraction: Double) -> String {
        let tenths = Int((fraction * 1000).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10)%" : "\(tenths / 10).\(tenths % 10)%"
    }

    static func formatBytes(_ bytes: UInt64) -> String {
        let units: [(String, UInt64)] = [("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)]
        for (name, size) in units where bytes >= size && bytes % size == 0 { return "\(bytes / size)\(name)" }
        return "\(bytes)"
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        var start = scalars.startIndex
        var end = scalars.endIndex
        while start < end, scalars[start] == " " || scalars[start] == "\t" { start = scalars.index(after: start) }
        while end > start {
            let before = scalars.index(before: end)
            guard scalars[before] == " " || scalars[before] == "\t" || scalars[before] == "\r" else { break }
            end = before
        }
        return String(String.UnicodeScalarView(scalars[start..<end]))
    }
}
