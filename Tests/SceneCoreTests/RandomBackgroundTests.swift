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
}
