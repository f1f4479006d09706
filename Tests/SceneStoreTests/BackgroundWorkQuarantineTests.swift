import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Damaged schedules and notifications rows are left in place, recorded and reported, never
/// loaded; the rest is kept.
@Suite struct BackgroundWorkQuarantineTests {
    /// BackgroundWorkStoreTests.sample committed (apps rows mail 1, maps 2, notes 3, music 4;
    /// schedules rows 1–4 in the sample's order; notifications n3, n7, n8, n9), then `damage`.
    func storeWithDamage(_ dir: TemporaryDirectory, _ damage: String) throws -> SceneStore {
        let path = dir.file("scened.db")
        do {
            let store = try SceneStore(path: path, durability: .normal)
            try store.commit(BackgroundWorkStoreTests.sample)
            store.close()
        }
        try withConnection(path) { db in try db.execute("PRAGMA ignore_check_constraints = ON; " + damage, "damaging") }
        return try SceneStore(path: path, durability: .normal)
    }

    static let scheduleDamage: [(sql: String, reason: String)] = [
        ("UPDATE schedules SET kind = 2 WHERE id = 2", "kind 2 is not a scheduled task's (refresh or processing)"),
        ("UPDATE schedules SET kind = 9 WHERE id = 2", "kind 9 is not a scheduled task's (refresh or processing)"),
        ("UPDATE schedules SET kind = 'refresh' WHERE id = 2", "kind is text, not an integer"),
        ("UPDATE schedules SET identifier = '' WHERE id = 2", #"identifier "" is not 1 to 255 bytes"#),
        ("UPDATE schedules SET identifier = hex(zeroblob(128)) WHERE id = 2",
         #"identifier begins "000000000000000000000000…" is not 1 to 255 bytes"#),
        ("UPDATE schedules SET identifier = X'FF' WHERE id = 2", "identifier is a blob, not text"),
        ("UPDATE schedules SET identifier = CAST(X'C0AF' AS TEXT) WHERE id = 2", "identifier is not valid UTF-8"),
        ("UPDATE schedules SET app = 9 WHERE id = 2", "app reference 9 names no app"),
        ("UPDATE schedules SET earliest_begin = 'soon' WHERE id = 2", "earliest_begin is text, not an integer"),
        ("UPDATE schedules SET submitted_at = 1.5 WHERE id = 2", "submitted_at is a real number, not an integer"),
    ]

    @Test(arguments: 0..<scheduleDamage.count)
    func damagedScheduleIsQuarantined(_ index: Int) throws {
        let (sql, reason) = Self.scheduleDamage[index]
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, sql)
            let stored = try store.loadChecked()
            var expected = BackgroundWorkStoreTests.sampleSnapshot
            let damaged = BackgroundWorkStoreTests.sample.schedules[1].key
            expected.schedules.removeAll { $0.key == damaged }
            expectStoredState(stored.snapshot, equals: expected)
            #expect(stored.quarantined.map(\.description) == ["schedules row 2: \(reason)"])
            #expect(try store.quarantineRecords().map(\.description) == ["schedules row 2: \(reason)"])
        }
    }

