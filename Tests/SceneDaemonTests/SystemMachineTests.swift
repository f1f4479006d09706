import SceneCore
import Testing
@testable import SceneDaemon

/// The system's pure parts: which holds are in force (SystemHolds), the stop's steps (R32)
/// and sleep's (R31), each bounded in time.
@Suite("System holds, the stop and sleep")
struct SystemMachineTests {
    let mail = AppID("com.example.mail")!
    let kiosk = AppID("com.example.kiosk")!
    func t(_ s: Int64) -> Timestamp { Timestamp.zero + .seconds(s) }

    @Test func interruptionsNestAndEndWithTheirConnection() {
        var h = SystemHolds()
        let a = h.beginInterruption(reason: "call", owner: 1, now: t(1))
        _ = h.beginInterruption(reason: "switcher", owner: 2, now: t(2))
        #expect(h.policy(now: t(3), daemonUID: 0, appUIDs: [:]).system == Hold(.inactive, cause: .interruption))
        let ended = h.endInterruption(a), again = h.endInterruption(a)
        #expect(ended && !again)
        #expect(h.policy(now: t(3), daemonUID: 0, appUIDs: [:]).system.level == .inactive)
        let r1 = h.endInterruptions(ownedBy: 2)
        #expect(r1 == 1)
        #expect(h.policy(now: t(3), daemonUID: 0, appUIDs: [:]) == HoldPolicy())
    }

    @Test func aLockResignsFirstThenSendsToTheBackgroundAfterTheDelay() {
        var h = SystemHolds()
        h.lockedBackground = .seconds(2)
        h.setLock(uid: 1000, cause: .lock, now: t(10))
        let apps = [kiosk: UInt32(1000)]
        #expect(h.policy(now: t(11), daemonUID: 0, appUIDs: apps).apps[kiosk] == Hold(.inactive, cause: .lock))
        #expect(h.nextEscalation(after: t(11)) == t(12))
        // A change of cause (locked, then also inactive) does not restart the delay.
        h.setLock(uid: 1000, cause: .session, now: t(11))
        #expect(h.policy(now: t(12), daemonUID: 0, appUIDs: apps).apps[kiosk] == Hold(.background, cause: .session))
        #expect(h.policy(now: t(12), daemonUID: 0, appUIDs: apps).standard == .none)
        h.setLock(uid: 1000, cause: nil, now: t(13))
        #expect(h.policy(now: t(13), daemonUID: 0, appUIDs: apps) == HoldPolicy(apps: [kiosk: .none]))
    }

    @Test func theDaemonsOwnUserIsTheStandardHoldAndAStopOutranksAll() {
        var h = SystemHolds()
        h.setLock(uid: 0, cause: .lock, now: t(1))
        _ = h.beginInterruption(reason: "call", owner: 1, now: t(1))
        var p = h.policy(now: t(1), daemonUID: 0, appUIDs: [mail: 0])
        #expect(p.standard == Hold(.background, cause: .lock) && p.apps.isEmpty)
        #expect(p.hold(for: mail) == Hold(.background, cause: .lock))
        h.sleeping = true
        #expect(h.policy(now: t(1), daemonUID: 0, appUIDs: [:]).system == Hold(.background, cause: .sleep))
        h.stopping = true
        p = h.policy(now: t(1), daemonUID: 0, appUIDs: [:])
        #expect(p.system == Hold(.background, cause: .shutdown))
    }

    func view(_ now: Timestamp, settled: Bool = true, owes: Bool = false, left: Bool = false) -> StopMachine.View {
        StopMachine.View(now: now, settled: settled, owesAnswers: owes, startedAppsLeft: left)
    }

