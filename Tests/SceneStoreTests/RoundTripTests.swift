import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

@Suite struct RoundTripTests {
    @Test func everyFieldSurvivesReopening() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            var driver = Driver(store: try SceneStore(path: path, durability: .full))
            try driveEverything(&driver)
            let expected = driver.engine.snapshot
            driver.store?.close()

            // The scenario must really reach the states it claims to, or the comparison proves little.
            #expect(Set(expected.sessions.map { $0.sceneState }) == Set(SceneActivationState.allCases))
            #expect(Set(expected.sessions.map { $0.condition }) == [.live, .archived])
            #expect(Set(expected.apps.map { $0.process }) == Set(ProcessState.allCases))
            #expect(expected.apps.first { $0.id == maps }?.pendingDiscards == [SessionID(5), SessionID(3)])
            #expect(expected.tasks.count == 1 && expected.tasks[0].expirationSentAt != nil)
            #expect(expected.sessions.contains { $0.restoration == .bytes([]) })
            #expect(expected.sessions.contains { $0.activationScore > 1 })

            let store = try SceneStore(path: path, durability: .full)
            let loaded = try store.load()
            expectStoredState(loaded, equals: expected)
            #expect(try store.events(after: 0, limit: 10_000) == driver.events)
            #expect(store.oldestLoggedSequence == 1)
            #expect(store.newestLoggedSequence == driver.events.last?.seq)
        }
    }

    @Test func restoredEngineBehavesIdentically() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            var original = Driver(store: try SceneStore(path: path, durability: .normal))
            try driveEverything(&original)
            original.store?.close()

            let store = try SceneStore(path: path, durability: .normal)
            var restored = Driver(engine: try LifecycleEngine(restoring: try store.load()), store: store)
            expectSameEngine(original.engine, restored.engine)

            var unstored = Driver(engine: original.engine, store: nil)
            for (command, time) in furtherCommands {
                let a = Result { try unstored.run(command, at: at(time)) }
                let b = Result { try restored.run(command, at: at(time)) }
                switch (a, b) {
                case (.success(let x), .success(let y)):
                    #expect(x.0 == y.0, "\(command)")
                    #expect(x.1 == y.1, "\(command)")
                case (.failure(let x), .failure(let y)):
                    #expect(String(describing: x) == String(describing: y), "\(command)")
                default:
                    Issue.record("\(command): \(a) vs \(b)")
                }
            }
            expectSameEngine(unstored.engine, restored.engine)
            // The further commands really exercised the restored timers and pending discards.
            let names = unstored.events.map(\.name)
            #expect(names.contains(.terminated) && names.contains(.didDiscardSceneSessions))

            // And what the restored engine committed comes back once more.
            store.close()
            let again = try SceneStore(path: path, durability: .normal)
            expectStoredState(try again.load(), equals: restored.engine.snapshot)
            let tail = try again.events(after: original.events.last!.seq, limit: 10_000)
            #expect(tail == restored.events)
        }
    }

    @Test func everyEventDetailAndCauseRoundTrips() throws {
        let details: [EventDetail] = [
            .none,
            .connect(restoration: nil, reconnect: false),
            .connect(restoration: .json(#"{"k":[1,2,{"x":"ü"}]}"#), reconnect: true),
            .connect(restoration: .json(" { } "), reconnect: true),
            .connect(restoration: .bytes([]), reconnect: true),
            .connect(restoration: .bytes(Array(0...255)), reconnect: false),
            .discarded([]),
            .discarded([SessionID(7)]),
            .discarded([SessionID(300), SessionID(2), SessionID(UInt64(Int64.max))]),
            .task(TaskToken(1), name: ""),
            .task(TaskToken(1 << 40), name: "sync ✓ \u{0}"),
            .terminated(reason: .requested, archived: []),
            .terminated(reason: .backgroundTaskExpired, archived: [SessionID(3), SessionID(1)]),
            .terminated(reason: .memoryPressure, archived: [SessionID(9)]),
        ]
        let causes: [EventCause] = [
            .request, .timer, .restore, .cap(""), .cap("MaxSessions"),
            .reclaim(pressureNote), .reclaim(pressureNoteWithoutScore),
            .reclaim(ReclaimNote(level: "", usageBefore: 0, usageAfter: 0, budget: 0, score: -0.0, reason: "x")),
            .reclaim(ReclaimNote(level: "l", usageBefore: .max, usageAfter: .max, budget: .max,
                                 score: .infinity, reason: "∞")),
        ]
        let states: [EventState] = SceneActivationState.allCases.map { .scene($0) } + ProcessState.allCases.map { .process($0) }
        var events: [LifecycleEvent] = []
        var seq: UInt64 = 10
        for detail in details {
            for cause in causes {
                let name = EventName.allCases[events.count % EventName.allCases.count]
                events.append(LifecycleEvent(
                    seq: seq, time: Timestamp(microseconds: -5 + Int64(seq)), name: name, app: [mail, maps][Int(seq) % 2],
                    session: seq % 3 == 0 ? nil : SessionID(seq), sceneInstance: UInt32(seq % 5) * 1_000_000_000,
                    state: states[events.count % states.count],
                    appState: ApplicationState.allCases[events.count % 3], cause: cause, detail: detail))
                seq += 3
            }
        }
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            do {
                let store = try SceneStore(path: path, durability: .normal)
                try store.commit(StoreBatch(apps: [AppRecord(id: mail), AppRecord(id: maps)], events: events))
            }
            let store = try SceneStore(path: path, durability: .normal)
            let back = try store.events(after: 0, limit: 100_000)
            #expect(back == events)
            // Every EventName, both state kinds, all app states were used.
            #expect(Set(back.map(\.name)) == Set(EventName.allCases))
            #expect(try store.load().nextSequence == events.last!.seq + 1)
        }
    }

    @Test func newDatabaseLoadsEmpty() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("new.db"), durability: .full)
            let snapshot = try store.load()
            #expect(snapshot.apps.isEmpty && snapshot.sessions.isEmpty && snapshot.tasks.isEmpty)
            #expect(snapshot.nextSequence == 1 && snapshot.nextSessionNumber == 1 && snapshot.nextTaskNumber == 1)
            #expect(store.oldestLoggedSequence == nil)
            #expect(try store.events(after: 0, limit: 10).isEmpty)
            #expect(try store.integrityCheck() == ["ok"])
            // Nothing else was created but the database and SQLite's WAL files.
            store.close()
            #expect(fileExists(dir.file("new.db")))
        }
    }
}
