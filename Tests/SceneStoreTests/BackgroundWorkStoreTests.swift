import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Scheduled tasks, pending notifications and apps' active background modes (R34) are stored,
/// come back exactly, and go when removed.
@Suite struct BackgroundWorkStoreTests {
    static let longIdentifier = String(repeating: "é", count: 127) + "x"   // 255 bytes
    /// Larger than a page: the row spills into overflow pages.
    static let bigPayload = #"{"blob":""# + String(repeating: "z", count: 20_000) + #"","n":[1,2,{"k":null}]}"#

    static func schedule(_ app: AppID, _ identifier: String, _ kind: WakeKind = .refresh, begin: Double = 60,
                         submitted: Double = 1) -> ScheduledTask {
        ScheduledTask(app: app, identifier: identifier, kind: kind, earliestBegin: at(begin), submittedAt: at(submitted))
    }

    static func notification(_ n: UInt64, _ app: AppID = mail, payload: String? = nil,
                             priority: NotificationPriority = .normal) -> PendingNotification {
        PendingNotification(id: NotificationID(n), app: app, payload: payload ?? #"{"n":\#(n)}"#, priority: priority,
                            queuedAt: at(Double(n)))
    }

    static func app(_ id: AppID, modes: BackgroundModes) -> AppRecord {
        AppRecord(id: id, process: .running, pendingDiscards: [], idleSince: nil, backgroundEnteredAt: at(2),
                  launchedAt: at(1), launches: 1, baseFootprint: 10, activeModes: modes)
    }

