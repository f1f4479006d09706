import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Stored Opens and activation conditions (schema 6) come back exactly, go when removed, are
/// quarantined when damaged; a version 5 database migrates with everything kept; the events
/// that carry what a scene is opened with (tags 6 and 7) round-trip.
@Suite struct RoutingStoreTests {
    static let userInfo = #"{"title":"Zoë 🎬","n":[1,{"k":null}]}"#

    static let richPayload = OpenPayload(
        urlContexts: [URLContext(url: "notes:doc/1?x=%20y#frag", sourceApplication: maps),
                      URLContext(url: "Notes+Beta.v2:" + String(repeating: "z", count: 9000))],
        userActivities: [UserActivity(activityType: "com.example.edit", title: "Édition", userInfo: userInfo,
                                      targetContentIdentifier: "doc/1", webpageURL: "https://example.com/d/1"),
                         UserActivity(activityType: "com.example.view")])

    static func open(_ n: UInt64, _ app: AppID = notes, session: SessionID? = nil, payload: OpenPayload = richPayload,
                     activate: Bool = true, role: SessionRole = .windowApplication) -> PendingOpen {
        PendingOpen(id: OpenID(n), request: OpenRequest(app: app, session: session, payload: payload, activate: activate,
                                                        role: role, configurationName: "Cfg \(n)"),
                    queuedAt: at(Double(n)))
    }

    /// Apps mail 1, notes 2; a live session s1 of notes; opens o2, o5 (notes), o6 (mail);
    /// conditions of s1.
    static var sample: StoreBatch {
        var batch = StoreBatch(apps: [AppRecord(id: mail), AppRecord(id: notes, process: .running)],
                               counters: EngineCounters(clock: at(9), nextSequence: 1, nextSessionNumber: 2,
                                                        nextTaskNumber: 1, nextOpenNumber: 7))
        batch.sessions = [liveSession]
        batch.opens = [open(2, session: SessionID(1)), open(5, payload: OpenPayload(urlContexts: [URLContext(url: "a:")]),
                                                            activate: false, role: .carTemplateApplication),
                       open(6, mail, payload: OpenPayload(userActivities: [UserActivity(activityType: "x")]))]
        batch.conditions = [SessionID(1): conditions]
        return batch
    }

    static let conditions = ActivationConditions(canActivateFor: ["notes:*", "é?"], prefersToActivateFor: ["notes:doc/*"])

    static var liveSession: SceneSession {
        var s = SceneSession(id: SessionID(1), app: notes, role: .windowApplication, configurationName: "Default",
                             userInfo: .empty, restoration: nil, footprint: 0, condition: .live,
                             sceneState: .foregroundActive, sceneInstance: 1, createdAt: at(1), lastActiveAt: at(1),
                             backgroundSince: at(1), activations: 1, restores: 0, restoreCostMs: 0, isProtected: false)
        s.activationScore = 1
        return s
    }

    func storeWithSample(_ dir: TemporaryDirectory, damage: String = "") throws -> SceneStore {
        let path = dir.file("scened.db")
        do {
            let store = try SceneStore(path: path, durability: .normal)
            try store.commit(Self.sample)
            store.close()
        }
        if !damage.isEmpty {
            try withConnection(path) { db in try db.execute("PRAGMA ignore_check_constraints = ON; " + damage, "damaging") }
        }
        return try SceneStore(path: path, durability: .normal)
    }

