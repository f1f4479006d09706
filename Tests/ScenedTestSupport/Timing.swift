import Glibc

/// CLOCK_MONOTONIC in nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CLOCK_MONOTONIC in seconds.
public func monotonicSeconds() -> Double { Double(monotonicNanoseconds()) / 1e9 }

/// A point in time `seconds` from now, for polling loops.
public struct Deadline: Sendable {
    public let end: UInt64
    public init(seconds: Double) { end = monotonicNanoseconds() + UInt64(seconds * 1e9) }
    public var hasPassed: Bool { monotonicNanoseconds() >= end }
    /// Milliseconds left, at least 0.
    public var remainingMilliseconds: Int32 {
        let now = monotonicNanoseconds()
        return now >= end ? 0 : Int32(min((end - now) / 1_000_000, UInt64(Int32.max)))
    }
}

public func sleepMilliseconds(_ ms: Int) { usleep(useconds_t(ms * 1000)) }

/// Polls `condition` every few milliseconds until it holds or `seconds` pass; true if it held.
public func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Deadline(seconds: seconds)
    while true {
        if try condition() { return true }
        if deadline.hasPassed { return false }
        sleepMilliseconds(2)
    }
}
