/// When to send systemd's STATUS= line: at most one update per interval, the last change
/// always delivered (at the interval's end). It decides only; the daemon builds the line,
/// sends it and arms the timer, so building the line is as rate-limited as sending it.
struct StatusReporter {
    var interval: UInt64
    private var lastSent: UInt64 = 0
    private var lastText = ""
    private var timerArmed = false

    enum Decision: Equatable {
        /// Build the line and `send` it now.
        case sendNow
        /// Arm the status timer for this time (µs, monotonic); `timerFired` follows.
        case arm(at: UInt64)
        case wait
    }

    init(interval: UInt64) {
        self.interval = interval
    }

    /// Something the line shows changed at `now`.
    mutating func changed(now: UInt64) -> Decision {
        if now >= lastSent + interval { return .sendNow }
        if timerArmed { return .wait }
        timerArmed = true
        return .arm(at: lastSent + interval)
    }

    mutating func timerFired() {
        timerArmed = false
    }

    /// The notification to send for `line` at `now`, or nil when the line has not changed.
    /// A `prefix` (READY=1, RELOADING=1 …) is always sent.
    mutating func message(_ line: String, now: UInt64, prefix: String = "") -> String? {
        // Checked now, sent or not: the interval runs from the last time the line was built.
        lastSent = now
        guard line != lastText || !prefix.isEmpty else { return nil }
        lastText = line
        return prefix + "STATUS=" + line
    }
}