    @Test func everythingSurvivesReopening() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithSample(dir)
            let stored = try store.loadChecked()
            #expect(stored.quarantined.isEmpty)
            #expect(stored.snapshot.pendingOpens == Self.sample.opens)
            #expect(stored.snapshot.nextOpenNumber == 7)
            #expect(stored.snapshot.activationConditions == [SessionID(1): Self.conditions])
            let engine = try LifecycleEngine(restoring: stored.snapshot)
            #expect(engine.pendingOpens(of: notes).map(\.id) == [OpenID(2), OpenID(5)])
            #expect(engine.activationConditions(of: SessionID(1)) == Self.conditions)
        }
    }

    @Test func removalDeletesAndTheCounterOnlyGrows() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithSample(dir)
            var batch = StoreBatch(counters: EngineCounters(clock: at(10), nextSequence: 1, nextSessionNumber: 2,
                                                            nextTaskNumber: 1, nextOpenNumber: 3))
            batch.removedOpens = [OpenID(2), OpenID(9)]
            batch.removedConditions = [SessionID(1)]
            try store.commit(batch)
            let loaded = try store.load()
            #expect(loaded.pendingOpens.map(\.id) == [OpenID(5), OpenID(6)])
            #expect(loaded.activationConditions.isEmpty)
            // Raised past the removed o9, never lowered to 3.
            #expect(loaded.nextOpenNumber == 10)
        }
    }

    @Test func batchFollowsTheEngineTables() throws {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        try engine.handle(.open(OpenRequest(app: notes, payload: Self.richPayload)), now: at(1), effects: &effects)
        var batch = StoreBatch(effects: effects, engine: engine)
        #expect(batch.opens.map(\.id) == [OpenID(1)] && batch.removedOpens.isEmpty)
        effects = []
        try engine.handle(.launch(notes), now: at(2), effects: &effects)
        try engine.handle(.setActivationConditions(SessionID(1), Self.conditions), now: at(2), effects: &effects)
        batch = StoreBatch(effects: effects, engine: engine)
        #expect(batch.opens.isEmpty && batch.removedOpens == [OpenID(1)])
        #expect(batch.conditions == [SessionID(1): Self.conditions])
        effects = []
        try engine.handle(.disconnect(SessionID(1)), now: at(3), effects: &effects)
        batch = StoreBatch(effects: effects, engine: engine)
        #expect(batch.conditions.isEmpty && batch.removedConditions == [SessionID(1)])
    }

    /// The engine's whole routing state through a commit of its effects and a load: the
    /// launch's batch removes the rows it delivers (exactly once).
    @Test func engineStateRoundTrips() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .normal)
            var engine = LifecycleEngine(clock: at(0))
            var effects: [Effect] = []
            let s = try engine.handle(.connect(ConnectRequest(app: maps)), now: at(1), effects: &effects)
            guard case .session(let sid) = s else { Issue.record("no session"); return }
            try engine.handle(.setActivationConditions(sid, Self.conditions), now: at(1), effects: &effects)
            for i in 0..<3 {
                try engine.handle(.open(OpenRequest(app: notes, payload: OpenPayload(urlContexts: [URLContext(url: "notes:\(i)")]))),
                                  now: at(2), effects: &effects)
            }
            try store.commit(StoreBatch(effects: effects, engine: engine))
            var loaded = try store.load()
            #expect(loaded.pendingOpens == engine.snapshot.pendingOpens && loaded.pendingOpens.count == 3)
            #expect(loaded.activationConditions == engine.activationConditions)
            effects = []
            try engine.handle(.launch(notes), now: at(3), effects: &effects)
            try store.commit(StoreBatch(effects: effects, engine: engine))
            loaded = try store.load()
            #expect(loaded.pendingOpens.isEmpty && loaded.nextOpenNumber == 4)
            let logged = try store.events(after: 0, limit: 100)
            #expect(logged.filter { $0.name == .openURLContexts }.count == 2)
            let connect = logged.first { $0.name == .willConnectTo && $0.app == notes }
            #expect(connect?.detail == .connect(restoration: nil, reconnect: false,
                                                open: OpenPayload(urlContexts: [URLContext(url: "notes:0")])))
        }
    }

    @Test func openEventDetailsRoundTrip() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            let details: [(EventName, EventDetail)] = [
                (.willConnectTo, .connect(restoration: .json(#"{"a":1}"#), reconnect: true, open: Self.richPayload)),
                (.willConnectTo, .connect(restoration: nil, reconnect: false, open: OpenPayload(urlContexts: [URLContext(url: "x:")]))),
                (.openURLContexts, .open(OpenPayload(urlContexts: Self.richPayload.urlContexts))),
                (.continueUserActivity, .open(OpenPayload(userActivities: Self.richPayload.userActivities))),
            ]
            let events = details.enumerated().map { i, d in
                LifecycleEvent(seq: UInt64(i + 1), time: at(Double(i)), name: d.0, app: notes, session: SessionID(1),
                               sceneInstance: 1, state: .scene(.foregroundActive), appState: .active, cause: .request,
                               detail: d.1)
            }
            try store.commit(StoreBatch(apps: [AppRecord(id: notes)], events: events))
            #expect(try store.events(after: 0, limit: 10) == events)
        }
    }

    static let openDamage: [(sql: String, name: String, reason: String)] = [
        ("UPDATE opens SET payload = X'00' WHERE id = 5", "open o5", "payload does not decode (1 bytes)"),
        ("UPDATE opens SET payload = X'0100' WHERE id = 5", "open o5", "payload does not decode (2 bytes)"),
        ("UPDATE opens SET payload = substr(payload, 1, 3) WHERE id = 5", "open o5", "payload does not decode (3 bytes)"),
        ("UPDATE opens SET payload = CAST(payload || X'00' AS BLOB) WHERE id = 5", "open o5", "payload does not decode (7 bytes)"),
        ("UPDATE opens SET payload = 'a:' WHERE id = 5", "open o5", "payload is text, not bytes"),
        ("UPDATE opens SET role = 9 WHERE id = 5", "open o5", "role 9 is not one"),
        ("UPDATE opens SET activate = 2 WHERE id = 5", "open o5", "activate is 2, neither 0 nor 1"),
        ("UPDATE opens SET app = 7 WHERE id = 5", "open o5", "app reference 7 names no app"),
        ("UPDATE opens SET configuration = '' WHERE id = 5", "open o5", "configuration is not 1 to 255 bytes"),
        ("UPDATE opens SET session = -1 WHERE id = 5", "open o5", "session -1 is no session id"),
        ("UPDATE opens SET id = -5 WHERE id = 5", "opens row -5", "id -5 is no open id"),
    ]

    @Test(arguments: 0..<openDamage.count)
    func damagedOpenIsQuarantined(_ index: Int) throws {
        let (sql, name, reason) = Self.openDamage[index]
        try withTemporaryDirectory { dir in
            let store = try storeWithSample(dir, damage: sql)
            let stored = try store.loadChecked()
            #expect(stored.snapshot.pendingOpens.map(\.id) == [OpenID(2), OpenID(6)])
            #expect(stored.snapshot.activationConditions == [SessionID(1): Self.conditions])
            #expect(stored.quarantined.map(\.description) == ["\(name): \(reason)"])
            #expect(try store.quarantineRecords().map(\.description) == ["\(name): \(reason)"])
            _ = try LifecycleEngine(restoring: stored.snapshot)
        }
    }

    static let conditionsDamage: [(sql: String, reason: String)] = [
        ("UPDATE activation_conditions SET prefers_to_activate_for = X'05' WHERE session = 1",
         "prefers_to_activate_for is not a list of patterns"),
        ("UPDATE activation_conditions SET prefers_to_activate_for = 3 WHERE session = 1",
         "prefers_to_activate_for is an integer, not bytes"),
        ("UPDATE activation_conditions SET can_activate_for = X'0100' WHERE session = 1",
         "can_activate_for is not a list of patterns"),
        ("UPDATE activation_conditions SET can_activate_for = 'x' WHERE session = 1", "can_activate_for is text, not bytes"),
    ]

    @Test(arguments: 0..<conditionsDamage.count)
    func damagedConditionsAreQuarantined(_ index: Int) throws {
        let (sql, reason) = Self.conditionsDamage[index]
        try withTemporaryDirectory { dir in
            let store = try storeWithSample(dir, damage: sql)
            let stored = try store.loadChecked()
            #expect(stored.snapshot.activationConditions.isEmpty)
            #expect(stored.snapshot.pendingOpens == Self.sample.opens)
            #expect(stored.quarantined.map(\.description) == ["activation conditions of s1: \(reason)"])
        }
    }

    /// A flood: 64 apps with 16 stored Opens each, every payload 16 KiB of activity userInfo
    /// (overflow pages), committed in one batch and loaded whole, within a bound.
    @Test(.timeLimit(.minutes(2))) func aFloodCommitsAndLoadsWhole() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            let big = #"{"blob":""# + String(repeating: "q", count: 16_000) + #""}"#
            let apps = (0..<64).map { AppID("com.example.flood\($0)")! }
            var batch = StoreBatch(apps: apps.map { AppRecord(id: $0) })
            var n: UInt64 = 0
            for app in apps {
                for _ in 0..<16 {
                    n += 1
                    let payload = OpenPayload(userActivities: [UserActivity(activityType: "t", userInfo: big)])
                    batch.opens.append(Self.open(n, app, payload: payload))
                }
            }
            let clock = ContinuousClock()
            let commit = try clock.measure { try store.commit(batch) }
            var loaded: EngineSnapshot?
            let load = try clock.measure { loaded = try store.load() }
            print("1,024 stored opens of 16 KiB: commit \(commit), load \(load)")
            #expect(loaded?.pendingOpens == batch.opens)
            #expect(loaded?.nextOpenNumber == n + 1)
            #expect(commit < .seconds(30) && load < .seconds(30))
        }
    }

    @Test func aBatchAllocatingTooManyOpenIdsIsRefused() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            var batch = StoreBatch(apps: [AppRecord(id: notes)])
            batch.opens = [Self.open(Tuning.maxOpensPerCommit + 5)]
            #expect(throws: StoreError.self) { try store.commit(batch) }
            #expect(try store.load().pendingOpens.isEmpty)
        }
    }
}

