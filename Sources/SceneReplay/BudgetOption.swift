/// Byte counts as people write them: `1500000000`, `1.5G`, `800M`, `64K` (powers of 1024), each
/// with an optional `B` (`512B`, `64KB`), and budgets given as a share of the working set: `50%`.
public enum ByteCount {
    public enum Budget: Sendable, Equatable {
        case bytes(UInt64)
        /// Percent of the working set.
        case percent(Double)

        public func resolve(workingSet: UInt64) -> UInt64 {
            switch self {
            case .bytes(let b): b
            case .percent(let p): UInt64((Double(workingSet) * p / 100).rounded())
            }
        }
    }

    public static func parseBudget(_ text: String) -> Budget? {
        if text.hasSuffix("%") {
            guard let p = Double(text.dropLast()), p > 0, p.isFinite else { return nil }
            return .percent(p)
        }
        return parse(text).map(Budget.bytes)
    }

    public static func parse(_ text: String) -> UInt64? {
        var number = Substring(text)
        // An optional "B", as `format` writes bytes below 1K ("512B") and people write "64KB".
        if number.hasSuffix("B") { number = number.dropLast() }
        guard let last = number.last else { return nil }
        var multiplier = 1.0
        switch last {
        case "K", "k": multiplier = 1024
        case "M", "m": multiplier = 1024 * 1024
        case "G", "g": multiplier = 1024 * 1024 * 1024
        case "T", "t": multiplier = 1024 * 1024 * 1024 * 1024
        default: break
        }
        if multiplier > 1 { number = number.dropLast() }
        if number.hasSuffix("i") { return nil }
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        let bytes = value * multiplier
        guard bytes < 1.8e19 else { return nil }
        return UInt64(bytes.rounded())
    }

    /// `1.5G`, `820M`, `12K`, `512B` (one decimal below 10).
    public static func format(_ bytes: UInt64) -> String {
        let units: [(Double, String)] = [(1024 * 1024 * 1024 * 1024, "T"), (1024 * 1024 * 1024, "G"),
                                         (1024 * 1024, "M"), (1024, "K")]
        let b = Double(bytes)
        for (size, name) in units where b >= size {
            return Format.fixed(b / size, b / size < 10 ? 1 : 0) + name
        }
        return "\(bytes)B"
    }
}

/// Number formatting without Foundation.
public enum Format {
    /// `value` with exactly `digits` decimals (round half away from zero).
    public static func fixed(_ value: Double, _ digits: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return String(value) }
        let n = UInt64(scaled)
        let whole = n / UInt64(scale)
        let fraction = n % UInt64(scale)
        var s = value < 0 && n != 0 ? "-" : ""
        s += String(whole)
        if digits > 0 {
            var f = String(fraction)
            while f.count < digits { f = "0" + f }
            s += "." + f
        }
        return s
    }

    /// Left-pads to `width`.
    public static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }

    /// Right-pads to `width`.
    public static func padRight(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }
}
