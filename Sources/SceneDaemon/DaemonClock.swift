import SceneCore
import SystemdKit

/// The engine's time: CLOCK_MONOTONIC anchored to the wall clock once at start-up. It never
/// jumps with NTP or settimeofday within a run, and stays close enough to wall time that stored
/// deadlines (task expiry, suspension) keep their meaning across restarts.
struct DaemonClock {
    let anchorRealtime: Int64
    let anchorMonotonic: UInt64

    init() {
        anchorRealtime = Int64(Clock.realtime.now())
        anchorMonotonic = Clock.monotonic.now()
    }

    func timestamp(monotonic: UInt64) -> Timestamp {
        Timestamp(microseconds: anchorRealtime + Int64(monotonic) - Int64(anchorMonotonic))
    }

    func now() -> Timestamp { timestamp(monotonic: Clock.monotonic.now()) }

    /// The CLOCK_MONOTONIC time at which the engine's clock reads `t` (for sd-event timers).
    func monotonic(at t: Timestamp) -> UInt64 {
        let m = Int64(anchorMonotonic) + (t.microseconds - anchorRealtime)
        return m < 0 ? 0 : UInt64(m)
    }
}
