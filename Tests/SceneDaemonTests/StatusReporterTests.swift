import Glibc
import SystemdKit
import Testing
@testable import SceneDaemon

/// STATUS= is rate-limited, and so is building its line: the daemon calls `changed()` at every
/// commit, and a line built each time costs the loop (it did once the interval had passed and
/// the line had not changed).
@Suite("StatusReporter")
struct StatusReporterTests {
    @Test("an unchanged line is built at most once per interval, however often changed() is called")
    func unchangedLineIsNotRebuiltPerCall() throws {
        let loop = try EventLoop()
        var builds = 0
        let reporter = StatusReporter(loop: loop, interval: 200_000) {
            builds += 1
            return "3 sessions"
        }
        reporter.changed()
        #expect(builds == 1, "the first change is sent at once")
        usleep(220_000)
        // The interval has passed: one check, then the next calls wait for the timer.
        for _ in 0..<1000 { reporter.changed() }
        #expect(builds == 2, "\(builds) builds for 1,000 calls after the interval: the line was rebuilt per call")
    }

    @Test("a change made within the interval is still delivered when it ends")
    func changeWithinIntervalIsDelivered() throws {
        let loop = try EventLoop()
        var text = "1 session"
        var builds = 0
        let reporter = StatusReporter(loop: loop, interval: 20_000) {
            builds += 1
            return text
        }
        reporter.changed()
        text = "2 sessions"
        reporter.changed()
        #expect(builds == 1, "within the interval nothing is built")
        // The timer armed for the end of the interval builds and sends the new line.
        let deadline = Clock.monotonic.now() + 2_000_000
        while builds < 2 && Clock.monotonic.now() < deadline { _ = try loop.runIteration(timeoutUSec: 10_000) }
        #expect(builds == 2, "the change made within the interval was not delivered")
    }
}
