import Glibc
import SystemdKit
import Testing

@Suite struct ClockTests {
    @Test func monotonicNeverGoesBackwards() {
        let first = Clock.monotonic.now()
        usleep(2_000)
        let second = Clock.monotonic.now()
        #expect(second >= first + 2_000)
    }

    @Test func realtimeIsMicrosecondsSinceTheEpoch() {
        let seconds = UInt64(time(nil))
        let usec = Clock.realtime.now()
        #expect(usec / 1_000_000 >= seconds && usec / 1_000_000 <= seconds + 1)
    }

    @Test func boottimeIncludesAtLeastTheMonotonicTime() {
        let monotonic = Clock.monotonic.now()
        #expect(Clock.boottime.now() >= monotonic)
    }

    @Test func clockIDsMatchLibc() {
        #expect(Clock.monotonic.id == CLOCK_MONOTONIC)
        #expect(Clock.realtime.id == CLOCK_REALTIME)
        #expect(Clock.boottime.id == CLOCK_BOOTTIME)
    }
}
