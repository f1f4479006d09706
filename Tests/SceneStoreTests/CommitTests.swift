import Testing
import SceneCore
@testable import SceneStore

@Suite struct CommitTests {
    func session(_ n: UInt64, app: AppID = mail, configuration: String = "Default Configuration",
                 condition: SessionCondition = .live) -> SceneSession {
        SceneSession(id: SessionID(n), app: app, role: .windowApplication, configurationName: configuration,
                     userInfo: .empty, restoration: nil, footprint: n, condition: condition,
                     sceneState: condition == .live ? .background : .unattached, sceneInstance: 1,
                     createdAt: at(Double(n)), lastActiveAt: at(Double(n)), backgroundSince: at(Double(n)),
                     activations: 0, restores: 0, restoreCostMs: 0, isProtected: false)
    }

    func event(_ seq: UInt64, app: AppID = mail) -> LifecycleEvent {
        LifecycleEvent(seq: seq, time: at(Double(seq)), name: .didEnterBackground, app: app, session: SessionID(1),
                       sceneInstance: 1, state: .scene(.background), appState: .background, cause: .request,
                       detail: .none)
    }

    /// A committed baseline: one app, two sessions, a task, three events.
    func baseline(_ store: SceneStore) throws {
        try store.commit(StoreBatch(
            sessions: [session(1), session(2)], apps: [AppRecord(id: mail, process: .running)],
            tasks: [BackgroundTask(token: TaskToken(1), app: mail, session: SessionID(1), name: "t", beganAt: at(1),
                                   expirationSentAt: nil)],
            events: [event(1), event(2), event(3)],
            counters: EngineCounters(clock: at(3), nextSequence: 4, nextSessionNumber: 3, nextTaskNumber: 2)))
    }