    @Test func aStopWaitsForAnswersThenForTheStartedAppsThenExits() {
        var m = StopMachine()
        let begun = m.begin(now: t(0), timeout: .seconds(20), forShutdown: false)
        #expect(begun == [.extendTimeout(microseconds: 25_000_000), .holdAll])
        // Nothing moves before the hold's events are committed and delivered.
        let r2 = m.step(view(t(1), settled: false))
        #expect(r2 == [])
        let r3 = m.step(view(t(1), owes: true))
        #expect(r3 == [])
        let r4 = m.step(view(t(2)))
        #expect(r4 == [.terminateStartedApps])
        let r5 = m.step(view(t(3), owes: true, left: true))
        #expect(r5 == [])
        let r6 = m.step(view(t(4), left: true))
        #expect(r6 == [])
        let r7 = m.step(view(t(5)))
        #expect(r7 == [.exit])
        #expect(m.phase == .finished && m.nextDeadline == nil)
    }

    @Test func aStopIsBoundedAndASecondSignalStopsWaiting() {
        var m = StopMachine()
        _ = m.begin(now: t(0), timeout: .seconds(3), forShutdown: false)
        #expect(m.nextDeadline == t(3))
        // An app that never answers costs at most the bound, even unsettled.
        let r8 = m.step(view(t(3), settled: false, owes: true))
        #expect(r8 == [.terminateStartedApps])
        let r9 = m.step(view(t(3), owes: true, left: true))
        #expect(r9 == [.killLeft, .exit])
        var n = StopMachine()
        _ = n.begin(now: t(0), timeout: .seconds(20), forShutdown: false)
        let r10 = n.begin(now: t(1), timeout: .seconds(20), forShutdown: false)
        #expect(r10 == [.killLeft, .exit])
    }

    @Test func theMachinesShutdownReleasesTheInhibitorAndWaitsForSIGTERM() {
        var m = StopMachine()
        _ = m.begin(now: t(0), timeout: .seconds(20), forShutdown: true)
        let r11 = m.step(view(t(1)))
        #expect(r11 == [.terminateStartedApps])
        let r12 = m.step(view(t(2)))
        #expect(r12 == [.releaseInhibitor])
        let r13 = m.begin(now: t(3), timeout: .seconds(20), forShutdown: false)
        #expect(r13 == [.exit])
        // SIGTERM while the shutdown's stop runs: it runs on, then exits.
        var d = StopMachine()
        _ = d.begin(now: t(0), timeout: .seconds(20), forShutdown: true)
        let term = d.begin(now: t(1), timeout: .seconds(20), forShutdown: false)
        let terminating = d.step(view(t(2)))
        let done = d.step(view(t(3)))
        #expect(term == [] && terminating == [.terminateStartedApps] && done == [.exit])
        var c = StopMachine()
        _ = c.begin(now: t(0), timeout: .seconds(20), forShutdown: true)
        let cancelled = c.cancelShutdown()
        #expect(cancelled && c.phase == .running)
    }

    @Test func sleepSuspendsAfterTheAnswersAndReleasesOnceFrozen() {
        var s = SleepMachine()
        let r14 = s.prepare(now: t(0), bound: .milliseconds(4_500))
        #expect(r14 == [.hold(true)])
        let base = SleepMachine.View(now: t(1), settled: true, owesAnswers: true, frozen: false)
        let r15 = s.step(base)
        #expect(r15 == [])
        var v = base
        v.owesAnswers = false
        let r16 = s.step(v)
        #expect(r16 == [.suspendApps])
        s.noteSuspended([mail])
        let r17 = s.step(v)
        #expect(r17 == [])
        v.frozen = true
        let r18 = s.step(v)
        #expect(r18 == [.releaseInhibitor])
        let r19 = s.resumed()
        #expect(r19 == [.resumeApps([mail]), .hold(false)])
        let twice = s.resumed()
        #expect(s.phase == .awake && twice == [])
    }

    @Test func sleepNeverHoldsLogindPastItsBound() {
        var s = SleepMachine()
        _ = s.prepare(now: t(0), bound: .seconds(4))
        let stuck = SleepMachine.View(now: t(4), settled: false, owesAnswers: true, frozen: false)
        let r20 = s.step(stuck)
        #expect(r20 == [.suspendApps])
        let r21 = s.step(stuck)
        #expect(r21 == [.releaseInhibitor])
    }
}
