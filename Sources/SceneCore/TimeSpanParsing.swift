/// systemd's time span syntax ("30s", "500ms", "5min", "1h 30min"; a bare number is seconds),
/// shared by the configuration and scenectl.
extension TimeSpan {
    private static let units: [(String, Int64)] = [
        ("usec", 1), ("us", 1), ("µs", 1),
        ("msec", 1_000), ("ms", 1_000),
        ("seconds", 1_000_000), ("second", 1_000_000), ("sec", 1_000_000), ("s", 1_000_000),
        ("minutes", 60_000_000), ("minute", 60_000_000), ("min", 60_000_000), ("m", 60_000_000),
        ("hours", 3_600_000_000), ("hour", 3_600_000_000), ("hr", 3_600_000_000), ("h", 3_600_000_000),
        ("days", 86_400_000_000), ("day", 86_400_000_000), ("d", 86_400_000_000),
        ("weeks", 604_800_000_000), ("week", 604_800_000_000), ("w", 604_800_000_000),
        // systemd's month and year: 30.44 and 365.25 days.
        ("months", 2_629_800_000_000), ("month", 2_629_800_000_000), ("M", 2_629_800_000_000),
        ("years", 31_557_600_000_000), ("year", 31_557_600_000_000), ("y", 31_557_600_000_000),
    ]

    public init?(parsing text: String) {
        var rest = Substring(text).drop(while: { $0 == " " || $0 == "\t" })
        while rest.last == " " || rest.last == "\t" { rest = rest.dropLast() }
        guard !rest.isEmpty else { return nil }
        if let whole = Int64(rest) {
            guard whole >= 0, whole <= Int64.max / 1_000_000 else { return nil }
            self.init(microseconds: whole * 1_000_000)
            return
        }
        var total: Int64 = 0
        while !rest.isEmpty {
            rest = rest.drop(while: { $0 == " " })
            let digits = rest.prefix(while: { $0.isASCII && ($0.isNumber || $0 == ".") })
            guard !digits.isEmpty, let number = Double(digits), number >= 0 else { return nil }
            rest = rest.dropFirst(digits.count).drop(while: { $0 == " " })
            let unitText = rest.prefix(while: { $0.isLetter || $0 == "µ" })
            // A number without a unit means seconds, as systemd reads "1.5" and "1min 30".
            let unit = unitText.isEmpty ? ("s", Int64(1_000_000)) : Self.units.first(where: { $0.0 == unitText })
            guard let unit else { return nil }
            rest = rest.dropFirst(unitText.count)
            // Whole numbers are scaled exactly: through a Double, a large span's last digits
            // are lost and its own formatted text would not read back.
            let value: Int64
            if let whole = Int64(digits) {
                let (scaled, overflow) = whole.multipliedReportingOverflow(by: unit.1)
                guard !overflow else { return nil }
                value = scaled
            } else {
                let scaled = number * Double(unit.1)
                guard scaled < 9e18 else { return nil }
                value = Int64(scaled.rounded())
            }
            let (sum, overflow) = total.addingReportingOverflow(value)
            guard !overflow else { return nil }
            total = sum
        }
        self.init(microseconds: total)
    }

    /// "1h 30min", "500ms", "0".
    public var formatted: String {
        if microseconds == 0 { return "0" }
        let units: [(String, Int64)] = [("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000),
                                         ("s", 1_000_000), ("ms", 1_000), ("us", 1)]
        var rest = microseconds
        var parts: [String] = []
        for (name, size) in units where rest >= size {
            parts.append("\(rest / size)\(name)")
            rest %= size
        }
        return parts.joined(separator: " ")
    }

    /// For people reading a countdown: whole seconds from 1 s up ("29s", "4min 30s"),
    /// milliseconds below, as systemctl shows time left.
    public var approximate: String {
        let unit: Int64 = microseconds >= 1_000_000 ? 1_000_000 : 1_000
        return TimeSpan(microseconds: (microseconds + unit / 2) / unit * unit).formatted
    }
}
