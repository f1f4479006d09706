import SceneCore
import SystemdKit

/// The engine's time: CLOCK_MONOTONIC anchored to the wall clock once at start-up. It never
/// jumps with NTP or settimeofday within a run, and stays close enough to wall time that stored
/// deadlines (task expiry, suspension) keep their meaning across restarts.
struct DaemonClock {
    let anchorRealtime: Int64
    let anchorMonotonic: UInt64
    /// Tests: a virtual CLOCK_MONOTONIC that only moves when told; nil reads the real one.
    let virtual: VirtualClock?

    init() {
        anchorRealtime = Int64(Clock.realtime.now())
        anchorMonotonic = Clock.monotonic.now()
        virtual = nil
    }

    /// A clock that reads `virtual`, with engine time `virtual.now` at its start.
    init(virtual: VirtualClock, startingAt start: Timestamp) {
        anchorRealtime = start.microseconds
        anchorMonotonic = virtual.now
        self.virtual = virtual
    }

    func timestamp(monotonic: UInt64) -> Timestamp {
        Timestamp(microseconds: anchorRealtime + Int64(monotonic) - Int64(anchorMonotonic))
    }

    func now() -> Timestamp { timestamp(monotonic: virtual?.now ?? Clock.monotonic.now()) }

    /// The CLOCK_MONOTONIC time at which the engine's clock reads `t` (for sd-event timers).
    func monotonic(at t: Timestamp) -> UInt64 {
        let m = Int64(anchorMonotonic) + (t.microseconds - anchorRealtime)
        return m < 0 ? 0 : UInt64(m)
    }
}

/// A monotonic time in µs that tests move by hand.
final class VirtualClock: @unchecked Sendable {
    // @unchecked: used from one thread (a test's), like the loop it stands in for.
    var now: UInt64
    init(now: UInt64 = 1_000_000) { self.now = now }
}
