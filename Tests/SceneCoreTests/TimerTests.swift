import Testing
@testable import SceneCore

/// Suspension after the delay (R21), `resumed`, background-task expiry and the watchdog kill
/// (R24): every timer event carries the time it was due, and due timers fire in `handle`
/// before the command.
@Suite struct TimerTests {
    let s1 = SessionID(1), s2 = SessionID(2)

    // MARK: Suspension

    @Test func suspendedExactlyAfterTheDelay() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1), at: at(10))
        #expect(h.engine.apps[mail].flatMap(h.engine.suspensionTime(of:)) == at(15))
        #expect(h.engine.nextDeadline == at(15))
        #expect(h.tick(at: atMs(14_999)) == [])
        // Ticked late, the event still carries the time it was due.
        let s = try h.run(.tick, at: at(500))
        #expect(s.map(Step.init) == [suspendedStep])
        #expect(s[at: 0]?.time == at(15) && s[at: 0]?.cause == .timer)
        #expect(h.engine.clock == at(500))
        #expect(h.engine.apps[mail].flatMap(h.engine.suspensionTime(of:)) == nil)
    }

    @Test func dueTimersFireBeforeTheCommand() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        let e = try h.run(.activate(s1), at: at(7))
        #expect(e.map(Step.init) == [suspendedStep, resumedStep, enterForeground(s1), becomeActive(s1)])
        #expect(e.map(\.time) == [at(5), at(7), at(7), at(7)])
        #expect(e.map(\.cause) == [.timer, .request, .request, .request])
    }

    @Test func aTimerDueAtTheCommandsInstantFiresFirst() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        #expect(try h.run(.activate(s1), at: at(5)).map(Step.init)
                == [suspendedStep, resumedStep, enterForeground(s1), becomeActive(s1)])
    }

    @Test func aLaunchedAppWithNoSceneIsSuspended() {
        var h = Harness()
        h.steps(.launch(mail), at: at(2))
        #expect(h.tick(at: at(7)) == [suspendedStep])
        #expect(h.log.last?.time == at(7))
    }

    @Test func aForegroundSceneKeepsTheAppRunning() {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(mail, background: true)
        #expect(h.tick(at: at(1_000)) == [])
        h.steps(.deactivate(s1))
        #expect(h.tick(at: at(2_000)) == [])
        // Once the last foreground scene leaves, the clock starts.
        h.steps(.background(s1))
        #expect(h.tick(at: at(2_005)) == [suspendedStep])
    }

    @Test func resumedAppIsSuspendedAgainAfterAFullDelay() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        _ = h.connect(mail, background: true)
        h.tick(at: at(5))
        #expect(h.steps(.disconnect(s1), at: at(20)) == [resumedStep, disconnected(s1)])
        #expect(h.tick(at: atMs(24_999)) == [])
        #expect(h.tick(at: at(25)) == [suspendedStep])
    }

    /// A scene connected straight to the background gets the full delay to handle its
    /// didEnterBackground, even when its app was already idle (fix: the clock used to keep
    /// running, suspending the app 100 ms after the callback here).
    @Test func backgroundConnectionRestartsTheSuspensionClock() throws {
        var h = Harness()
        h.steps(.launch(mail))
        #expect(try h.run(.connect(ConnectRequest(app: mail, background: true)), at: atMs(4_900)).map(Step.init)
                == [configure(s1), connectTo(s1), enterBackground(s1)])
        #expect(h.tick(at: at(9)) == [])
        #expect(h.tick(at: at(10)) == [suspendedStep])
        #expect(h.log.last?.time == atMs(9_900))
    }

    /// The task budget, however, keeps running from when the app entered the background.
    @Test func backgroundConnectionDoesNotExtendTheTaskBudget() throws {
        var h = Harness()
        h.steps(.launch(mail))
        _ = h.beginTask(app: mail)
        _ = try h.run(.connect(ConnectRequest(app: mail, background: true)), at: at(20))
        let expiry = try h.run(.tick, at: at(31))
        #expect(expiry.map(Step.init) == [expireStep(nil)] && expiry[at: 0]?.time == at(30))
    }

    @Test func earlySuspensionByReclaim() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        #expect(h.steps(.suspend(mail, cause: .reclaim(note)), at: at(1)) == [suspendedStep])
        #expect(h.log.last?.time == at(1))
        // Nothing more is due.
        #expect(h.tick(at: at(100)) == [])
    }

    @Test func memoryWarningsDoNotTouchTheClocks() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.steps(.memoryWarning(apps: nil), at: at(4))
        #expect(h.tick(at: at(5)) == [suspendedStep])
    }

    // MARK: Background tasks

    @Test func aTaskKeepsTheAppRunningAndItsEndStartsTheClock() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        let t = h.beginTask(app: mail)  // at 0, in the background: no suspension at 5
        #expect(h.tick(at: at(20)) == [])
        h.steps(.endTask(t), at: at(21))
        #expect(h.tick(at: atMs(25_999)) == [])
        #expect(h.tick(at: at(26)) == [suspendedStep])
    }

    @Test func aTaskBegunWhileIdleStopsThePendingSuspension() throws {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.now = at(3)
        _ = h.beginTask(session: s1, name: "sync")
        #expect(h.tick(at: at(29)) == [])
        // The budget counts from the moment the app entered the background, not the task's start.
        let fired = try h.run(.tick, at: at(60))
        #expect(fired.map(Step.init) == [expireStep(s1), terminatedStep])
        #expect(fired.map(\.time) == [at(30), at(32)])
    }

    @Test func aForegroundTaskDoesNotExpireInTheForeground() {
        var h = Harness()
        _ = h.connect(mail)
        let t = h.beginTask(app: mail)
        #expect(h.engine.tasks[t].flatMap(h.engine.expiry(of:)) == nil)
        #expect(h.tick(at: at(10_000)) == [])
        h.steps(.background(s1))
        #expect(h.engine.tasks[t].flatMap(h.engine.expiry(of:)) == at(10_030))
    }

    @Test func aTaskBegunAfterTheBudgetExpiresAtOnce() throws {
        let config = EngineConfiguration(suspendDelay: .seconds(60), backgroundTaskBudget: .seconds(10),
                                         expirationGrace: .seconds(2))
        var h = Harness(configuration: config)
        _ = h.connect(mail, background: true)
        h.now = at(20)
        let t = h.beginTask(app: mail, name: "late")
        #expect(h.engine.tasks[t].flatMap(h.engine.expiry(of:)) == at(20))
        let fired = try h.run(.tick, at: at(20))
        #expect(fired.map(Step.init) == [expireStep(nil)] && fired[at: 0]?.time == at(20))
    }

    @Test func returningToTheForegroundResetsASentExpiration() throws {
        var h = Harness()
        _ = h.connect(mail)
        let t = h.beginTask(app: mail)
        h.steps(.background(s1))
        #expect(h.tick(at: at(30)) == [expireStep(nil)])
        #expect(h.engine.tasks[t]?.expirationSentAt == at(30))
        h.steps(.activate(s1), at: at(31))
        #expect(h.engine.tasks[t]?.expirationSentAt == nil)
        // No kill at 32; a new budget from the next background entry.
        #expect(h.tick(at: at(39)) == [])
        h.steps(.background(s1), at: at(40))
        #expect(h.tick(at: atMs(69_999)) == [])
        let fired = try h.run(.tick, at: at(80))
        #expect(fired.map(Step.init) == [expireStep(nil), terminatedStep])
        #expect(fired.map(\.time) == [at(70), at(72)])
    }

    @Test func endingTheTaskWithinTheGracePreventsTheKill() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        let t = h.beginTask(app: mail)
        #expect(h.tick(at: at(30)) == [expireStep(nil)])
        h.steps(.endTask(t), at: atMs(31_999))
        #expect(h.tick(at: at(36)) == [])
        #expect(h.tick(at: atMs(36_999)) == [suspendedStep])
        #expect(!h.log.contains { $0.name == .terminated })
    }

    @Test func endingTheTaskAtTheGracesEndIsTooLate() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        let t = h.beginTask(app: mail)
        h.tick(at: at(30))
        // The kill is due at 32 and fires before the command at 32: the task is gone.
        h.now = at(32)
        do {
            try h.run(.endTask(t))
            Issue.record("ending a killed task succeeded")
        } catch {
            #expect(error == .noSuchTask(t))
            #expect(events(h.lastEffects).map(Step.init) == [terminatedStep])
        }
    }

    @Test func severalTasksExpireTogetherAndOneOpenTaskIsEnough() throws {
        var h = Harness()
        _ = h.connect(mail)
        let a = h.beginTask(session: s1, name: "a")
        let b = h.beginTask(app: mail, name: "b")
        h.steps(.background(s1))
        let expiry = try h.run(.tick, at: at(30))
        #expect(expiry.map(Step.init) == [expireStep(s1), expireStep(nil)])
        #expect(expiry.map(\.detail) == [.task(a, name: "a"), .task(b, name: "b")])
        h.steps(.endTask(a), at: at(31))
        let kill = try h.run(.tick, at: at(32))
        #expect(kill.map(Step.init) == [terminatedStep])
        #expect(kill[at: 0]?.detail == .terminated(reason: .backgroundTaskExpired, archived: [s1]))
        #expect(h.engine.tasks.isEmpty && h.engine.apps[mail]?.tasks == [])
    }

    @Test func aTaskBegunAfterAnotherExpiredGetsItsOwnExpiration() throws {
        var h = Harness()
        _ = h.connect(mail, background: true)
        let first = h.beginTask(app: mail, name: "first")
        h.tick(at: at(30))
        h.steps(.endTask(first), at: atMs(30_500))
        let second = h.beginTask(app: mail, name: "second")
        // Its budget is already spent: its handler runs right away, then the grace.
        let fired = try h.run(.tick, at: at(40))
        #expect(fired.map(Step.init) == [expireStep(nil), terminatedStep])
        #expect(fired.map(\.time) == [atMs(30_500), atMs(32_500)])
        #expect(fired[at: 0]?.detail == .task(second, name: "second"))
    }

    @Test func killsOfSeveralAppsAreOrderedByTime() throws {
        var h = Harness()
        _ = h.connect(mail, background: true)
        _ = h.beginTask(app: mail)
        h.now = at(1)
        _ = h.connect(maps, background: true)
        _ = h.beginTask(app: maps)
        _ = h.connect(notes, background: true)
        let all = try h.run(.tick, at: at(100))
        #expect(all.map(\.name) == [.suspended, .backgroundTaskWillExpire, .backgroundTaskWillExpire,
                                    .terminated, .terminated])
        #expect(all.map(\.app) == [notes, mail, maps, mail, maps])
        #expect(all.map(\.time) == [at(6), at(30), at(31), at(32), at(33)])
    }

    // MARK: The clock

    @Test func aCommandStampedBeforeTheClockRunsAtTheClock() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.tick(at: at(50))
        let e = try h.run(.background(s1), at: at(10))
        #expect(e.allSatisfy { $0.time == at(50) })
        #expect(h.engine.clock == at(50))
        #expect(h.tick(at: at(55)) == [suspendedStep])
    }

    @Test func nextDeadlineIsNeverLate() {
        var h = Harness()
        #expect(h.engine.nextDeadline == nil)
        _ = h.connect(mail)
        // The launch queued a suspension that the foreground scene made moot: early, harmless.
        #expect(h.tick(at: at(5)) == [])
        #expect(h.engine.nextDeadline == nil)
        h.steps(.background(s1), at: at(6))
        #expect(h.engine.nextDeadline == at(11))
        h.steps(.activate(s1), at: at(7))
        #expect(h.engine.nextDeadline.map { $0 <= at(11) } ?? true)
        #expect(h.tick(at: at(11)) == [])
        #expect(h.engine.nextDeadline == nil)
    }
}
