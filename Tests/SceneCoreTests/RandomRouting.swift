import Testing
@testable import SceneCore

extension CommandGenerator {
    /// Opens (for running, suspended and not-running apps; now and then malformed, or naming
    /// another app's session) and activation conditions (now and then over the limits).
    mutating func routingCommand(_ engine: LifecycleEngine) -> Command {
        if rng.chance(35) {
            let id = session(engine)
            guard !rng.chance(15) else { return .setActivationConditions(id, nil) }
            let patterns = ["*", "*doc/?", "com.example.app1:*", "*:doc/1*", "?*", "x"]
            var can: [String]? = rng.chance(40) ? nil : (0..<rng.below(3)).map { _ in rng.pick(patterns)! }
            var prefers = (0..<rng.below(3)).map { _ in rng.pick(patterns)! }
            if rng.chance(3) { can = [""] }
            if rng.chance(3) { prefers = Array(repeating: "p", count: 33) }
            return .setActivationConditions(id, ActivationConditions(canActivateFor: can, prefersToActivateFor: prefers))
        }
        let target = rng.pick(apps)!
        var payload = OpenPayload()
        let doc = "doc/\(rng.below(12))"
        if rng.chance(70) { payload.urlContexts.append(URLContext(url: "\(target.rawValue):\(doc)")) }
        if rng.chance(40) {
            payload.userActivities.append(UserActivity(activityType: "com.example.edit",
                                                       targetContentIdentifier: rng.chance(60) ? doc : nil))
        }
        if rng.chance(3) { payload.urlContexts = [URLContext(url: "no scheme")] }
        var request = OpenRequest(app: target, payload: payload, activate: rng.chance(60))
        if rng.chance(30) { request.session = session(engine) }
        if rng.chance(2) { request.configurationName = "" }
        return .open(request)
    }
}

/// Random runs that reach every corner of routing: few apps and a small MaxPendingOpens so that
/// the limit is hit, stored Opens delivered at launches (by Launch, Connect and Activate), held
/// scenes, suspended apps. Same checks as RandomizedTests after every command.
@Suite struct RandomRoutingTests {
    static let tight = EngineConfiguration(suspendDelay: .seconds(2), maxPendingOpens: 3)

    @Test(.timeLimit(.minutes(5))) func routingKeepsEveryInvariant() {
        let seed = RandomizedTests.seed &+ 37
        guard let run = RandomizedTests.run(seed: seed, steps: 30_000, appCount: 4, configuration: Self.tight,
                                            systemEvents: true, backgroundPercent: 5, routingPercent: 30) else { return }
        print("seed \(seed): events \(run.eventCounts.sorted { $0.key.name < $1.key.name }.map { "\($0.key)=\($0.value)" })")
        for name in [EventName.openURLContexts, .continueUserActivity] {
            #expect((run.eventCounts[name] ?? 0) > 200, "seed \(seed): few \(name): \(run.eventCounts[name] ?? 0)")
        }
        #expect(run.errorCounts.keys.contains { $0.contains("opens waiting") }, "seed \(seed): no MaxPendingOpens: \(run.errorCounts)")
    }

    /// Stored Opens and conditions come back the same through a restore, at any point of a run.
    @Test(arguments: [UInt64(1), 2])
    func randomRoutingRestoresTheSame(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed, appCount: 4)
        generator.routing = true
        generator.routingPercent = 40
        var engine = LifecycleEngine(configuration: Self.tight)
        var effects: [Effect] = []
        var stored = 0
        for step in 1...3_000 {
            let (command, time) = generator.next(engine)
            _ = try? engine.handle(command, now: time, effects: &effects)
            effects.removeAll(keepingCapacity: true)
            guard step % 100 == 0 else { continue }
            let restored = try LifecycleEngine(configuration: Self.tight, restoring: engine.snapshot)
            let context = Comment(rawValue: "seed \(seed), step \(step)")
            #expect(restored.pendingOpens == engine.pendingOpens && restored.nextOpenNumber == engine.nextOpenNumber, context)
            #expect(restored.activationConditions == engine.activationConditions, context)
            #expect(restored.apps.mapValues(\.pendingOpens) == engine.apps.mapValues(\.pendingOpens), context)
            #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty, context)
            stored += engine.pendingOpens.count + engine.activationConditions.count
        }
        #expect(stored > 0, "seed \(seed): nothing stored at any check")
    }
}
