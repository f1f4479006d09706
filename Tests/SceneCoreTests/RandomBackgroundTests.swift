import Testing
@testable import SceneCore

/// Random runs that reach every corner of background work (R34): tight bounds so that the
/// limits are hit, short budgets so that items expire and close unanswered, and system events
/// so that sleep closes open wakes. Same checks as RandomizedTests after every command.
@Suite struct RandomBackgroundTests {
    static let tight = EngineConfiguration(suspendDelay: .seconds(2), backgroundTaskBudget: .seconds(10),
                                           expirationGrace: .seconds(1), refreshBudget: .seconds(40),
                                           processingBudget: .seconds(90), notificationBudget: .seconds(30),
                                           maxScheduledTasks: 3, maxPendingNotifications: 4)

    @Test(.timeLimit(.minutes(5))) func backgroundWorkUnderTightBoundsKeepsEveryInvariant() {
        let seed = RandomizedTests.seed &+ 36
        guard let run = RandomizedTests.run(seed: seed, steps: 30_000, appCount: 6, configuration: Self.tight,
                                            systemEvents: true, backgroundPercent: 35) else { return }
        print("seed \(seed): \(run.backgroundCounts)")
        print("seed \(seed): events \(run.eventCounts.sorted { $0.key.name < $1.key.name }.map { "\($0.key)=\($0.value)" })")
        for name in [EventName.performBackgroundTask, .didReceiveNotification, .backgroundTaskWillExpire, .resumed] {
            #expect((run.eventCounts[name] ?? 0) > 50, "seed \(seed): few \(name): \(run.eventCounts[name] ?? 0)")
        }
        #expect(run.backgroundCounts.suspendedAfterWake > 50, "seed \(seed): \(run.backgroundCounts)")
        #expect(run.backgroundCounts.closedByTimer > 20, "seed \(seed): \(run.backgroundCounts)")
        #expect(run.backgroundCounts.closedBySleep > 5, "seed \(seed): \(run.backgroundCounts)")
        #expect(run.backgroundCounts.expiredEarly > 5, "seed \(seed): \(run.backgroundCounts)")
        for kind in ["scheduled tasks", "notifications pending or being handled", "has no scheduled task", "has no open background work"] {
            #expect(run.errorCounts.keys.contains { $0.contains(kind) }, "seed \(seed): no refusal \(kind): \(run.errorCounts)")
        }
    }

    /// Stored background work comes back the same by both restore paths, at any point of a
    /// random run: the tables, the id counter, the earliest due time and each app's lists.
    @Test(arguments: [UInt64(1), 2, 3])
    func randomBackgroundWorkRestoresTheSame(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed, appCount: 6)
        generator.backgroundWork = true
        generator.backgroundPercent = 40
        var engine = LifecycleEngine(configuration: Self.tight)
        var effects: [Effect] = []
        var compared = 0
        for step in 1...3_000 {
            let (command, time) = generator.next(engine)
            _ = try? engine.handle(command, now: time, effects: &effects)
            effects.removeAll(keepingCapacity: true)
            guard step % 100 == 0 else { continue }
            let s = engine.snapshot
            let tables = EngineTables(apps: s.apps, sessions: try SessionTable(s.sessions), tasks: s.tasks, clock: s.clock,
                                      nextSequence: s.nextSequence, nextSessionNumber: s.nextSessionNumber,
                                      nextTaskNumber: s.nextTaskNumber, schedules: s.schedules,
                                      notifications: s.notifications, nextNotificationNumber: s.nextNotificationNumber)
            for restored in [try LifecycleEngine(configuration: Self.tight, restoring: s),
                             try LifecycleEngine(configuration: Self.tight, restoring: tables)] {
                let context = Comment(rawValue: "seed \(seed), step \(step)")
                #expect(restored.schedules == engine.schedules && restored.notifications == engine.notifications, context)
                #expect(restored.nextNotificationNumber == engine.nextNotificationNumber, context)
                #expect(restored.nextScheduleDue == engine.nextScheduleDue, context)
                #expect(restored.apps.mapValues(\.scheduled) == engine.apps.mapValues(\.scheduled), context)
                #expect(restored.apps.mapValues(\.pendingNotifications) == engine.apps.mapValues(\.pendingNotifications), context)
                #expect(restored.apps.values.allSatisfy { $0.wakes.isEmpty }, context)
                #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty, context)
                compared += 1
            }
        }
        #expect(compared == 60)
        #expect(!engine.schedules.isEmpty || !engine.notifications.isEmpty, "seed \(seed): nothing stored at the end")
    }
}
