import ScenedTestSupport
import Testing
@testable import SceneCore

/// `snapshot` → `init(restoring:)` keeps everything, including the behaviour that follows:
/// restored timers fire at their due times, and a restored engine emits exactly what the
/// original would have.
@Suite struct SnapshotTests {
    let s1 = SessionID(1), s2 = SessionID(2), s3 = SessionID(3)

    /// A world with every kind of state: live scenes in each state, archived sessions, pending
    /// discards, a suspended app, tasks with and without an expiration sent, a stale wake-up.
    func richWorld() -> Harness {
        var h = Harness()
        _ = h.connect(mail)                            // s1 active
        _ = h.connect(mail)                            // s2
        h.steps(.deactivate(s2))                       // s2 inactive
        _ = h.connect(maps, background: true)          // s3 background, maps idle
        _ = h.connect(maps, background: true)          // s4
        h.steps(.disconnect(SessionID(4)))             // s4 archived
        h.steps(.saveState(s3, .json("{\"k\":3}")))
        _ = h.connect(notes)                           // s5
        _ = h.connect(notes)                           // s6
        h.steps(.terminate(notes), at: at(1))
        h.steps(.discard(SessionID(6)))                // pending for notes
        let other = AppID("com.example.music")!
        _ = h.connect(other, background: true)         // s7
        _ = h.beginTask(app: other, name: "download")  // keeps music running
        h.tick(at: at(32))                             // maps suspended at 5, music's task expires at 31
        return h
    }

    @Test func roundTripKeepsTheSnapshot() throws {
        let h = richWorld()
        #expect(h.process(maps) == .suspended && h.process(notes) == .notRunning)
        #expect(h.engine.tasks.values.contains { $0.expirationSentAt != nil })
        let restored = try LifecycleEngine(restoring: h.engine.snapshot)
        #expect(restored.snapshot == h.engine.snapshot)
        #expect(restored.apps.mapValues(Replica.persisted) == h.engine.apps.mapValues(Replica.persisted))
        #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty)
        #expect(restored.wasDiscarded(SessionID(6)))
    }

