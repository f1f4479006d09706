import SceneCore
import Testing
@testable import SceneDaemon

/// The pure life of a started app's process: spawn, attach or fail, freeze and thaw with its
/// app's suspension, stop with willTerminate's deadline then SIGTERM then kill, exits.
@Suite struct LaunchTableTests {
    let mail = AppID("com.example.mail")!
    let timeouts = LaunchTable.Timeouts(attach: .seconds(10), stop: .seconds(5), willTerminate: .seconds(5))
    let limit = LaunchTable.StartLimit(interval: .seconds(10), burst: 3)

    func t(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    func event(_ name: EventName, reason: TerminationReason? = nil) -> LifecycleEvent {
        LifecycleEvent(seq: 1, time: t(0), name: name, app: mail, session: nil, sceneInstance: 0,
                       state: .process(.running), appState: .background, cause: .request,
                       detail: reason.map { .terminated(reason: $0, archived: []) } ?? .none)
    }

    /// A table with mail's process spawned (pid 42) at t(0) and attached.
    func running() -> LaunchTable {
        var table = LaunchTable()
        _ = table.launchWanted(mail, limit: limit, now: t(0))
        table.spawned(mail, pid: 42, timeouts: timeouts, now: t(0))
        _ = table.attached(mail)
        return table
    }

    @Test func aLaunchSpawnsOnceAndWaitersGoAheadAtTheAttach() {
        var table = LaunchTable()
        #expect(table.mustWait(mail, attached: false))
        #expect(table.launchWanted(mail, limit: limit, now: t(0)) == [.spawn(mail)])
        #expect(table.launchWanted(mail, limit: limit, now: t(0)) == [], "a second call waits for the same process")
        table.spawned(mail, pid: 42, timeouts: timeouts, now: t(0))
        #expect(table.launchWanted(mail, limit: limit, now: t(0)) == [])
        #expect(table.nextDeadline() == t(10_000))
        #expect(table.attached(mail) == [.resumeWaiters(mail)])
        #expect(table.attached(mail) == [], "a second attach completes nothing")
        #expect(!table.mustWait(mail, attached: false))
        #expect(!table.mustWait(mail, attached: true))
        #expect(table.nextDeadline() == nil)
    }

    @Test func noAttachInTimeKillsAndFails() {
        var table = LaunchTable()
        _ = table.launchWanted(mail, limit: limit, now: t(0))
        table.spawned(mail, pid: 42, timeouts: timeouts, now: t(0))
        #expect(table.expire(now: t(9_999)) == [])
        let actions = table.expire(now: t(10_000))
        #expect(actions.first == .kill(mail))
        guard case .failWaiters(mail, let message)? = actions.last else { Issue.record("\(actions)"); return }
        #expect(message.contains("did not attach within 10s"), "\(message)")
        // The exit that follows is not a death of a running app.
        #expect(table.exited(mail, status: "killed by signal 9", stillRunning: false, now: t(0)) == [.kill(mail), .cleanUp(mail)])
        #expect(table.isEmpty)
    }

    @Test func exitBeforeAttachFailsWithTheStatus() {
        var table = LaunchTable()
        _ = table.launchWanted(mail, limit: limit, now: t(0))
        table.spawned(mail, pid: 42, timeouts: timeouts, now: t(0))
        let actions = table.exited(mail, status: "exited with status 3", stillRunning: false, now: t(0))
        #expect(actions == [.kill(mail), .failWaiters(mail, "the process (pid 42) exited with status 3 before it attached"), .cleanUp(mail)])
    }

    @Test func spawnFailureFailsTheWaiters() {
        var table = LaunchTable()
        _ = table.launchWanted(mail, limit: limit, now: t(0))
        #expect(table.spawnFailed(mail, "exec /nope: No such file or directory", now: t(0))
                == [.failWaiters(mail, "exec /nope: No such file or directory"), .cleanUp(mail)])
        #expect(table.isEmpty)
        #expect(table.launchWanted(mail, limit: limit, now: t(0)) == [.spawn(mail)], "the next launch tries again")
    }

    @Test func frozenOnlyOnceNothingIsOwedAndThawedOnResume() {
        var table = running()
        #expect(table.observe(event(.suspended), now: t(1)) == [])
        #expect(table.settle(mail, owesAnswer: true) == [], "an answer is owed: a frozen process could not give it")
        #expect(table.settle(mail, owesAnswer: false) == [.freeze(mail)])
        #expect(table.settle(mail, owesAnswer: false) == [], "frozen once")
        #expect(table.process(of: mail)?.frozen == true)
        #expect(table.observe(event(.resumed), now: t(2)) == [.thaw(mail)])
        #expect(table.process(of: mail)?.frozen == false)
        #expect(table.observe(event(.resumed), now: t(3)) == [], "nothing to thaw")
        #expect(table.settle(mail, owesAnswer: false) == [], "not suspended any more")
    }

    @Test func aWakeThawsBeforeItsCommitAndTheResumedEventFindsItRunning() {
        var table = running()
        _ = table.observe(event(.suspended), now: t(1))
        #expect(table.settle(mail, owesAnswer: false) == [.freeze(mail)])
        #expect(table.thawForWake(mail) == [.thaw(mail)], "thawed while the wake's batch commits")
        #expect(table.thawForWake(mail) == [], "once")
        #expect(table.observe(event(.resumed), now: t(2)) == [], "the committed resumption: already thawed")
        #expect(table.settle(mail, owesAnswer: false) == [], "not suspended any more")
        _ = table.observe(event(.suspended), now: t(3))
        #expect(table.settle(mail, owesAnswer: false) == [.freeze(mail)], "frozen again after the wake")
    }

