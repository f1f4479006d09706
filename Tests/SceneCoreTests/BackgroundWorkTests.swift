import Testing
@testable import SceneCore

// Shared steps of background work (R34).
func wakeTask(_ identifier: String = "") -> Step { A(.performBackgroundTask, .running) }
let notifiedStep = A(.didReceiveNotification, .running)
let wakeExpireStep = A(.backgroundTaskWillExpire, .running)

func refreshTask(_ app: AppID, _ identifier: String, at time: Timestamp = .zero, kind: WakeKind = .refresh) -> Command {
    .scheduleTask(ScheduledTask(app: app, identifier: identifier, kind: kind, earliestBegin: time, submittedAt: .zero))
}

extension Harness {
    /// Queues a notification and returns its id.
    mutating func notify(_ app: AppID, _ payload: String = "{}", priority: NotificationPriority = .normal,
                         sourceLocation: SourceLocation = #_sourceLocation) -> NotificationID {
        let id = NotificationID(engine.nextNotificationNumber)
        steps(.queueNotification(app: app, payload: payload, priority: priority), sourceLocation: sourceLocation)
        #expect(engine.notifications[id] != nil, sourceLocation: sourceLocation)
        return id
    }

    /// A launched app, suspended after its delay: the usual state of an app about to be woken.
    mutating func suspendedApp(_ app: AppID, sourceLocation: SourceLocation = #_sourceLocation) {
        steps(.launch(app), sourceLocation: sourceLocation)
        #expect(tick(at: now + .seconds(5), sourceLocation: sourceLocation) == [suspendedStep], sourceLocation: sourceLocation)
    }

    var wakeDetails: [WakeDetail] {
        log.compactMap { if case .wake(let d) = $0.detail { d } else { nil } }
    }
}

/// The commands of background work and their refusals (R34).
@Suite struct BackgroundWorkTests {
    @Test func scheduleStoresTheTaskAndCreatesTheApp() throws {
        var h = Harness(now: at(3))
        #expect(try h.run(refreshTask(mail, "feed", at: at(60))) == [])
        #expect(h.lastEffects == [.appChanged(mail), .scheduleChanged(ScheduleKey(app: mail, identifier: "feed"))])
        let task = h.engine.schedules[ScheduleKey(app: mail, identifier: "feed")]
        #expect(task?.submittedAt == at(3) && task?.earliestBegin == at(60) && task?.kind == .refresh)
        #expect(h.engine.apps[mail]?.process == .notRunning)
        #expect(h.engine.apps[mail]?.scheduled == ["feed"])
        #expect(h.engine.nextScheduleDue == at(60))
        // The same identifier again replaces it: one row, the new time.
        h.steps(refreshTask(mail, "feed", at: at(40), kind: .processing))
        #expect(h.lastEffects == [.scheduleChanged(ScheduleKey(app: mail, identifier: "feed"))])
        #expect(h.engine.schedules.count == 1 && h.engine.nextScheduleDue == at(40))
        #expect(h.engine.schedules[ScheduleKey(app: mail, identifier: "feed")]?.kind == .processing)
        h.steps(refreshTask(mail, "a", at: at(90)))
        #expect(h.engine.apps[mail]?.scheduled == ["a", "feed"])
    }

    @Test func scheduleRefusals() {
        var h = Harness()
        h.refuse(refreshTask(mail, ""), .invalidArgument(name: "identifier", reason: "must be 1 to 255 bytes, not 0"))
        h.refuse(refreshTask(mail, String(repeating: "é", count: 128)),
                 .invalidArgument(name: "identifier", reason: "must be 1 to 255 bytes, not 256"))
        h.refuse(refreshTask(mail, "n", kind: .notification),
                 .invalidArgument(name: "kind", reason: "a scheduled task is refresh or processing"))
        #expect(h.engine.apps[mail] == nil, "a refused schedule created its app")
        h.steps(refreshTask(mail, String(repeating: "x", count: 255)))
    }

    @Test func atMostMaxScheduledTasksPerAppUnlessReplacing() {
        var h = Harness(configuration: EngineConfiguration(maxScheduledTasks: 3))
        for i in 0..<3 { h.steps(refreshTask(mail, "t\(i)")) }
        h.refuse(refreshTask(mail, "t3"),
                 .limitExceeded(limit: "MaxScheduledTasks", maximum: 3, reason: "\(mail) already has 3 scheduled tasks"))
        h.steps(refreshTask(mail, "t1", at: at(9)))
        h.steps(refreshTask(maps, "t3"))
        h.steps(.cancelTask(mail, identifier: "t0"))
        h.steps(refreshTask(mail, "t3"))
        #expect(h.engine.apps[mail]?.scheduled == ["t1", "t2", "t3"])
    }

