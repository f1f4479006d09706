import Glibc

extension Check {
    /// A point in time for an option, in microseconds since the epoch: "@SECONDS" (as systemd
    /// takes it), or "YYYY-MM-DD HH:MM[:SS]" (a "T" may join the two) in local time, or in UTC
    /// with a trailing " UTC" (or when `utc`, as tests run).
    static func wallTime(_ text: String, option: String, utc: Bool) throws(ControlError) -> Int64 {
        let usage = ControlError.usage("invalid \(option) '\(text)'; expected 'YYYY-MM-DD HH:MM[:SS]' (local, or with ' UTC') or @SECONDS")
        if text.hasPrefix("@") {
            // Up to the year 5138: far beyond any schedule, well within Int64 microseconds.
            guard let seconds = Double(text.dropFirst()), seconds >= 0, seconds < 1e11 else { throw usage }
            return Int64((seconds * 1_000_000).rounded())
        }
        var body = Substring(text)
        var inUTC = utc
        if body.hasSuffix(" UTC") {
            body = body.dropLast(4)
            inUTC = true
        }
        let halves = body.split(whereSeparator: { $0 == " " || $0 == "T" })
        guard halves.count == 2 else { throw usage }
        let date = halves[0].split(separator: "-", omittingEmptySubsequences: false).map { Int32($0) }
        let clock = halves[1].split(separator: ":", omittingEmptySubsequences: false).map { Int32($0) }
        guard date.count == 3, clock.count == 2 || clock.count == 3, !date.contains(nil), !clock.contains(nil) else { throw usage }
        let (year, month, day) = (date[0]!, date[1]!, date[2]!)
        let (hour, minute, second) = (clock[0]!, clock[1]!, clock.count == 3 ? clock[2]! : 0)
        guard (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { throw usage }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        parts.tm_isdst = -1
        let seconds = inUTC ? timegm(&parts) : mktime(&parts)
        // A day the month does not have (Feb 30) comes back normalised: refuse it.
        guard seconds >= 0, parts.tm_mday == day, parts.tm_mon == month - 1 else { throw usage }
        return Int64(seconds) * 1_000_000
    }
}
