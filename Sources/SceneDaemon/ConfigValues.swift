import SceneCore

/// Value syntaxes of the configuration, as systemd writes them: time spans ("30s", "5min",
/// "1h 30min"), byte sizes with 1024-based suffixes ("512M", "8G"), booleans, percentages.
enum ConfigValues {
    /// Microseconds. A bare number means seconds, as in systemd's *Sec= settings.
    static func timeSpan(_ text: String) -> Int64? { TimeSpan(parsing: text)?.microseconds }

    /// Bytes: a plain number, or K/M/G/T/P/E (powers of 1024), each with an optional trailing
    /// "B" ("512B", "512KB"), as SceneCore's `ByteSize` reads them; spaces around are allowed.
    static func bytes(_ text: String) -> UInt64? { ByteSize.parse(text.trimmingSpaces) }

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

    static func formatTimeSpan(_ usec: Int64) -> String { TimeSpan(microseconds: usec).formatted }

    /// The shortest decimal form that `percent` reads back as exactly `fraction` (so that
    /// --dump-config round-trips "92.55%", not just whole and tenth percentages).
    static func formatPercent(_ fraction: Double) -> String {
        let value = fraction * 100
        var scale: Int64 = 1
        for decimals in 0...9 {
            let units = Int64((value * Double(scale)).rounded())
            var text = String(units / scale)
            if decimals > 0 {
                let digits = String(units % scale)
                text += "." + String(repeating: "0", count: decimals - digits.count) + digits
            }
            if let back = percent(text + "%"), back == fraction { return text + "%" }
            scale *= 10
        }
        return "\(value)%"
    }

    /// Exact: "8G", "1536"; `bytes` reads it back as the same size.
    static func formatBytes(_ bytes: UInt64) -> String { ByteSize.formatExact(bytes) }
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
