/// At most `burst` messages per `interval`, as systemd's log rate limits: a hostile client
/// must not turn the daemon's log into a flood (an accept loop at EMFILE logs on every try).
/// Pure: the caller passes the time.
struct RateLimiter: Sendable {
    let interval: UInt64
    let burst: Int
    private var windowStart: UInt64 = 0
    private var used = 0
    /// Messages refused since the last one allowed.
    private(set) var suppressed = 0

    init(interval: UInt64 = 10_000_000, burst: Int = 10) {
        self.interval = interval
        self.burst = burst
    }

    /// Whether a message may go out now; when it may, also how many were suppressed before it
    /// (to be said in it).
    mutating func allow(now: UInt64) -> (allowed: Bool, suppressed: Int) {
        if now &- windowStart >= interval || now < windowStart {
            windowStart = now
            used = 0
        }
        guard used < burst else {
            suppressed += 1
            return (false, 0)
        }
        used += 1
        let dropped = suppressed
        suppressed = 0
        return (true, dropped)
    }
}
