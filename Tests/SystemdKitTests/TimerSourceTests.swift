import Glibc
import SystemdKit
import Testing

@Suite struct TimerSourceTests {
    @Test func timersFireInDeadlineOrder() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        let start = Clock.monotonic.now()
        var fired: [Int] = []
        // Added out of order; 10 ms apart with 1 µs accuracy, so each gets its own wake-up.
        for slot in [3, 1, 4, 2] {
            try loop.addTimer(at: start + UInt64(slot) * 10_000, accuracy: 1) { [unowned loop] in
                fired.append(slot)
                if fired.count == 4 { loop.exit(code: 0) }
            }
        }
        #expect(try loop.run() == 0)
        #expect(fired == [1, 2, 3, 4])
        #expect(Clock.monotonic.now() >= start + 40_000)
    }

    @Test func rescheduleFromInsideTheHandlerRearms() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        let start = Clock.monotonic.now()
        var firedAt: [UInt64] = []
        var timer: TimerSource?
        timer = try loop.addTimer(at: start + 5_000, accuracy: 1) { [unowned loop] in
            firedAt.append(Clock.monotonic.now())
            if firedAt.count < 3 {
                // Regular intervals: step from the previous deadline, not from "now".
                let next = (timer?.deadline ?? 0) + 5_000
                #expect(timer?.reschedule(at: next) == true)
                #expect(timer?.isArmed == true)
            } else {
                loop.exit(code: 0)
            }
        }
        #expect(try loop.run() == 0)
        #expect(firedAt.count == 3)
        #expect(firedAt.last.map { $0 >= start + 15_000 } == true)
        #expect(timer?.deadline == start + 15_000)
    }

    @Test func rescheduleAfterIsRelativeToTheIteration() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        var firedAt: [UInt64] = []
        var expectedAfter: UInt64 = 0
        var timer: TimerSource?
        timer = try loop.addTimer(at: 0, accuracy: 1) { [unowned loop] in
            firedAt.append(Clock.monotonic.now())
            if firedAt.count == 1 {
                expectedAfter = loop.nowMonotonic + 20_000
                timer?.reschedule(after: 20_000)
            } else {
                loop.exit(code: 0)
            }
        }
        #expect(try loop.run() == 0)
        #expect(firedAt.count == 2)
        #expect(timer?.deadline == expectedAfter)
        #expect(firedAt[1] >= expectedAfter)
    }

    @Test func disarmedTimerDoesNotFireAndCanBeRearmed() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        let start = Clock.monotonic.now()
        var fired: [String] = []
        let early = try loop.addTimer(at: start + 10_000, accuracy: 1) { fired.append("early") }
        #expect(early.isArmed)
        early.disarm()
        #expect(!early.isArmed)
        try loop.addTimer(at: start + 30_000, accuracy: 1) { fired.append("middle") }
        try loop.addTimer(at: start + 60_000, accuracy: 1) { [unowned loop] in
            fired.append("late")
            loop.exit(code: 0)
        }
        #expect(try loop.run() == 0)
        #expect(fired == ["middle", "late"])

        let second = try EventLoop()
        try second.addSafetyTimer()
        let timer = try second.addTimer(at: Clock.monotonic.now() + 10_000, accuracy: 1) { [unowned second] in
            second.exit(code: 5)
        }
        timer.disarm()
        #expect(timer.reschedule(at: Clock.monotonic.now() + 10_000))
        #expect(try second.run() == 5)
    }

    @Test func pastDeadlineFiresOnTheNextIteration() throws {
        let loop = try EventLoop()
        var fired = false
        try loop.addTimer(at: 1, accuracy: 1) { fired = true }
        #expect(try loop.runIteration(timeoutUSec: 1_000_000))
        #expect(fired)
    }

    @Test func realtimeAndBoottimeClocksWork() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        var fired: [Clock] = []
        for clock in [Clock.realtime, .boottime] {
            let timer = try loop.addTimer(clock: clock, at: clock.now() + 10_000, accuracy: 1) { [unowned loop] in
                fired.append(clock)
                if fired.count == 2 { loop.exit(code: 0) }
            }
            #expect(timer.clock == clock)
        }
        #expect(try loop.run() == 0)
        #expect(Set(fired) == [.realtime, .boottime])
    }

    @Test func cancelledTimerRefusesReschedule() throws {
        let loop = try EventLoop()
        let timer = try loop.addTimer(at: .max) { }
        timer.cancel()
        #expect(timer.reschedule(at: 0) == false)
        #expect(timer.deadline == nil)
        #expect(!timer.isArmed)
        timer.disarm()
    }
}
