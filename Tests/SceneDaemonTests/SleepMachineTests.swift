import SceneCore
import Testing
@testable import SceneDaemon

/// SleepMachine (R31): the delay inhibitor goes only once the apps are frozen as the kernel
/// reports it, or at the bound.
@Suite("SleepMachine")
struct SleepMachineTests {
    static let bound = TimeSpan.milliseconds(4_500)

    func at(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    func view(_ ms: Int64, settled: Bool = true, owes: Bool = false, frozen: Bool) -> SleepMachine.View {
        SleepMachine.View(now: at(ms), settled: settled, owesAnswers: owes, frozen: frozen)
    }

    @Test("the inhibitor waits for the kernel's freeze, looking again every 10 ms, then goes")
    func waitsForTheFreeze() {
        var m = SleepMachine()
        #expect(m.prepare(now: at(0), bound: Self.bound) == [.hold(true)])
        #expect(m.step(view(5, owes: true, frozen: false)) == [], "answers owed")
        #expect(m.step(view(20, frozen: false)) == [.suspendApps])
        #expect(m.step(view(30, frozen: false)) == [], "written, not yet frozen")
        #expect(m.nextDeadline == at(40), "looked at again soon, not at the bound")
        #expect(m.step(view(40, frozen: false)) == [])
        #expect(m.nextDeadline == at(50))
        #expect(m.step(view(50, frozen: true)) == [.releaseInhibitor])
        #expect(m.phase == .asleep)
        #expect(m.nextDeadline == nil)
        #expect(m.resumed() == [.resumeApps([]), .hold(false)])
        #expect(m.nextDeadline == nil)
    }

    @Test("a freeze that never completes holds the sleep up to the bound only")
    func boundedFreeze() {
        var m = SleepMachine()
        _ = m.prepare(now: at(0), bound: Self.bound)
        #expect(m.step(view(10, frozen: false)) == [.suspendApps])
        #expect(m.step(view(4_499, frozen: false)) == [])
        #expect(m.nextDeadline == at(4_500), "the bound comes before the next look")
        #expect(m.step(view(4_500, settled: false, frozen: false)) == [.releaseInhibitor])
    }
}
