/// When to tell systemd WATCHDOG=1: only when the daemon is serving, not merely alive.
///
/// sd-event's own watchdog pings at the start of every loop iteration, so a loop that spins
/// without serving anyone (the first release's wedge) kept being reported healthy. Here the
/// ping comes from the end of a completed loop pass — the step that serves clients and starts
/// commits — and is withheld while a commit has been in flight for more than half the interval
/// (a stuck commit thread serves no one either). A timer asks for a pass now and then, so an
/// idle daemon still pings. Pure: the daemon passes the time.
struct ServingWatchdog: Sendable {
    /// WATCHDOG_USEC; nil when systemd asked for no pings.
    let interval: UInt64?
    private(set) var lastPing: UInt64 = 0
    private(set) var commitStartedAt: UInt64?
    /// Pings withheld because the commit was stuck (for the status line and logs).
    private(set) var withheld = 0

    init(interval: UInt64?) {
        self.interval = interval
    }

    /// How often a pass should happen at the least (the heartbeat timer's period).
    var heartbeat: UInt64? { interval.map { max($0 / 4, 1_000) } }

    mutating func commitStarted(now: UInt64) { commitStartedAt = now }
    mutating func commitFinished() { commitStartedAt = nil }

    /// The commit thread has held one batch for more than half the interval.
    func commitIsStuck(now: UInt64) -> Bool {
        guard let interval, let started = commitStartedAt else { return false }
        return now >= started && now - started > interval / 2
    }

    /// A pass completed: whether to send WATCHDOG=1 now.
    mutating func passCompleted(now: UInt64) -> Bool {
        guard let interval else { return false }
        if commitIsStuck(now: now) {
            withheld += 1
            return false
        }
        guard now < lastPing || now - lastPing >= interval / 4 else { return false }
        lastPing = now
        return true
    }
}