    @Test func aRequestedTerminationWaitsForWillTerminateThenSignalsThenKills() {
        var table = running()
        #expect(table.observe(event(.terminated, reason: .requested), now: t(100)) == [])
        #expect(table.nextDeadline() == t(5_100))
        #expect(table.expire(now: t(5_099)) == [])
        #expect(table.expire(now: t(5_100)) == [.signal(mail)])
        #expect(table.nextDeadline() == t(10_100))
        #expect(table.expire(now: t(10_100)) == [.kill(mail)])
        #expect(table.nextDeadline() == nil)
        #expect(table.exited(mail, status: "killed by signal 9", stillRunning: false, now: t(0)) == [.kill(mail), .cleanUp(mail)])
    }

    @Test func anAnswerToWillTerminateSignalsAtOnce() {
        var table = running()
        _ = table.observe(event(.terminated, reason: .memoryPressure), now: t(100))
        #expect(table.finished(mail, now: t(200)) == [.signal(mail)])
        #expect(table.finished(mail, now: t(300)) == [], "signalled once")
        #expect(table.nextDeadline() == t(5_200))
    }

    @Test func aQuitSignalsAtOnceAndAHungOrSuspendedAppIsKilled() {
        var quit = running()
        #expect(quit.observe(event(.terminated, reason: .exited), now: t(0)) == [.signal(mail)])
        var hung = running()
        #expect(hung.observe(event(.terminated, reason: .hung), now: t(0)) == [.kill(mail)])
        var suspended = running()
        _ = suspended.observe(event(.suspended), now: t(0))
        _ = suspended.settle(mail, owesAnswer: false)
        #expect(suspended.observe(event(.terminated, reason: .memoryPressure), now: t(1)) == [.kill(mail)],
                "a frozen process gets no willTerminate: killed")
        #expect(suspended.observe(event(.terminated, reason: .memoryPressure), now: t(2)) == [], "once")
    }

    @Test func anExitOfARunningAppIsADeath() {
        var table = running()
        #expect(table.exited(mail, status: "exited with status 1", stillRunning: true, now: t(0))
                == [.kill(mail), .died(mail, "its process (pid 42) exited with status 1"), .cleanUp(mail)])
        var gone = running()
        #expect(gone.exited(mail, status: "exited with status 0", stillRunning: false, now: t(0)) == [.kill(mail), .cleanUp(mail)],
                "already terminated (it detached): no second termination")
    }

    @Test func aLaunchDuringAStopStartsAgainOnceTheOldProcessIsGone() {
        var table = running()
        _ = table.observe(event(.terminated, reason: .requested), now: t(0))
        #expect(table.mustWait(mail, attached: false))
        #expect(table.launchWanted(mail, limit: limit, now: t(0)) == [])
        #expect(table.exited(mail, status: "exited with status 0", stillRunning: false, now: t(0)) == [.kill(mail), .cleanUp(mail), .spawn(mail)])
        table.spawned(mail, pid: 43, timeouts: timeouts, now: t(1))
        #expect(table.attached(mail) == [.resumeWaiters(mail)])
    }

    @Test func repeatedFailuresHitTheStartLimitUntilTheIntervalPasses() {
        var table = LaunchTable()
        // Three launches fail in different ways within the interval.
        #expect(table.launchWanted(mail, limit: limit, now: t(0)) == [.spawn(mail)])
        _ = table.spawnFailed(mail, "exec: No such file or directory", now: t(0))
        #expect(table.launchWanted(mail, limit: limit, now: t(1_000)) == [.spawn(mail)])
        table.spawned(mail, pid: 42, timeouts: timeouts, now: t(1_000))
        _ = table.exited(mail, status: "exited with status 3", stillRunning: false, now: t(1_100))
        #expect(table.launchWanted(mail, limit: limit, now: t(2_000)) == [.spawn(mail)])
        table.spawned(mail, pid: 43, timeouts: timeouts, now: t(2_000))
        _ = table.expire(now: t(12_000))
        _ = table.exited(mail, status: "killed by signal 9", stillRunning: false, now: t(12_001))
        // The fourth is refused without a spawn, saying when to try again.
        guard case .failWaiters(mail, let message)? = table.launchWanted(mail, limit: limit, now: t(9_000)).first else {
            Issue.record("no refusal"); return
        }
        #expect(message.contains("start limit hit: 3 failed launches within 10s"), "\(message)")
        // Ten seconds after the oldest failure, one has aged out: a launch may be tried again.
        #expect(table.launchWanted(mail, limit: limit, now: t(10_000)) == [.spawn(mail)])
        // A success does not count.
        var ok = running()
        for i in 0..<5 {
            _ = ok.observe(event(.terminated, reason: .requested), now: t(Int64(i)))
            _ = ok.exited(mail, status: "exited with status 0", stillRunning: false, now: t(Int64(i)))
            #expect(ok.launchWanted(mail, limit: limit, now: t(Int64(i))) == [.spawn(mail)])
            ok.spawned(mail, pid: 50 + Int32(i), timeouts: timeouts, now: t(Int64(i)))
            _ = ok.attached(mail)
        }
    }

    @Test func eventsOfOtherAppsAndUnknownExitsChangeNothing() {
        var table = LaunchTable()
        #expect(table.observe(event(.suspended), now: t(0)) == [])
        #expect(table.exited(mail, status: "x", stillRunning: true, now: t(0)) == [])
        #expect(table.attached(mail) == [])
        #expect(table.finished(mail, now: t(0)) == [])
        #expect(table.isEmpty)
    }
}
