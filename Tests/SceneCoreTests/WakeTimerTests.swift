import Testing
@testable import SceneCore

/// The timers of a wake (R34): a task warned at its deadline and closed one grace later, a
/// notification closed at its deadline, the app suspended (never killed) when nothing is left;
/// restore of the stored tables; floods and large tables.
@Suite struct WakeTimerTests {
    @Test func aTaskItemIsWarnedAtItsDeadlineThenClosedAndTheAppSuspended() throws {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])), at: at(10))
        // Stale wake-ups may come earlier; never a late one.
        #expect(h.engine.nextDeadline.map { $0 <= at(40) } == true)
        #expect(h.tick(at: atMs(39_999)) == [])
        // Ticked late: each event carries the time it was due.
        let e = try h.run(.tick, at: at(100))
        #expect(e.map(Step.init) == [wakeExpireStep, suspendedStep])
        #expect(e.map(\.time) == [at(40), at(42)])
        #expect(e.map(\.cause) == [.timer, .background])
        #expect(e.first?.detail == .wake(WakeDetail(kind: .refresh, identifier: "feed", deadline: at(42))))
        #expect(h.process(mail) == .suspended && h.engine.apps[mail]?.wakes == [])
        #expect(h.tick(at: at(1_000)) == [])
    }

    @Test func answeringWithinTheGraceStillSuspends() {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed", kind: .processing))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])), at: at(10))
        #expect(h.tick(at: at(190)) == [wakeExpireStep])
        #expect(h.steps(.endWake(mail, .task("feed"), success: false), at: at(191)) == [suspendedStep])
        #expect(h.tick(at: at(500)) == [])
    }

    @Test func aNotificationItemClosesAtItsDeadlineWithNoEvent() throws {
        var h = Harness()
        h.suspendedApp(mail)
        let n1 = h.notify(mail), n2 = h.notify(mail)
        h.steps(.wake(WakeRequest(app: mail, notifications: [n1])), at: at(10))
        h.steps(.wake(WakeRequest(app: mail, notifications: [n2])), at: at(20))
        // The first closes unanswered at 40 with no event; the second still holds the app.
        #expect(h.tick(at: at(45)) == [])
        #expect(h.engine.apps[mail]?.wakes.map(\.subject) == [.notification(n2)])
        let e = try h.run(.tick, at: at(51))
        #expect(e.map(Step.init) == [suspendedStep] && e.first?.time == at(50))
    }

    @Test func aWokenAppWithAForegroundSceneIsWarnedAndKeptRunning() {
        var h = Harness()
        let s = h.connect(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])))
        #expect(h.tick(at: at(30)) == [wakeExpireStep])
        #expect(h.tick(at: at(32)) == [])
        #expect(h.process(mail) == .running && h.engine.apps[mail]?.wakes == [])
        h.steps(.background(s), at: at(40))
        #expect(h.tick(at: at(45)) == [suspendedStep])
    }

    @Test func aBackgroundTaskDoesNotOutliveItsBudgetBecauseOfAWake() {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed", kind: .processing))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])), at: at(10))
        let token = h.beginTask(app: mail)
        // The task's budget runs from the resumption; its kill is R24's, whatever the wake.
        #expect(h.tick(at: at(40)) == [expireStep(nil)])
        #expect(h.tick(at: at(42)).map(\.name) == [.terminated])
        #expect(h.engine.tasks[token] == nil && h.engine.apps[mail]?.wakes == [])
    }

    @Test func sleepClosesTheItemsWithoutEvents() {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        let n = h.notify(mail)
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"], notifications: [n])), at: at(10))
        #expect(h.steps(.suspend(mail, cause: .sleep), at: at(11)) == [suspendedStep])
        #expect(h.engine.apps[mail]?.wakes == [])
        #expect(h.tick(at: at(99)) == [])
        // Delivered exactly once: the rows went with the wake.
        #expect(h.engine.schedules.isEmpty && h.engine.notifications.isEmpty)
        h.steps(.resume(mail, cause: .sleep), at: at(100))
        #expect(h.tick(at: at(105)) == [suspendedStep])
    }

    @Test func restoreRoundTrip() throws {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed", at: at(90)))
        h.steps(refreshTask(mail, "index", at: at(70), kind: .processing))
        h.steps(refreshTask(maps, "sync", at: at(80)))
        _ = h.notify(mail, "{\"a\":1}")
        let n2 = h.notify(mail, "{\"a\":2}", priority: .high)
        h.steps(.wake(WakeRequest(app: mail, notifications: [n2])), at: at(20))
        h.steps(.beginActivity(mail, .audio))
        let stored = h.engine.snapshot
        #expect(stored.schedules.map(\.identifier) == ["feed", "index", "sync"])
        #expect(stored.notifications.map(\.id) == [NotificationID(1)] && stored.nextNotificationNumber == 3)
        let restored = try LifecycleEngine(restoring: stored)
        #expect(restored.schedules == h.engine.schedules && restored.notifications == h.engine.notifications)
        #expect(restored.nextNotificationNumber == 3 && restored.nextScheduleDue == at(70))
        #expect(restored.apps[mail]?.scheduled == ["feed", "index"] && restored.apps[maps]?.scheduled == ["sync"])
        #expect(restored.apps[mail]?.pendingNotifications == [NotificationID(1)])
        #expect(restored.apps[mail]?.wakes == [] && restored.apps[mail]?.activeModes == .audio)
        #expect(restored.snapshot.schedules == stored.schedules && restored.snapshot.notifications == stored.notifications)
        #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty)
        // Through EngineTables too, with the counter stored behind the ids.
        var tables = EngineTables(apps: stored.apps, sessions: try SessionTable(stored.sessions), tasks: stored.tasks,
                                  clock: stored.clock, nextSequence: stored.nextSequence,
                                  nextSessionNumber: stored.nextSessionNumber, nextTaskNumber: stored.nextTaskNumber,
                                  schedules: stored.schedules, notifications: stored.notifications, nextNotificationNumber: 1)
        #expect(try LifecycleEngine(restoring: tables).nextNotificationNumber == 2)
        tables = EngineTables(apps: [], sessions: SessionTable(), tasks: [], clock: .zero, nextSequence: 1,
                              nextSessionNumber: 1, nextTaskNumber: 1, schedules: stored.schedules)
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: tables) }
    }

    @Test func anAppStoredWhileWokenIsIdleAfterRestore() throws {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])), at: at(10))
        #expect(h.engine.apps[mail]?.idleSince == nil)
        var stored = h.engine.snapshot
        stored.clock = at(12)
        var restored = try LifecycleEngine(restoring: stored)
        #expect(restored.apps[mail]?.idleSince == at(12) && restored.nextDeadline == at(17))
        #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty)
        var effects: [Effect] = []
        try restored.handle(.tick, now: at(20), effects: &effects)
        #expect(events(effects).map(\.name) == [.suspended])
    }

    @Test func restoreRefusesDuplicatesAndUnknownApps() throws {
        let app = AppRecord(id: mail, process: .notRunning)
        let task = ScheduledTask(app: mail, identifier: "a", kind: .refresh, earliestBegin: .zero, submittedAt: .zero)
        let note = PendingNotification(id: NotificationID(4), app: mail, payload: "{}", priority: .normal, queuedAt: .zero)
        func tables(_ s: [ScheduledTask], _ n: [PendingNotification]) -> EngineTables {
            EngineTables(apps: [app], sessions: SessionTable(), tasks: [], clock: .zero, nextSequence: 1,
                         nextSessionNumber: 1, nextTaskNumber: 1, schedules: s, notifications: n)
        }
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: tables([task, task], [])) }
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: tables([], [note, note])) }
        let stray = PendingNotification(id: NotificationID(5), app: maps, payload: "{}", priority: .normal, queuedAt: .zero)
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: tables([], [stray])) }
        let ok = try LifecycleEngine(restoring: tables([task], [note]))
        #expect(ok.nextNotificationNumber == 5 && ok.apps[mail]?.scheduled == ["a"])
    }

    /// A flood: a peer queueing without end is refused at the bound, its app's rows stay
    /// bounded, and the other apps are still served.
    @Test func aNotificationFloodIsBounded() {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        var refused = 0
        for i in 0..<10_000 {
            effects.removeAll(keepingCapacity: true)
            do {
                try engine.handle(.queueNotification(app: mail, payload: "{\"i\":\(i)}", priority: .high), now: .zero,
                                  effects: &effects)
            } catch {
                guard case .limitExceeded(limit: "MaxPendingNotifications", _, _) = error else {
                    Issue.record("\(error)")
                    return
                }
                refused += 1
            }
        }
        #expect(refused == 10_000 - 64 && engine.notifications.count == 64)
        #expect((try? engine.handle(.queueNotification(app: maps, payload: "{}", priority: .normal), now: .zero,
                                    effects: &effects)) == .notification(NotificationID(65)))
    }

    /// Ten thousand schedules: each command still costs the same (no scan of the table), and
    /// the earliest due time follows cancellations and replacements. The cost is the two
    /// figures checked below; the time limit only catches a wedge, and is wide because under
    /// ThreadSanitizer, beside the whole suite on two cores, the test may wait minutes for a
    /// thread.
    @Test(.timeLimit(.minutes(5))) func tenThousandSchedulesKeepCommandsCheap() throws {
        var engine = LifecycleEngine(configuration: EngineConfiguration(maxScheduledTasks: 10_000))
        var effects: [Effect] = []
        let clock = ContinuousClock()
        let start = clock.now
        for i in 0..<10_000 {
            try engine.handle(refreshTask(mail, "t\(i)", at: at(Int64(10_000 - i))), now: .zero, effects: &effects)
        }
        let filled = clock.now - start
        #expect(engine.nextScheduleDue == at(1))
        // Cancel the earliest half: each cancellation pops only the stale tops.
        let cancelStart = clock.now
        for i in stride(from: 9_999, through: 5_000, by: -1) {
            try engine.handle(.cancelTask(mail, identifier: "t\(i)"), now: .zero, effects: &effects)
        }
        let cancelled = clock.now - cancelStart
        #expect(engine.nextScheduleDue == at(5_001))
        // Replace each remaining one with a later time, many times over: the index stays bounded.
        for round in 0..<4 {
            for i in 0..<5_000 {
                try engine.handle(refreshTask(mail, "t\(i)", at: at(Int64(20_000 + round * 10 + i % 7))), now: .zero,
                                  effects: &effects)
            }
        }
        #expect(engine.nextScheduleDue == at(20_030))
        #expect(engine.scheduleIndex.count <= 2 * engine.schedules.count + 32)
        print("10,000 schedules: filled in \(filled), 5,000 cancelled in \(cancelled)")
        #expect(filled < .seconds(10) && cancelled < .seconds(10))
    }
}
