import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Databases written by older versions open, migrate forward in one transaction, and lose nothing.
@Suite struct MigrationTests {
    /// Version 1 exactly as released: a migration is never edited after release, so this copy is
    /// frozen here and the store's own must stay identical to it.
    static let frozenVersion1 = """
        CREATE TABLE apps (
            id TEXT PRIMARY KEY NOT NULL,
            process INTEGER NOT NULL,
            pending_discards BLOB,
            idle_since INTEGER,
            background_entered_at INTEGER,
            launched_at INTEGER,
            launches INTEGER NOT NULL,
            base_footprint INTEGER NOT NULL
        );
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            app TEXT NOT NULL,
            role INTEGER NOT NULL,
            configuration TEXT NOT NULL,
            user_info TEXT NOT NULL,
            restoration BLOB,
            footprint INTEGER NOT NULL,
            condition INTEGER NOT NULL CHECK (condition IN (0, 1)),
            scene_state INTEGER NOT NULL,
            scene_instance INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            last_active_at INTEGER NOT NULL,
            background_since INTEGER NOT NULL,
            activations INTEGER NOT NULL,
            restores INTEGER NOT NULL,
            restore_cost_ms INTEGER NOT NULL,
            protected INTEGER NOT NULL
        );
        CREATE TABLE tasks (
            token INTEGER PRIMARY KEY,
            app TEXT NOT NULL,
            session INTEGER,
            name TEXT NOT NULL,
            began_at INTEGER NOT NULL,
            expiration_sent_at INTEGER
        );
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY,
            time INTEGER NOT NULL,
            name INTEGER NOT NULL,
            app TEXT NOT NULL,
            session INTEGER,
            scene_instance INTEGER NOT NULL,
            state INTEGER NOT NULL,
            app_state INTEGER NOT NULL,
            cause INTEGER NOT NULL,
            extra BLOB
        );
        CREATE TABLE counters (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            clock INTEGER NOT NULL,
            next_sequence INTEGER NOT NULL,
            next_session INTEGER NOT NULL,
            next_task INTEGER NOT NULL
        );
        INSERT INTO counters VALUES (1, 0, 1, 1, 1);
        PRAGMA application_id = 1396919876;
        """

    /// Rows as version 1 wrote them, including an app named only by a task (the migration must
    /// give it a record, not drop the task) and the v1 encodings of pending discards and details.
    static let version1Rows = """
        INSERT INTO apps VALUES ('com.example.mail', 1, NULL, 5, 6, 1, 2, 1000);
        INSERT INTO apps VALUES ('com.example.maps', 0, X'020503', NULL, NULL, 3, 1, 0);
        INSERT INTO sessions VALUES (1, 'com.example.mail', 0, 'Default Configuration', '{"a":1}', '{"s":1}',
                                     7, 0, 2, 2, 10, 11, 12, 3, 1, 50, 1);
        INSERT INTO sessions VALUES (2, 'com.example.maps', 2, 'Car', '{}', X'00FF', -1, 1, 0, 1, 20, 21, 22,
                                     0, 0, 0, 0);
        INSERT INTO sessions VALUES (4, 'com.example.mail', 0, 'Inbox', '{}', NULL, 0, 0, 3, 1, 30, 31, 32,
                                     0, 0, 0, 0);
        INSERT INTO tasks VALUES (2, 'com.example.mail', 1, '', 9, NULL);
        INSERT INTO tasks VALUES (3, 'com.example.orphan', NULL, 'sync', 10, 12);
        INSERT INTO events VALUES (7, 40, 10, 'com.example.mail', 4, 1, 3, 0, 0, NULL);
        INSERT INTO events VALUES (8, 41, 2, 'com.example.maps', NULL, 0, 16, 2, 3, X'02020503034D6178');
        INSERT INTO events VALUES (9, 42, 6, 'com.example.mail', 1, 2, 0, 2, 0, X'010101077B2273223A317D');
        UPDATE counters SET clock = 100, next_sequence = 10, next_session = 6, next_task = 4;
        """

    static let orphan = AppID("com.example.orphan")!