    @Test func cancel() {
        var h = Harness()
        h.refuse(.cancelTask(mail, identifier: "feed"), .noSuchScheduledTask(mail, identifier: "feed"))
        h.steps(refreshTask(mail, "feed", at: at(5)))
        h.steps(refreshTask(mail, "other", at: at(9)))
        h.refuse(.cancelTask(maps, identifier: "feed"), .noSuchScheduledTask(maps, identifier: "feed"))
        h.steps(.cancelTask(mail, identifier: "feed"))
        #expect(h.lastEffects == [.scheduleRemoved(ScheduleKey(app: mail, identifier: "feed"))])
        #expect(h.engine.nextScheduleDue == at(9) && h.engine.apps[mail]?.scheduled == ["other"])
        h.refuse(.cancelTask(mail, identifier: "feed"), .noSuchScheduledTask(mail, identifier: "feed"))
        h.steps(.cancelTask(mail, identifier: "other"))
        #expect(h.engine.nextScheduleDue == nil)
    }

    @Test func notificationsGetIdsNeverReused() throws {
        var h = Harness(now: at(1))
        var effects: [Effect] = []
        let r = try h.engine.handle(.queueNotification(app: mail, payload: "{\"a\":1}", priority: .high), now: at(1),
                                    effects: &effects)
        #expect(r == .notification(NotificationID(1)))
        #expect(effects == [.appChanged(mail), .notificationChanged(NotificationID(1))])
        #expect(h.engine.notifications[NotificationID(1)]
                == PendingNotification(id: NotificationID(1), app: mail, payload: "{\"a\":1}", priority: .high, queuedAt: at(1)))
        let n2 = h.notify(maps)
        #expect(n2 == NotificationID(2) && h.engine.nextNotificationNumber == 3)
        h.suspendedApp(maps)
        h.steps(.wake(WakeRequest(app: maps, notifications: [n2])))
        h.steps(.endWake(maps, .notification(n2), success: true))
        #expect(h.notify(maps) == NotificationID(3))
        #expect(h.engine.pendingNotifications(of: maps).map(\.id) == [NotificationID(3)])
    }

    @Test func pendingAndOpenNotificationsShareTheBound() {
        var h = Harness(configuration: EngineConfiguration(maxPendingNotifications: 2))
        h.suspendedApp(mail)
        let n1 = h.notify(mail)
        _ = h.notify(mail)
        let full = LifecycleError.limitExceeded(limit: "MaxPendingNotifications", maximum: 2,
                                                reason: "\(mail) already has 2 notifications pending or being handled")
        h.refuse(.queueNotification(app: mail, payload: "{}", priority: .high), full)
        h.steps(.wake(WakeRequest(app: mail, notifications: [n1])))
        h.refuse(.queueNotification(app: mail, payload: "{}", priority: .high), full)
        _ = h.notify(maps)
        h.steps(.endWake(mail, .notification(n1), success: false))
        _ = h.notify(mail)
    }

    @Test func aWakeResumesHandsOverAndRemovesTheRows() throws {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(refreshTask(mail, "index", kind: .processing))
        let n = h.notify(mail, "{\"t\":\"hi\"}")
        let e = try h.run(.wake(WakeRequest(app: mail, tasks: ["index", "feed"], notifications: [n])), at: at(20))
        #expect(e.map(Step.init) == [resumedStep, wakeTask(), wakeTask(), notifiedStep])
        #expect(e.map(\.cause) == [.background, .background, .background, .background])
        #expect(h.wakeDetails == [
            WakeDetail(kind: .processing, identifier: "index", deadline: at(200)),
            WakeDetail(kind: .refresh, identifier: "feed", deadline: at(50)),
            WakeDetail(kind: .notification, identifier: "n1", payload: "{\"t\":\"hi\"}", deadline: at(50)),
        ])
        #expect(h.lastEffects.contains(.scheduleRemoved(ScheduleKey(app: mail, identifier: "feed"))))
        #expect(h.lastEffects.contains(.notificationRemoved(n)))
        #expect(h.engine.schedules.isEmpty && h.engine.notifications.isEmpty && h.engine.nextScheduleDue == nil)
        let app = h.engine.apps[mail]
        #expect(app?.wakes.map(\.subject) == [.task("index"), .task("feed"), .notification(n)])
        #expect(app?.wakes.map(\.seq) == e.dropFirst().map(\.seq))
        #expect(app?.process == .running && app?.idleSince == nil)
        // Answered, one by one: the last answer suspends the app at once.
        #expect(h.steps(.endWake(mail, .task("feed"), success: true), at: at(21)) == [])
        #expect(h.steps(.endWake(mail, .notification(n), success: true)) == [])
        #expect(h.steps(.endWake(mail, .task("index"), success: true)) == [suspendedStep])
        #expect(h.log.last?.cause == .background)
        h.refuse(.endWake(mail, .task("index"), success: true), .notAwaitingWake(mail, item: "index"))
    }

    @Test func aRunningAppIsWokenWithoutResumption() {
        var h = Harness()
        let s = h.connect(mail)
        h.steps(refreshTask(mail, "feed"))
        #expect(h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"]))) == [wakeTask()])
        // In the foreground it stays running when the item closes.
        #expect(h.steps(.endWake(mail, .task("feed"), success: true)) == [])
        #expect(h.process(mail) == .running)
        h.steps(.background(s))
        #expect(h.engine.apps[mail]?.idleSince == h.now)
    }

    @Test func aTaskKeepsAWokenAppRunningAfterItsItemsClose() {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])), at: at(10))
        let token = h.beginTask(app: mail)
        #expect(h.steps(.endWake(mail, .task("feed"), success: true)) == [])
        #expect(h.process(mail) == .running)
        #expect(h.steps(.endTask(token), at: at(12)) == [])
        #expect(h.tick(at: at(17)) == [suspendedStep])
    }

    @Test func wakeRefusals() {
        var h = Harness()
        h.refuse(.wake(WakeRequest(app: mail)),
                 .invalidArgument(name: "request", reason: "a wake names at least one task or notification"))
        h.refuse(.wake(WakeRequest(app: mail, tasks: ["feed"])), .noSuchApp(mail))
        h.steps(refreshTask(mail, "feed"))
        h.refuse(.wake(WakeRequest(app: mail, tasks: ["feed"])), .invalidTransition(InvalidTransition(
            command: "wake", app: mail, session: nil, state: "notRunning", reason: "the app is not running: launch it first")))
        h.suspendedApp(mail)
        let theirs = h.notify(maps)
        h.refuse(.wake(WakeRequest(app: mail, tasks: ["feed", "nope"])), .noSuchScheduledTask(mail, identifier: "nope"))
        h.refuse(.wake(WakeRequest(app: mail, tasks: ["feed", "feed"])),
                 .invalidArgument(name: "tasks", reason: "task feed is named twice"))
        h.refuse(.wake(WakeRequest(app: mail, tasks: ["feed"], notifications: [theirs])),
                 .invalidArgument(name: "notifications", reason: "n1 is not pending for \(mail)"))
        h.refuse(.wake(WakeRequest(app: mail, notifications: [NotificationID(9)])),
                 .invalidArgument(name: "notifications", reason: "n9 is not pending for \(mail)"))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])))
        // Submitted again while being handled: not handed over twice at once.
        h.steps(refreshTask(mail, "feed"))
        #expect(h.engine.dueTasks(of: mail, until: h.now).isEmpty)
        h.refuse(.wake(WakeRequest(app: mail, tasks: ["feed"])),
                 .invalidArgument(name: "tasks", reason: "task feed is being handled already"))
        h.steps(.endWake(mail, .task("feed"), success: true))
        #expect(h.engine.dueTasks(of: mail, until: h.now).map(\.identifier) == ["feed"])
    }

    @Test func endWakeAndExpireWakesRefusals() {
        var h = Harness()
        h.refuse(.endWake(mail, .task("feed"), success: true), .noSuchApp(mail))
        h.refuse(.expireWakes(mail, kind: .processing), .noSuchApp(mail))
        h.refuse(.expireWakes(mail, kind: .notification),
                 .invalidArgument(name: "kind", reason: "a notification has no expiration: only refresh or processing"))
        h.suspendedApp(mail)
        h.refuse(.endWake(mail, .notification(NotificationID(4)), success: true), .notAwaitingWake(mail, item: "n4"))
        // Nothing of that kind open: nothing to do.
        #expect(h.steps(.expireWakes(mail, kind: .processing)) == [])
    }

    @Test func expireWakesWarnsTheOpenTasksOfThatKindOnce() throws {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(refreshTask(mail, "index", kind: .processing))
        h.steps(refreshTask(mail, "reindex", kind: .processing))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed", "index", "reindex"])), at: at(10))
        let e = try h.run(.expireWakes(mail, kind: .processing), at: at(11))
        #expect(e.map(Step.init) == [wakeExpireStep, wakeExpireStep])
        #expect(e.map(\.cause) == [.background, .background])
        #expect(e.map(\.detail) == [.wake(WakeDetail(kind: .processing, identifier: "index", deadline: at(13))),
                                    .wake(WakeDetail(kind: .processing, identifier: "reindex", deadline: at(13)))])
        #expect(h.steps(.expireWakes(mail, kind: .processing)) == [])
        h.steps(.endWake(mail, .task("index"), success: false))
        // One grace later the other closes unanswered; feed still holds the app.
        #expect(h.tick(at: at(13)) == [])
        #expect(h.engine.apps[mail]?.wakes.map(\.subject) == [.task("feed")])
        #expect(h.steps(.endWake(mail, .task("feed"), success: true)) == [suspendedStep])
    }

    @Test func backgroundModesKeepTheAppFromIdleSuspension() {
        var h = Harness()
        let s = h.connect(mail)
        h.steps(.beginActivity(mail, [.audio, .voip]))
        #expect(h.engine.apps[mail]?.activeModes == [.audio, .voip])
        h.steps(.background(s), at: at(1))
        #expect(h.engine.apps[mail]?.idleSince == nil)
        #expect(h.tick(at: at(600)) == [])
        h.refuseTransition(.suspend(mail, cause: .reclaim(ReclaimNote(level: "warning", usageBefore: 2, usageAfter: 1,
                                                                       budget: 1, score: nil, reason: "test"))))
        h.steps(.endActivity(mail, .voip))
        #expect(h.tick(at: at(700)) == [])
        h.steps(.endActivity(mail, [.audio, .location]))
        #expect(h.engine.apps[mail]?.activeModes == [] && h.engine.apps[mail]?.idleSince == at(700))
        #expect(h.tick(at: at(705)) == [suspendedStep])
    }

    @Test func modeRefusalsAndProcessEnd() {
        var h = Harness()
        h.refuse(.beginActivity(mail, .audio), .noSuchApp(mail))
        h.refuse(.beginActivity(mail, []), .invalidArgument(name: "modes", reason: "name one or more of audio location voip processing"))
        h.refuse(.endActivity(mail, BackgroundModes(rawValue: 16)),
                 .invalidArgument(name: "modes", reason: "name one or more of audio location voip processing"))
        h.suspendedApp(mail)
        h.refuseTransition(.beginActivity(mail, .audio))
        h.refuseTransition(.endActivity(mail, .audio))
        h.steps(.resume(mail, cause: .sleep))
        h.steps(.beginActivity(mail, .location))
        h.steps(.memoryWarning(apps: [mail]))
        #expect(h.log.last?.name == .didReceiveMemoryWarning)
        // Sleep suspends it anyway; it resumes still declaring the mode.
        #expect(h.steps(.suspend(mail, cause: .sleep), at: at(100)) == [suspendedStep])
        h.steps(.resume(mail, cause: .sleep), at: at(200))
        #expect(h.tick(at: at(300)) == [] && h.engine.apps[mail]?.activeModes == .location)
        h.steps(.terminate(mail))
        #expect(h.engine.apps[mail]?.activeModes == [])
        h.refuseTransition(.endActivity(mail, .location))
    }

    @Test func processEndClearsWakes() {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"])))
        h.steps(.beginActivity(mail, .audio))
        h.steps(.processDied(mail, reason: .exited))
        #expect(h.engine.apps[mail]?.wakes == [] && h.engine.apps[mail]?.activeModes == [])
        h.refuse(.endWake(mail, .task("feed"), success: true), .notAwaitingWake(mail, item: "feed"))
    }

    @Test func reclaimDoesNotSuspendAWokenApp() {
        var h = Harness()
        h.suspendedApp(mail)
        let n = h.notify(mail)
        h.steps(.wake(WakeRequest(app: mail, notifications: [n])))
        h.refuseTransition(.suspend(mail, cause: .request))
        // Sleep does, and the item closes with no event.
        #expect(h.steps(.suspend(mail, cause: .sleep)) == [suspendedStep])
        #expect(h.engine.apps[mail]?.wakes == [])
        h.refuse(.endWake(mail, .notification(n), success: true), .notAwaitingWake(mail, item: "n1"))
        #expect(h.tick(at: at(600)) == [])
    }

    @Test func dueTasksAndNextScheduleDue() {
        var h = Harness()
        h.steps(refreshTask(mail, "b", at: at(30)))
        h.steps(refreshTask(mail, "a", at: at(30)))
        h.steps(refreshTask(mail, "c", at: at(10), kind: .processing))
        h.steps(refreshTask(maps, "z", at: at(5)))
        #expect(h.engine.dueTasks(of: mail, until: at(29)).map(\.identifier) == ["c"])
        #expect(h.engine.dueTasks(of: mail, until: at(30)).map(\.identifier) == ["c", "a", "b"])
        #expect(h.engine.dueTasks(of: notes, until: at(99)).isEmpty)
        #expect(h.engine.nextScheduleDue == at(5))
        h.steps(refreshTask(maps, "z", at: at(50)))
        #expect(h.engine.nextScheduleDue == at(10))
        h.steps(.cancelTask(mail, identifier: "c"))
        #expect(h.engine.nextScheduleDue == at(30))
    }
}