    /// Apps with every mode combination used, schedules of both kinds with odd identifiers,
    /// notifications of both priorities with odd and big payloads.
    static var sample: StoreBatch {
        StoreBatch(apps: [app(mail, modes: [.audio, .voip]), app(maps, modes: [.location, .processing]),
                          app(notes, modes: []), app(music, modes: [.audio, .location, .voip, .processing])],
                   schedules: [schedule(mail, "com.example.mail.refresh"),
                               schedule(mail, "cleanup", .processing, begin: -5, submitted: 0),
                               schedule(maps, longIdentifier, begin: 1e6),
                               schedule(music, "🎵 \"quoted\" 'and' \\ back", .processing)],
                   notifications: [notification(3, mail, priority: .high),
                                   notification(7, maps, payload: #"{"title":"Zoë 🎬","nested":{"a":[true,false,null]}}"#),
                                   notification(8, mail, payload: bigPayload),
                                   notification(9, music, payload: "{}")],
                   counters: EngineCounters(clock: at(9), nextSequence: 1, nextSessionNumber: 1, nextTaskNumber: 1,
                                            nextNotificationNumber: 10))
    }

    /// What loading `sample` must give back.
    static var sampleSnapshot: EngineSnapshot {
        let batch = sample
        var s = EngineSnapshot(apps: batch.apps.sorted { $0.id < $1.id }, sessions: [], tasks: [], clock: at(9),
                               nextSequence: 1, nextSessionNumber: 1, nextTaskNumber: 1)
        s.schedules = batch.schedules.sorted { $0.key < $1.key }
        s.notifications = batch.notifications
        s.nextNotificationNumber = 10
        return s
    }

    @Test func everythingSurvivesReopening() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            do {
                let store = try SceneStore(path: path, durability: .full)
                try store.commit(Self.sample)
                store.close()
            }
            let store = try SceneStore(path: path, durability: .full)
            let stored = try store.loadChecked()
            #expect(stored.quarantined.isEmpty)
            expectStoredState(stored.snapshot, equals: Self.sampleSnapshot)
            #expect(stored.snapshot.apps.map(\.activeModes) == Self.sampleSnapshot.apps.map(\.activeModes))
            // The tables the daemon adopts carry the same.
            let (tables, quarantined, _) = try store.loadTables()
            #expect(quarantined.isEmpty)
            #expect(tables.schedules == Self.sampleSnapshot.schedules)
            #expect(tables.notifications == Self.sampleSnapshot.notifications)
            #expect(tables.nextNotificationNumber == 10)
            #expect(tables.apps.map(\.activeModes) == Self.sampleSnapshot.apps.map(\.activeModes))
            #expect(try store.integrityCheck() == ["ok"])
        }
    }

    @Test func storageCodesAreFixed() {
        #expect(WakeKind.allCases.map(StorageCodes.code) == [0, 1, 2])
        #expect((-1...3).map(StorageCodes.wakeKind) == [nil, .refresh, .processing, .notification, nil])
        #expect(NotificationPriority.allCases.map(StorageCodes.code) == [0, 1])
        #expect((-1...2).map(StorageCodes.notificationPriority) == [nil, .normal, .high, nil])
        #expect(StorageCodes.code([.audio, .location, .voip, .processing]) == 15)
        #expect(StorageCodes.code([.voip]) == 4)
        for code in Int64(0)...15 {
            #expect(StorageCodes.backgroundModes(code).map(StorageCodes.code) == code)
        }
        #expect(StorageCodes.backgroundModes(16) == nil)
        #expect(StorageCodes.backgroundModes(-1) == nil)
    }

    @Test func submittingAgainReplacesAndRemovalDeletes() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            try store.commit(Self.sample)
            let rowIDs = try #require(store.connection).texts("SELECT id FROM schedules ORDER BY id", "test")
            // The same identifier again: the row is replaced in place, not added.
            let again = Self.schedule(mail, "cleanup", .refresh, begin: 500, submitted: 20)
            try store.commit(StoreBatch(schedules: [again]))
            #expect(try #require(store.connection).texts("SELECT id FROM schedules ORDER BY id", "test") == rowIDs)
            var expected = Self.sampleSnapshot
            expected.schedules = expected.schedules.map { $0.key == again.key ? again : $0 }
            expectStoredState(try store.load(), equals: expected)

            // Removed: schedules by app and identifier (one of an app never stored is no row),
            // notifications by id; the same identifier of another app stays.
            try store.commit(StoreBatch(schedules: [Self.schedule(maps, "cleanup")],
                                        removedSchedules: [again.key, ScheduleKey(app: AppID("org.never.stored")!,
                                                                                  identifier: "x")],
                                        removedNotifications: [NotificationID(7), NotificationID(8)]))
            expected.schedules = (expected.schedules.filter { $0.key != again.key } + [Self.schedule(maps, "cleanup")])
                .sorted { $0.key < $1.key }
            expected.notifications = expected.notifications.filter { ![7, 8].contains($0.id.rawValue) }
            expectStoredState(try store.load(), equals: expected)
            #expect(try store.integrityCheck() == ["ok"])
        }
    }

    /// A record both upserted and removed in one batch ends removed, as sessions and tasks do.
    @Test func upsertedAndRemovedInOneBatchEndsRemoved() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            let task = Self.schedule(mail, "both")
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], schedules: [task], removedSchedules: [task.key],
                                        notifications: [Self.notification(4)], removedNotifications: [NotificationID(4)]))
            let loaded = try store.load()
            #expect(loaded.schedules.isEmpty && loaded.notifications.isEmpty)
            // The id was handed out all the same: never again.
            #expect(loaded.nextNotificationNumber == 5)
        }
    }

    @Test func notificationCounterIsAHighWaterMark() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            // The batch's counters lag behind its own notification: raised past it.
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], notifications: [Self.notification(41)]))
            #expect(try store.load().nextNotificationNumber == 42)
            // A removal of a higher id raises it too; a lower mark never lowers it.
            try store.commit(StoreBatch(removedNotifications: [NotificationID(60)],
                                        counters: EngineCounters(clock: at(1), nextSequence: 1, nextSessionNumber: 1,
                                                                 nextTaskNumber: 1, nextNotificationNumber: 2)))
            #expect(try store.load().nextNotificationNumber == 61)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)],
                                        counters: EngineCounters(clock: at(1), nextSequence: 1, nextSessionNumber: 1,
                                                                 nextTaskNumber: 1, nextNotificationNumber: 70)))
            store.close()
            #expect(try SceneStore(path: dir.file("scened.db"), durability: .normal).load().nextNotificationNumber == 70)
        }
    }

    @Test func aBatchAllocatingTooManyNotificationIdsIsRefused() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], notifications: [Self.notification(1)]))
            let cap = Tuning.maxNotificationsPerCommit
            let error = try #require(throws: StoreError.self) {
                try store.commit(StoreBatch(notifications: [Self.notification(cap + 2)]))
            }
            #expect(error.kind == .constraint)
            #expect(error.description.contains("notification ids"))
            #expect(try store.load().notifications.map(\.id.rawValue) == [1])
            try store.commit(StoreBatch(notifications: [Self.notification(cap + 1)]))
            #expect(try store.load().nextNotificationNumber == cap + 2)
        }
    }

    /// Bad input: a record naming an app neither stored nor in the batch is refused with a
    /// clear error, nothing of the batch is written, and the store goes on.
    @Test func recordOfAnUnknownAppIsRefusedAndNothingIsWritten() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            try store.commit(Self.sample)
            let stranger = AppID("org.example.stranger")!
            for batch in [StoreBatch(schedules: [Self.schedule(stranger, "x")], removedNotifications: [NotificationID(3)]),
                          StoreBatch(removedSchedules: [Self.sample.schedules[0].key],
                                     notifications: [Self.notification(20, stranger)])] {
                let error = try #require(throws: StoreError.self) { try store.commit(batch) }
                #expect(error.kind == .misuse)
                #expect(error.description.contains("names app org.example.stranger, which is neither stored nor in the batch"))
                expectStoredState(try store.load(), equals: Self.sampleSnapshot)
            }
            try store.commit(StoreBatch(apps: [AppRecord(id: stranger)], schedules: [Self.schedule(stranger, "x")]))
            #expect(try store.load().schedules.contains { $0.app == stranger })
        }
    }

    /// A flood: every app of 80 at its limits (64 notifications of 1 KB, 32 schedules) in one
    /// batch, loaded back, then all delivered in one batch. Bounded in time even in a debug build.
    @Test func aFloodCommitsAndLoadsWhole() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            let apps = (0..<80).map { AppID("org.flood.app\($0)")! }
            let pad = String(repeating: "f", count: 1000)
            var batch = StoreBatch(apps: apps.map { AppRecord(id: $0) })
            for (i, app) in apps.enumerated() {
                batch.notifications += (0..<64).map {
                    Self.notification(UInt64(i * 64 + $0 + 1), app, payload: #"{"pad":"\#(pad)"}"#)
                }
                batch.schedules += (0..<32).map { Self.schedule(app, "task\($0)", $0 % 2 == 0 ? .refresh : .processing) }
            }
            let started = monotonicNanoseconds()
            try store.commit(batch)
            let committed = monotonicNanoseconds()
            let loaded = try store.load()
            let read = monotonicNanoseconds()
            #expect(loaded.notifications == batch.notifications)
            #expect(loaded.schedules == batch.schedules.sorted { $0.key < $1.key })
            #expect(loaded.nextNotificationNumber == 5121)
            try store.commit(StoreBatch(removedSchedules: batch.schedules.map(\.key),
                                        removedNotifications: batch.notifications.map(\.id)))
            let removed = monotonicNanoseconds()
            let empty = try store.load()
            #expect(empty.notifications.isEmpty && empty.schedules.isEmpty && empty.nextNotificationNumber == 5121)
            print("flood: 5,120 notifications + 2,560 schedules committed in \((committed - started) / 1_000_000) ms, "
                  + "loaded in \((read - committed) / 1_000_000) ms, removed in \((removed - read) / 1_000_000) ms")
            #expect(removed - started < 20_000_000_000, "the flood took over 20 s")
        }
    }

    // MARK: - From effects

    /// The engine's tables decide: a named key it holds is written with its value, one it does
    /// not hold is removed, whatever order the effects named them in.
    @Test func backgroundWorkFollowsTheEngineTables() {
        let held = Self.schedule(mail, "held")
        let back = Self.schedule(mail, "back", begin: 99)
        let n5 = Self.notification(5)
        var batch = StoreBatch(schedules: [Self.schedule(maps, "stale")], removedNotifications: [NotificationID(1)])
        batch.setBackgroundWork(named: [held.key, ScheduleKey(app: mail, identifier: "gone"), back.key],
                                [NotificationID(5), NotificationID(6)],
                                schedules: [held.key: held, back.key: back], notifications: [n5.id: n5])
        #expect(batch.schedules == [held, back])
        #expect(batch.removedSchedules == [ScheduleKey(app: mail, identifier: "gone")])
        #expect(batch.notifications == [n5])
        #expect(batch.removedNotifications == [NotificationID(6)])
        #expect(batch.rowCount == 5 && !batch.isEmpty)
    }

    @Test func effectsNameEachRecordOnce() {
        let key = ScheduleKey(app: mail, identifier: "t")
        let effects: [Effect] = [.scheduleChanged(key), .scheduleRemoved(key), .scheduleChanged(key),
                                 .notificationChanged(NotificationID(2)), .notificationRemoved(NotificationID(2)),
                                 .notificationRemoved(NotificationID(3))]
        // This engine holds neither: everything named ends removed, each once.
        let batch = StoreBatch(effects: effects, engine: LifecycleEngine(clock: at(0)))
        #expect(batch.schedules.isEmpty && batch.notifications.isEmpty)
        #expect(batch.removedSchedules == [key])
        #expect(batch.removedNotifications == [NotificationID(2), NotificationID(3)])
        #expect(batch.rowCount == 3)
        #expect(StoreBatch(effects: [], engine: LifecycleEngine(clock: at(0))).isEmpty)
    }
}