    static var expectedSnapshot: EngineSnapshot {
        func t(_ us: Int64) -> Timestamp { Timestamp(microseconds: us) }
        return EngineSnapshot(
            apps: [
                AppRecord(id: mail, process: .running, pendingDiscards: [], idleSince: t(5), backgroundEnteredAt: t(6),
                          launchedAt: t(1), launches: 2, baseFootprint: 1000),
                AppRecord(id: maps, process: .notRunning, pendingDiscards: [SessionID(5), SessionID(3)], idleSince: nil,
                          backgroundEnteredAt: nil, launchedAt: t(3), launches: 1, baseFootprint: 0),
                AppRecord(id: orphan, process: .notRunning, pendingDiscards: [], idleSince: nil, backgroundEnteredAt: nil,
                          launchedAt: nil, launches: 0, baseFootprint: 0),
            ],
            sessions: [
                SceneSession(id: SessionID(1), app: mail, role: .windowApplication,
                             configurationName: "Default Configuration", userInfo: UserInfo(json: #"{"a":1}"#),
                             restoration: .json(#"{"s":1}"#), footprint: 7, condition: .live,
                             sceneState: .foregroundActive, sceneInstance: 2, createdAt: t(10), lastActiveAt: t(11),
                             backgroundSince: t(12), activations: 3, restores: 1, restoreCostMs: 50, isProtected: true),
                SceneSession(id: SessionID(2), app: maps, role: .carTemplateApplication, configurationName: "Car",
                             userInfo: .empty, restoration: .bytes([0, 255]), footprint: UInt64.max,
                             condition: .archived, sceneState: .unattached, sceneInstance: 1, createdAt: t(20),
                             lastActiveAt: t(21), backgroundSince: t(22), activations: 0, restores: 0,
                             restoreCostMs: 0, isProtected: false),
                SceneSession(id: SessionID(4), app: mail, role: .windowApplication, configurationName: "Inbox",
                             userInfo: .empty, restoration: nil, footprint: 0, condition: .live,
                             sceneState: .background, sceneInstance: 1, createdAt: t(30), lastActiveAt: t(31),
                             backgroundSince: t(32), activations: 0, restores: 0, restoreCostMs: 0, isProtected: false),
            ],
            tasks: [
                BackgroundTask(token: TaskToken(2), app: mail, session: SessionID(1), name: "", beganAt: t(9),
                               expirationSentAt: nil),
                BackgroundTask(token: TaskToken(3), app: orphan, session: nil, name: "sync", beganAt: t(10),
                               expirationSentAt: t(12)),
            ],
            clock: t(100), nextSequence: 10, nextSessionNumber: 6, nextTaskNumber: 4)
    }

    static var expectedEvents: [LifecycleEvent] {
        func t(_ us: Int64) -> Timestamp { Timestamp(microseconds: us) }
        return [
            LifecycleEvent(seq: 7, time: t(40), name: .didEnterBackground, app: mail, session: SessionID(4),
                           sceneInstance: 1, state: .scene(.background), appState: .active, cause: .request, detail: .none),
            LifecycleEvent(seq: 8, time: t(41), name: .didDiscardSceneSessions, app: maps, session: nil,
                           sceneInstance: 0, state: .process(.notRunning), appState: .background, cause: .cap("Max"),
                           detail: .discarded([SessionID(5), SessionID(3)])),
            LifecycleEvent(seq: 9, time: t(42), name: .willConnectTo, app: mail, session: SessionID(1), sceneInstance: 2,
                           state: .scene(.unattached), appState: .background, cause: .request,
                           detail: .connect(restoration: .json(#"{"s":1}"#), reconnect: true)),
        ]
    }

    func makeVersion1(_ path: String, extra: String = "") throws {
        createEmptyFile(path)
        try withConnection(path) { (db: SQLiteConnection) throws in
            // As scened writes it: in WAL mode.
            _ = try db.texts("PRAGMA journal_mode = WAL", "building v1")
            try db.execute(Self.frozenVersion1 + "PRAGMA user_version = 1;" + Self.version1Rows + extra, "building v1")
        }
    }

    @Test func releasedVersion1IsUnchanged() {
        #expect(Schema.migrations.first == Self.frozenVersion1)
        #expect(SceneStore.schemaVersion == Schema.migrations.count)
        #expect(SceneStore.schemaVersion >= 2)
    }

    @Test func version1MigratesWithEverythingKept() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeVersion1(path)
            let store = try SceneStore(path: path, durability: .full)
            #expect(try store.connection!.integer("PRAGMA user_version", "test") == Int64(SceneStore.schemaVersion))
            expectStoredState(try store.load(), equals: Self.expectedSnapshot)
            #expect(try store.events(after: 0, limit: 100) == Self.expectedEvents)
            #expect(try store.integrityCheck() == ["ok"])
            // Version 4 filled in the payload sizes (bytes, as the engine counts them).
            for s in Self.expectedSnapshot.sessions {
                let sizes = try store.connection!.integer(
                    "SELECT user_info_size * 100000 + restoration_size FROM sessions WHERE id = \(s.id.rawValue)", "test")
                #expect(sizes == Int64(s.userInfo.json.utf8.count * 100_000 + (s.restoration?.byteCount ?? 0)), "\(s.id)")
            }
            // The migrated data restores into an engine.
            _ = try LifecycleEngine(restoring: try store.load())

            // And the migrated store keeps working: known and new names, new rows.
            var s5 = Self.expectedSnapshot.sessions[1]
            s5 = SceneSession(id: SessionID(5), app: maps, role: s5.role, configurationName: "Car", userInfo: s5.userInfo,
                              restoration: nil, footprint: 1, condition: .archived, sceneState: .unattached,
                              sceneInstance: 1, createdAt: s5.createdAt, lastActiveAt: s5.lastActiveAt,
                              backgroundSince: s5.backgroundSince, activations: 0, restores: 0, restoreCostMs: 0,
                              isProtected: false, activationScore: 2.5)
            var s6 = s5
            s6 = SceneSession(id: SessionID(6), app: Self.orphan, role: s6.role, configurationName: "Brand New",
                              userInfo: s6.userInfo, restoration: nil, footprint: 1, condition: .archived,
                              sceneState: .unattached, sceneInstance: 1, createdAt: s6.createdAt,
                              lastActiveAt: s6.lastActiveAt, backgroundSince: s6.backgroundSince, activations: 0,
                              restores: 0, restoreCostMs: 0, isProtected: false)
            try store.commit(StoreBatch(sessions: [s5, s6]))
            store.close()
            let reopened = try SceneStore(path: path, durability: .full)
            let loaded = try reopened.load()
            #expect(loaded.sessions == Self.expectedSnapshot.sessions + [s5, s6])
            #expect(loaded.nextSessionNumber == 7)
        }
    }

    /// Every version the tests can make (0 = an empty file, 1...current-1 from the store's own
    /// migrations) opens and ends at the current version.
    @Test func everyOlderVersionMigrates() throws {
        for version in 0..<SceneStore.schemaVersion {
            try withTemporaryDirectory { dir in
                let path = dir.file("scened.db")
                createEmptyFile(path)
                if version > 0 {
                    try withConnection(path) { db in try Schema.migrate(db, from: 0, to: version) }
                }
                let store = try SceneStore(path: path, durability: .full)
                #expect(try store.connection!.integer("PRAGMA user_version", "test") == Int64(SceneStore.schemaVersion))
                #expect(try store.integrityCheck() == ["ok"])
                let empty = try store.load()
                #expect(empty.sessions.isEmpty && empty.nextSequence == 1)
            }
        }
    }

    /// A migration that fails part-way leaves the old version exactly as it was.
    @Test func failedMigrationLeavesVersion1Intact() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            // Something in the way of version 2: a table of the name it creates.
            try makeVersion1(path, extra: "CREATE TABLE configurations (x);")
            let before = readWholeFile(path)
            let error = try #require(throws: StoreError.self) { try SceneStore(path: path, durability: .full) }
            #expect(error.description.hasPrefix(path + ": migrating the schema from version 1 to 2: "))
            #expect(error.description.contains("configurations already exists"))
            try withConnection(path) { (db: SQLiteConnection) throws in
                #expect(try db.integer("PRAGMA user_version", "test") == 1)
                #expect(try db.texts("SELECT app FROM sessions ORDER BY id", "test")
                        == ["com.example.mail", "com.example.maps", "com.example.mail"])
                #expect(try db.texts("PRAGMA integrity_check", "test") == ["ok"])
            }
            // Same content: the rolled-back transaction only ever reached the WAL.
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
        }
    }
}
