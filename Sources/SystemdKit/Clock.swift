import Glibc

/// The clocks sd-event timers can run on.
///
/// Note for clients: this type shadows the standard library's `Clock` protocol in files that
/// import SystemdKit; spell the protocol `_Concurrency.Clock` there if you need it.
public enum Clock: Sendable, Hashable, CaseIterable {
    /// Time since boot, not counting suspend; never jumps. The default for deadlines.
    case monotonic
    /// Wall-clock time since the Unix epoch; jumps when the clock is set.
    case realtime
    /// Like monotonic, but keeps counting during suspend.
    case boottime

    /// The matching `clockid_t` for clock_gettime(2) and sd_event_add_time(3).
    public var id: clockid_t {
        switch self {
        case .monotonic: CLOCK_MONOTONIC
        case .realtime: CLOCK_REALTIME
        case .boottime: CLOCK_BOOTTIME
        }
    }

    /// The current time on this clock in microseconds, read with clock_gettime(2).
    public func now() -> UInt64 {
        var ts = timespec()
        // clock_gettime cannot fail for these three clocks on Linux.
        _ = clock_gettime(id, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec) / 1_000
    }
}
