import Testing
@testable import SceneDaemon

/// STATUS= is rate-limited, and so is building its line: the daemon asks at every commit, and
/// a line built each time costs the loop.
@Suite("StatusReporter")
struct StatusReporterTests {
    /// What the daemon does with a decision: counts builds, sends at once or arms the timer.
    struct Daemon {
        var reporter: StatusReporter
        var builds = 0
        var sent: [String] = []
        var armedAt: UInt64?

        mutating func changed(_ text: String, now: UInt64) {
            switch reporter.changed(now: now) {
            case .sendNow: send(text, now: now)
            case .arm(let at): armedAt = at
            case .wait: break
            }
        }

        mutating func timerFires(_ text: String) {
            guard let at = armedAt else { return }
            armedAt = nil
            reporter.timerFired()
            send(text, now: at)
        }

        mutating func send(_ text: String, now: UInt64) {
            builds += 1
            if let message = reporter.message(text, now: now) { sent.append(message) }
        }
    }

    @Test("an unchanged line is built at most once per interval, however often it changes")
    func unchangedLineIsNotRebuiltPerCall() {
        var d = Daemon(reporter: StatusReporter(interval: 200_000))
        d.changed("3 sessions", now: 1_000_000)
        #expect(d.builds == 1, "the first change is sent at once")
        // The interval has passed: one build, then the next changes wait for the timer.
        for i in 0..<1000 { d.changed("3 sessions", now: 1_220_000 + UInt64(i)) }
        #expect(d.builds == 2, "\(d.builds) builds for 1,000 changes after the interval: the line was rebuilt per change")
        #expect(d.sent == ["STATUS=3 sessions"], "an unchanged line is not sent again")
        #expect(d.armedAt == 1_420_000, "the timer is armed once, for the end of the interval")
    }

    @Test("a change made within the interval is still delivered when it ends")
    func changeWithinIntervalIsDelivered() {
        var d = Daemon(reporter: StatusReporter(interval: 20_000))
        d.changed("1 session", now: 1_000_000)
        d.changed("2 sessions", now: 1_005_000)
        #expect(d.builds == 1, "within the interval nothing is built")
        #expect(d.armedAt == 1_020_000)
        d.timerFires("2 sessions")
        #expect(d.sent == ["STATUS=1 session", "STATUS=2 sessions"], "the change made within the interval was not delivered")
    }

    @Test("a prefix is always sent, changed or not")
    func prefixIsAlwaysSent() {
        var r = StatusReporter(interval: 1_000_000)
        #expect(r.message("x", now: 1) == "STATUS=x")
        #expect(r.message("x", now: 2) == nil)
        #expect(r.message("x", now: 3, prefix: "READY=1\n") == "READY=1\nSTATUS=x")
    }
}
