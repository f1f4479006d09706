/// Number and word formatting without Foundation, shared by the daemon's log messages and
/// status line and scene-replay's tables. (Byte sizes are `ByteSize`, time spans `TimeSpan`.)
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

    /// "1 session", "2 sessions".
    public static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}
