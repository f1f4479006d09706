import Glibc

/// Times as systemd prints them, in the local time zone (or UTC for tests). Inputs are µs
/// since the Unix epoch, as the daemon sends them.
struct TimeFormatter {
    let utc: Bool

    /// "Fri 2024-11-29 16:40:01 CET", like systemctl status.
    func timestamp(_ usec: Int64) -> String { format(usec, "%a %Y-%m-%d %H:%M:%S %Z") }

    /// "2024-11-29 16:40:01", for table cells.
    func tableTime(_ usec: Int64) -> String { format(usec, "%Y-%m-%d %H:%M:%S") }

    /// "16:40:01.123456", for monitor lines.
    func clockTime(_ usec: Int64) -> String {
        let micros = String(usec.magnitude % 1_000_000)
        return format(usec, "%H:%M:%S") + "." + String(repeating: "0", count: 6 - micros.count) + micros
    }

    /// "Nov 29 16:40:01", journalctl's short format.
    func journalTime(_ usec: Int64) -> String { format(usec, "%b %d %H:%M:%S") }

    /// "Fri 2024-11-29 16:40:01 CET; 5min ago".
    func timestampWithRelative(_ usec: Int64, now: UInt64) -> String {
        timestamp(usec) + "; " + Self.relative(usec, now: Int64(clamping: now))
    }

    private func format(_ usec: Int64, _ pattern: String) -> String {
        var seconds = time_t(usec >= 0 ? usec / 1_000_000 : (usec - 999_999) / 1_000_000)
        var parts = tm()
        // In UTC glibc names the zone "GMT"; systemd says "UTC".
        var pattern = pattern
        if utc {
            gmtime_r(&seconds, &parts)
            pattern = pattern.replacingZone()
        } else {
            localtime_r(&seconds, &parts)
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
            let length = strftime(buffer.baseAddress!, buffer.count, pattern, &parts)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: length), as: UTF8.self)
        }
    }

    /// systemd's format_timestamp_relative: "5min ago", "1h 2min ago", "3 days ago", "25s left".
    static func relative(_ usec: Int64, now: Int64) -> String {
        let (d, suffix) = now >= usec ? ((now - usec).magnitude, "ago") : ((usec - now).magnitude, "left")
        let second: UInt64 = 1_000_000, minute = 60 * second, hour = 60 * minute, day = 24 * hour
        let week = 7 * day, month = 2_629_800 * second, year = 31_557_600 * second
        switch d {
        case year...: return "\(d / year) years \((d % year) / month) months \(suffix)"
        case month...: return "\(d / month) months \((d % month) / day) days \(suffix)"
        case week...: return "\(d / week) weeks \((d % week) / day) days \(suffix)"
        case (2 * day)...: return "\(d / day) days \(suffix)"
        case (25 * hour)...: return "\(d / day) day \((d % day) / hour)h \(suffix)"
        case (6 * hour)...: return "\(d / hour)h \(suffix)"
        case hour...: return "\(d / hour)h \((d % hour) / minute)min \(suffix)"
        case (5 * minute)...: return "\(d / minute)min \(suffix)"
        case minute...: return "\(d / minute)min \((d % minute) / second)s \(suffix)"
        case second...: return "\(d / second)s \(suffix)"
        case 1_000...: return "\(d / 1_000)ms \(suffix)"
        case 1...: return "\(d)us \(suffix)"
        default: return "now"
        }
    }
}

extension String {
    fileprivate func replacingZone() -> String {
        var out = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: "%Z") {
            out += rest[..<range.lowerBound] + "UTC"
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}

extension TimeFormatter {
    /// Uptime as top writes it: "3 days 4:05", "1:02:03", "12min 5s".
    static func uptime(_ usec: Int64) -> String {
        let seconds = max(0, usec / 1_000_000)
        let days = seconds / 86_400, hours = seconds / 3600 % 24, minutes = seconds / 60 % 60, secs = seconds % 60
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        if days > 0 { return "\(days) day\(days == 1 ? "" : "s") \(hours):\(two(minutes))" }
        if hours > 0 { return "\(hours):\(two(minutes)):\(two(secs))" }
        return "\(minutes)min \(secs)s"
    }
}