    /// A batch that fails part-way leaves nothing of itself: not its earlier rows, not a new app,
    /// not a new configuration name, not its counters; and the store keeps working.
    @Test(arguments: ["discarded session", "duplicate event", "unknown app"])
    func failedBatchLeavesNothing(_ failure: String) throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .full, eventLogCapacity: 100)
            try baseline(store)
            let before = try store.load()
            let eventsBefore = try store.events(after: 0, limit: 100)

            var bad = StoreBatch(
                sessions: [session(2, configuration: "Changed"), session(10, app: maps, configuration: "New")],
                removedSessions: [SessionID(1)],
                apps: [AppRecord(id: mail, process: .suspended), AppRecord(id: maps, process: .running)],
                removedTasks: [TaskToken(1)],
                events: [event(4), event(5, app: maps)],
                counters: EngineCounters(clock: at(99), nextSequence: 50, nextSessionNumber: 50, nextTaskNumber: 50))
            switch failure {
            case "discarded session":
                // The schema's CHECK refuses a discarded session (they are deleted, never stored).
                bad.sessions.append(session(11, app: maps, condition: .discarded))
            case "duplicate event":
                bad.events.append(event(2))
            default:
                bad.sessions.append(session(12, app: notes))
            }
            let error = try #require(throws: StoreError.self) { try store.commit(bad) }
            #expect(error.kind == (failure == "unknown app" ? .misuse : .constraint))
            #expect(error.description.hasPrefix(dir.file("scened.db") + ": "))

            expectStoredState(try store.load(), equals: before)
            #expect(try store.events(after: 0, limit: 100) == eventsBefore)
            #expect(store.newestLoggedSequence == 3)

            // Still usable, and the names the failed batch introduced are not dangling: the same
            // new app and configuration commit cleanly now.
            var good = bad
            if failure == "duplicate event" { good.events.removeLast() } else { good.sessions.removeLast() }
            try store.commit(good)
            store.close()
            let reopened = try SceneStore(path: dir.file("scened.db"), durability: .full, eventLogCapacity: 100)
            let after = try reopened.load()
            #expect(after.sessions.map(\.id) == [SessionID(2), SessionID(10)])
            #expect(after.sessions.map(\.configurationName) == ["Changed", "New"])
            #expect(after.sessions.last?.app == maps)
            #expect(after.apps.map(\.id) == [mail, maps])
            #expect(after.apps.map(\.process) == [.suspended, .running])
            #expect(after.tasks.isEmpty)
            #expect(try reopened.events(after: 3, limit: 10).map(\.seq) == [4, 5])
            #expect(try reopened.integrityCheck() == ["ok"])
        }
    }

    @Test func countersNeverGoBackwards() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .normal)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], counters: EngineCounters(
                clock: at(100), nextSequence: 40, nextSessionNumber: 30, nextTaskNumber: 20)))
            // Lower marks change nothing.
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], counters: EngineCounters(
                clock: at(1), nextSequence: 2, nextSessionNumber: 2, nextTaskNumber: 2)))
            var s = try store.load()
            #expect(s.clock == at(100) && s.nextSequence == 40 && s.nextSessionNumber == 30 && s.nextTaskNumber == 20)

            // Records beyond the marks raise them: a number in use is never handed out again.
            try store.commit(StoreBatch(
                sessions: [session(77)],
                apps: [AppRecord(id: mail, process: .notRunning, pendingDiscards: [SessionID(90)], idleSince: nil,
                                 backgroundEnteredAt: nil, launchedAt: nil, launches: 0, baseFootprint: 0)],
                tasks: [BackgroundTask(token: TaskToken(55), app: mail, session: nil, name: "", beganAt: at(1),
                                       expirationSentAt: nil)],
                events: [event(60)], counters: .initial))
            s = try store.load()
            #expect(s.nextSequence == 61 && s.nextSessionNumber == 91 && s.nextTaskNumber == 56)
            #expect(s.clock == at(100))

            // Deleting the records does not lower them either, nor does reopening.
            try store.commit(StoreBatch(removedSessions: [SessionID(77)], apps: [AppRecord(id: mail)],
                                        removedTasks: [TaskToken(55)], counters: .initial))
            store.close()
            s = try SceneStore(path: path, durability: .normal).load()
            #expect(s.nextSequence == 61 && s.nextSessionNumber == 91 && s.nextTaskNumber == 56)
            #expect(s.sessions.isEmpty && s.tasks.isEmpty)
        }
    }

    @Test func batchFromEffectsWritesEachRecordOnceWithItsLatestValue() throws {
        var engine = LifecycleEngine(clock: at(0))
        var effects: [Effect] = []
        try engine.handle(.connect(ConnectRequest(app: mail)), now: at(1), effects: &effects)
        try engine.handle(.connect(ConnectRequest(app: mail)), now: at(2), effects: &effects)
        try engine.handle(.background(SessionID(1)), now: at(3), effects: &effects)
        try engine.handle(.discard(SessionID(2)), now: at(4), effects: &effects)
        let batch = StoreBatch(effects: effects, engine: engine)
        #expect(batch.sessions.map(\.id) == [SessionID(1)])
        #expect(batch.sessions.first?.sceneState == .background)
        #expect(batch.removedSessions == [SessionID(2)])
        #expect(batch.apps.map(\.id) == [mail])
        #expect(batch.events.count == effects.filter { if case .event = $0 { true } else { false } }.count)
        #expect(batch.counters == EngineCounters(engine))
        #expect(!batch.isEmpty)
        #expect(StoreBatch().isEmpty)
    }

    @Test func closedStoreRefusesCalls() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .full)
            store.close()
            let error = try #require(throws: StoreError.self) { try store.load() }
            #expect(error.kind == .misuse)
            #expect(error.description == dir.file("scened.db") + ": the store is closed")
            #expect(throws: StoreError.self) { try store.commit(StoreBatch(apps: [AppRecord(id: mail)])) }
            // Closing released the lock.
            _ = try SceneStore(path: dir.file("scened.db"), durability: .full)
        }
    }
}
