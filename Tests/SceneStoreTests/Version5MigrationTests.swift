import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Version 5 (background work) on a database written by version 4: everything kept, no mode
/// active, no notification ever handed out, and the new tables usable at once.
@Suite struct Version5MigrationTests {
    /// Version 1's rows (MigrationTests), taken to version 4 by the released migrations: a
    /// database as the previous scened left it.
    func makeVersion4(_ path: String, extra: String = "") throws {
        try MigrationTests().makeVersion1(path)
        try withConnection(path) { (db: SQLiteConnection) throws in
            try Schema.migrate(db, from: 1, to: 4)
            if !extra.isEmpty { try db.execute(extra, "building v4") }
            #expect(try db.integer("PRAGMA user_version", "test") == 4)
        }
    }

    @Test func version4MigratesWithEverythingKept() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeVersion4(path)
            let store = try SceneStore(path: path, durability: .full)
            #expect(SceneStore.schemaVersion >= 5)
            #expect(try store.connection!.integer("PRAGMA user_version", "test") == Int64(SceneStore.schemaVersion))
            let stored = try store.loadChecked()
            #expect(stored.quarantined.isEmpty)
            expectStoredState(stored.snapshot, equals: MigrationTests.expectedSnapshot)
            #expect(stored.snapshot.apps.allSatisfy { $0.activeModes.isEmpty })
            #expect(stored.snapshot.schedules.isEmpty && stored.snapshot.notifications.isEmpty)
            #expect(stored.snapshot.nextNotificationNumber == 1)
            #expect(try store.events(after: 0, limit: 100) == MigrationTests.expectedEvents)
            #expect(try store.integrityCheck() == ["ok"])
            _ = try LifecycleEngine(restoring: stored.snapshot)

            // The migrated store takes background work for its old apps and a new one.
            let modes = AppRecord(id: mail, process: .running, pendingDiscards: [], idleSince: at(5),
                                  backgroundEnteredAt: at(6), launchedAt: at(1), launches: 2, baseFootprint: 1000,
                                  activeModes: [.audio])
            let task = BackgroundWorkStoreTests.schedule(MigrationTests.orphan, "sync", .processing)
            let n = BackgroundWorkStoreTests.notification(1, maps, priority: .high)
            let n2 = BackgroundWorkStoreTests.notification(2, notes)
            try store.commit(StoreBatch(apps: [modes, AppRecord(id: notes)], schedules: [task], notifications: [n, n2]))
            store.close()
            let reopened = try SceneStore(path: path, durability: .full)
            let loaded = try reopened.load()
            #expect(loaded.apps.first { $0.id == mail }?.activeModes == [.audio])
            #expect(loaded.schedules == [task])
            #expect(loaded.notifications == [n, n2])
            #expect(loaded.nextNotificationNumber == 3)
            #expect(loaded.sessions == MigrationTests.expectedSnapshot.sessions)
        }
    }

    /// The new columns' defaults are what version 4's rows mean.
    @Test func newColumnsDefaultForOldRows() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeVersion4(path)
            let store = try SceneStore(path: path, durability: .full)
            let db = try #require(store.connection)
            #expect(try db.texts("SELECT active_modes FROM apps ORDER BY ref", "test") == ["0", "0", "0"])
            #expect(try db.texts("SELECT next_notification FROM counters", "test") == ["1"])
            #expect(try db.texts("SELECT count(*) FROM schedules", "test") == ["0"])
            #expect(try db.texts("SELECT count(*) FROM notifications", "test") == ["0"])
        }
    }

    /// A migration that fails part-way leaves version 4 exactly as it was.
    @Test func failedMigrationLeavesVersion4Intact() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            // Something in the way of version 5: a table of a name it creates.
            try makeVersion4(path, extra: "CREATE TABLE notifications (x);")
            try withConnection(path) { db in _ = try db.texts("PRAGMA wal_checkpoint(TRUNCATE)", "test") }
            let before = readWholeFile(path)
            let error = try #require(throws: StoreError.self) { try SceneStore(path: path, durability: .full) }
            #expect(error.description.hasPrefix(path + ": migrating the schema from version 4 to 5: "))
            #expect(error.description.contains("notifications already exists"))
            try withConnection(path) { (db: SQLiteConnection) throws in
                #expect(try db.integer("PRAGMA user_version", "test") == 4)
                #expect(try db.texts("SELECT name FROM pragma_table_info('apps') WHERE name = 'active_modes'", "test").isEmpty)
                #expect(try db.texts("SELECT count(*) FROM sessions", "test") == ["3"])
                #expect(try db.texts("PRAGMA integrity_check", "test") == ["ok"])
            }
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
        }
    }
}