/// Version 6 (routing) on a database written by version 5: everything kept, no Open stored,
/// every scene with UIKit's defaults, and the new tables usable at once.
@Suite struct Version6MigrationTests {
    @Test func version5MigratesWithEverythingKept() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try MigrationTests().makeVersion1(path)
            try withConnection(path) { (db: SQLiteConnection) throws in
                try Schema.migrate(db, from: 1, to: 5)
                #expect(try db.integer("PRAGMA user_version", "test") == 5)
            }
            let store = try SceneStore(path: path, durability: .full)
            #expect(try store.connection!.integer("PRAGMA user_version", "test") == 6)
            let db = try #require(store.connection)
            #expect(try db.texts("SELECT next_open FROM counters", "test") == ["1"])
            let stored = try store.loadChecked()
            #expect(stored.quarantined.isEmpty)
            expectStoredState(stored.snapshot, equals: MigrationTests.expectedSnapshot)
            #expect(stored.snapshot.pendingOpens.isEmpty && stored.snapshot.activationConditions.isEmpty)
            #expect(stored.snapshot.nextOpenNumber == 1)
            #expect(try store.events(after: 0, limit: 100) == MigrationTests.expectedEvents)
            #expect(try store.integrityCheck() == ["ok"])

            var batch = StoreBatch(apps: [AppRecord(id: notes)])
            batch.opens = [RoutingStoreTests.open(1)]
            try store.commit(batch)
            store.close()
            let reopened = try SceneStore(path: path, durability: .full)
            #expect(try reopened.load().pendingOpens == batch.opens)
        }
    }

    @Test func failedMigrationLeavesVersion5Intact() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try MigrationTests().makeVersion1(path)
            try withConnection(path) { (db: SQLiteConnection) throws in
                try Schema.migrate(db, from: 1, to: 5)
                try db.execute("CREATE TABLE opens (x);", "in the way")
                _ = try db.texts("PRAGMA wal_checkpoint(TRUNCATE)", "test")
            }
            let before = readWholeFile(path)
            let error = try #require(throws: StoreError.self) { try SceneStore(path: path, durability: .full) }
            #expect(error.description.hasPrefix(path + ": migrating the schema from version 5 to 6: "))
            #expect(readWholeFile(path) == before)
        }
    }
}
