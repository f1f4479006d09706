import Glibc

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A point in time `seconds` from now, for polling loops.
struct Deadline {
    let end: UInt64
    init(seconds: Double) { end = monotonicNanoseconds() + UInt64(seconds * 1e9) }
    var hasPassed: Bool { monotonicNanoseconds() >= end }
    /// Milliseconds left, at least 0.
    var remainingMilliseconds: Int32 {
        let now = monotonicNanoseconds()
        return now >= end ? 0 : Int32(min((end - now) / 1_000_000, UInt64(Int32.max)))
    }
}

func sleepMilliseconds(_ ms: Int) { usleep(useconds_t(ms * 1000)) }

/// Polls `condition` every few milliseconds until it holds or `seconds` pass.
func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Deadline(seconds: seconds)
    while true {
        if try condition() { return true }
        if deadline.hasPassed { return false }
        sleepMilliseconds(2)
    }
}