    /// A wake-up left queued for a deadline that went away is not part of the snapshot: two
    /// engines in the same state have equal snapshots whatever their queue history.
    @Test func staleWakeUpsDoNotShowInTheSnapshot() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))           // suspension due at 5
        h.steps(.activate(s1), at: at(1))  // no longer due
        let restored = try LifecycleEngine(restoring: h.engine.snapshot)
        #expect(restored.snapshot == h.engine.snapshot)
    }

    @Test func restoredSuspensionFiresAtItsDueTime() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1), at: at(10))
        var restored = try Harness(restoring: h.engine.snapshot, checker: h.checker)
        // The daemon was down for a minute: the suspension happened at its due time.
        let fired = try restored.run(.tick, at: at(70))
        #expect(fired.map(Step.init) == [suspendedStep])
        #expect(fired[at: 0]?.time == at(15))
        #expect(fired[at: 0]?.seq == h.engine.nextSequence)
    }

    @Test func restoredTaskExpiresThenKillsAtTheirDueTimes() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.beginTask(session: s1)
        h.steps(.background(s1), at: at(2))
        var restored = try Harness(restoring: h.engine.snapshot, checker: h.checker)
        let fired = try restored.run(.tick, at: at(100))
        #expect(fired.map(Step.init) == [expireStep(s1), terminatedStep])
        #expect(fired.map(\.time) == [at(32), at(34)])
    }

    @Test func restoredSentExpirationKillsAfterItsGrace() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.beginTask(app: mail)
        h.steps(.background(s1))
        #expect(h.tick(at: at(31)) == [expireStep(nil)])
        var restored = try Harness(restoring: h.engine.snapshot, checker: h.checker)
        #expect(restored.tick(at: atMs(31_999)) == [])
        let kill = try restored.run(.tick, at: at(40))
        #expect(kill.map(Step.init) == [terminatedStep] && kill[at: 0]?.time == at(32))
    }

    @Test func restoredPendingDiscardsAreDeliveredAtTheNextLaunch() throws {
        let h = richWorld()
        var restored = try Harness(restoring: h.engine.snapshot, checker: h.checker)
        let launch = try restored.run(.launch(notes))
        #expect(launch.map(Step.init) == [launched, discardedStep(SessionID(6))])
        #expect(try restored.run(.activate(SessionID(5)))[at: 0]?.detail == .connect(restoration: nil, reconnect: true))
    }

    /// A checker started from a snapshot (a Monitor subscription opened after a restart) goes on
    /// without false alarms.
    @Test func checkerStartedFromASnapshotAgrees() throws {
        let h = richWorld()
        let checker = ConformanceChecker(options: .init(timing: .standard, strict: true, consecutiveSequence: true),
                                         startingFrom: h.engine.snapshot)
        #expect(checker.disagreements(with: h.engine).isEmpty)
        var restored = try Harness(restoring: h.engine.snapshot, checker: checker)
        restored.steps(.activate(SessionID(4)))
        restored.steps(.activate(s3))
        restored.steps(.discard(SessionID(5)))
        restored.tick(at: at(200))
        restored.refuse(.discard(SessionID(6)), .sessionDiscarded(SessionID(6)))
    }

    /// Lockstep: at random points the engine is rebuilt from its snapshot (and, separately, from
    /// what its persistence effects stored); from then on both must emit exactly the same effects
    /// for the same commands.
    @Test(arguments: [UInt64(11), 12, 13])
    func restoredEngineBehavesTheSame(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed, appCount: 8)
        var original = RandomRun(configuration: .standard)
        var copy = LifecycleEngine()
        var fromStore = LifecycleEngine()
        var rng = SplitMix64(seed: seed ^ 0xA5A5)
        for step in 0..<6_000 {
            let (command, time) = generator.next(original.engine)
            if rng.chance(1) {
                copy = try LifecycleEngine(restoring: original.engine.snapshot)
                fromStore = try LifecycleEngine(restoring: original.replica.snapshot(counters: original.engine))
                #expect(fromStore.snapshot == original.engine.snapshot, "seed \(seed) step \(step)")
            }
            if let problem = original.apply(command, at: time, fullCheck: true) {
                Issue.record("seed \(seed) step \(step): \(problem)")
                return
            }
            var a: [Effect] = [], b: [Effect] = []
            let ra = Result<CommandResult, LifecycleError> { () throws(LifecycleError) in try copy.handle(command, now: time, effects: &a) }
            let rb = Result<CommandResult, LifecycleError> { () throws(LifecycleError) in try fromStore.handle(command, now: time, effects: &b) }
            #expect(ra == rb && a == b, "seed \(seed) step \(step): \(command)")
            if a != b || ra != rb { return }
        }
    }

    /// Deadlines due at the same instant fire in app-identifier order, whatever the order in
    /// which they were armed, so that a restored engine (which re-arms them in that order) emits
    /// the same sequence as the original.
    @Test func simultaneousDeadlinesFireInAppOrderBeforeAndAfterRestore() throws {
        var h = Harness()
        _ = h.connect(notes)   // s1
        _ = h.connect(maps)    // s2
        _ = h.connect(mail)    // s3
        h.steps(.background(s1), at: at(1))
        h.steps(.background(s2))
        h.steps(.background(s3))
        var restored = try Harness(restoring: h.engine.snapshot, checker: h.checker)
        let original = try h.run(.tick, at: at(6))
        let again = try restored.run(.tick, at: at(6))
        #expect(original.map(\.app) == [mail, maps, notes])
        #expect(original == again)
    }

    // MARK: Invalid snapshots

    @Test func restoreRejectsASessionOfAnUnknownApp() {
        var snapshot = richWorld().engine.snapshot
        snapshot.apps.removeAll { $0.id == maps }
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: snapshot) }
    }

    @Test func restoreRejectsAnIdentifierBeyondTheHighWaterMark() {
        var snapshot = richWorld().engine.snapshot
        snapshot.nextSessionNumber = 3
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: snapshot) }
    }

    @Test func restoreRejectsADiscardedSession() {
        var snapshot = richWorld().engine.snapshot
        snapshot.sessions[0].condition = .discarded
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: snapshot) }
    }

    @Test func restoreRejectsATaskOfAnUnknownApp() {
        var snapshot = richWorld().engine.snapshot
        let music = AppID("com.example.music")!
        snapshot.sessions.removeAll { $0.app == music }
        snapshot.apps.removeAll { $0.id == music }
        #expect(throws: LifecycleError.self) { try LifecycleEngine(restoring: snapshot) }
    }

    /// Derived data is recomputed, never trusted: counts stored wrong come back right.
    @Test func restoreRecomputesDerivedData() throws {
        let h = richWorld()
        var snapshot = h.engine.snapshot
        for i in snapshot.apps.indices {
            snapshot.apps[i].activeScenes = 9
            snapshot.apps[i].sessions = []
            snapshot.apps[i].tasks = []
        }
        let restored = try LifecycleEngine(restoring: snapshot)
        #expect(restored.snapshot == h.engine.snapshot)
    }

    @Test func restoreUnattachesArchivedSessions() throws {
        var snapshot = richWorld().engine.snapshot
        let i = try #require(snapshot.sessions.firstIndex { $0.condition == .archived })
        snapshot.sessions[i].sceneState = .background
        let restored = try LifecycleEngine(restoring: snapshot)
        #expect(restored.sessions[snapshot.sessions[i].id]?.sceneState == .unattached)
        #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty)
    }
}