    static let notificationDamage: [(sql: String, name: String, reason: String)] = [
        ("UPDATE notifications SET priority = 2 WHERE id = 7", "notification n7", "priority 2 is not one"),
        ("UPDATE notifications SET payload = '[1]' WHERE id = 7", "notification n7", #"payload is not a JSON object ("[1]")"#),
        ("UPDATE notifications SET payload = '{\"a\":' WHERE id = 7", "notification n7",
         #"payload is not a JSON object ("{\"a\":")"#),
        ("UPDATE notifications SET payload = '' WHERE id = 7", "notification n7", #"payload is not a JSON object ("")"#),
        ("UPDATE notifications SET payload = X'7B7D' WHERE id = 7", "notification n7", "payload is a blob, not text"),
        ("UPDATE notifications SET app = 0 WHERE id = 7", "notification n7", "app reference 0 names no app"),
        ("UPDATE notifications SET queued_at = 'x' WHERE id = 7", "notification n7", "queued_at is text, not an integer"),
        ("UPDATE notifications SET id = -7 WHERE id = 7", "notifications row -7", "id -7 is no notification id"),
    ]

    @Test(arguments: 0..<notificationDamage.count)
    func damagedNotificationIsQuarantined(_ index: Int) throws {
        let (sql, name, reason) = Self.notificationDamage[index]
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, sql)
            let stored = try store.loadChecked()
            var expected = BackgroundWorkStoreTests.sampleSnapshot
            expected.notifications.removeAll { $0.id == NotificationID(7) }
            expectStoredState(stored.snapshot, equals: expected)
            #expect(stored.quarantined.map(\.description) == ["\(name): \(reason)"])
            #expect(try store.quarantineRecords().map(\.description) == ["\(name): \(reason)"])
        }
    }

    /// The row stays, and the quarantine keeps a copy of its values.
    @Test func quarantinedNotificationIsKeptWithACopy() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE notifications SET payload = 'not json' WHERE id = 8")
            _ = try store.loadChecked()
            _ = try store.loadChecked()   // recorded once
            let db = try #require(store.connection)
            let evidence = try db.texts("SELECT evidence FROM quarantine WHERE table_name = 'notifications'", "test")
            #expect(evidence.count == 1)
            #expect(evidence.first?.contains("id=8 ") == true && evidence.first?.contains("payload='not json'") == true)
            #expect(try db.texts("SELECT payload FROM notifications WHERE id = 8", "test") == ["not json"])
        }
    }

    @Test func damagedModesQuarantineTheAppWithItsWork() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE apps SET active_modes = 16 WHERE ref = 2")
            let stored = try store.loadChecked()
            #expect(stored.quarantined.map(\.description) == [
                "apps row 2: app com.example.maps: active_modes 16 names no set of modes",
                "schedules row 3: its app com.example.maps (apps row 2) is quarantined",
                "notification n7: its app com.example.maps (apps row 2) is quarantined",
            ])
            #expect(!stored.snapshot.apps.contains { $0.id == maps })
            #expect(!stored.snapshot.schedules.contains { $0.app == maps })
            #expect(stored.snapshot.notifications.map(\.id.rawValue) == [3, 8, 9])
            // The app used again: a fresh record over the damaged one, and its work comes back.
            try store.commit(StoreBatch(apps: [AppRecord(id: maps)]))
            let again = try store.loadChecked()
            #expect(again.snapshot.notifications.map(\.id.rawValue) == [3, 7, 8, 9])
            #expect(again.snapshot.schedules.contains { $0.app == maps })
        }
    }

    /// A damaged notification's id stays taken, even with the counter damaged below it.
    @Test func quarantinedNotificationIdIsNeverHandedOutAgain() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE notifications SET priority = 7 WHERE id = 9; "
                                                + "UPDATE counters SET next_notification = 2")
            let stored = try store.loadChecked()
            #expect(stored.snapshot.notifications.map(\.id.rawValue) == [3, 7, 8])
            #expect(stored.snapshot.nextNotificationNumber == 10)
            try store.commit(StoreBatch(notifications: [BackgroundWorkStoreTests.notification(10)]))
            #expect(try store.load().nextNotificationNumber == 11)
        }
    }

    @Test func damagedNotificationCounterRefusesTheOpen() throws {
        try withTemporaryDirectory { dir in
            let error = try #require(throws: StoreError.self) {
                _ = try storeWithDamage(dir, "UPDATE counters SET next_notification = 0")
            }
            #expect(error.kind == .corrupt)
            #expect(error.description.hasSuffix("the counters row is damaged: next_notification is 0, outside 1..<2^62"))
        }
    }
}
