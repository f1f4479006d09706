import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// `loadTables()`, the start-up path (sessions keyed by id, adopted by the engine), gives what
/// `loadChecked()` gives, and still checks every row: a damaged one among many is quarantined.
@Suite struct LoadTablesTests {
    /// Sessions of every shape the details can take: the default, a plain named configuration,
    /// userInfo, JSON and byte restoration data; live and archived, some protected.
    static func session(_ n: UInt64) -> SceneSession {
        let app = [mail, maps, notes][Int(n % 3)]
        let configuration = n % 5 == 0 ? "Editor" : ConnectRequest.defaultConfigurationName
        let userInfo = n % 7 == 0 ? UserInfo(json: #"{"n":\#(n)}"#) : .empty
        let restoration: RestorationData? = switch n % 4 {
        case 1: .json(#"{"r":\#(n)}"#)
        case 2: .bytes([UInt8(n & 0xff), 1])
        default: nil
        }
        let live = n % 2 == 0
        return SceneSession(id: SessionID(n), app: app, role: .windowApplication, configurationName: configuration,
                            userInfo: userInfo, restoration: restoration, footprint: n, condition: live ? .live : .archived,
                            sceneState: live ? .background : .unattached, sceneInstance: 1, createdAt: at(1),
                            lastActiveAt: at(2), backgroundSince: at(3), activations: UInt32(n % 9), restores: 0,
                            restoreCostMs: 0, isProtected: n % 11 == 0, activationScore: Double(n) / 8)
    }

    /// A database at `path` holding `sessions` of the three apps, and `tasks`.
    static func store(_ sessions: [SceneSession], _ path: String, nextTaskNumber: UInt64, tasks: [BackgroundTask]) throws {
        let store = try SceneStore(path: path, durability: .off)
        try store.commit(StoreBatch(sessions: sessions, apps: [AppRecord(id: mail), AppRecord(id: maps), AppRecord(id: notes)],
                                    tasks: tasks,
                                    counters: EngineCounters(clock: at(5), nextSequence: 1,
                                                             nextSessionNumber: UInt64(sessions.count + 1),
                                                             nextTaskNumber: nextTaskNumber)))
        store.close()
    }

    @Test func tablesMatchTheSnapshotAndADamagedRowAmongManyIsQuarantined() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let sessions = (1...3_000).map { Self.session(UInt64($0)) }
            let apps = [mail, maps, notes]
            try Self.store(sessions, path, nextTaskNumber: 3, tasks: [
                BackgroundTask(token: TaskToken(1), app: apps[1777 % 3], session: SessionID(1777), name: "kept",
                               beganAt: at(4), expirationSentAt: nil),
                BackgroundTask(token: TaskToken(2), app: apps[1234 % 3], session: SessionID(1234), name: "goes",
                               beganAt: at(4), expirationSentAt: nil),
            ])
            try withConnection(path) { db in
                try db.execute("PRAGMA ignore_check_constraints = ON; "
                                   + "UPDATE sessions SET user_info = '{\"a\":' WHERE id = 1234; "
                                   + "UPDATE sessions SET scene_state = 9 WHERE id = 2999", "damaging")
            }
            let store = try SceneStore(path: path, durability: .off)
            let (tables, quarantined, failure) = try store.loadTables()
            #expect(failure == nil)
            #expect(quarantined.map(\.description) == [
                #"session s1234: user_info is not a JSON object ("{\"a\":")"#,
                "session s2999: scene state 9 is not one",
                "task t2: its session s1234 is not loaded (quarantined, or not stored)",
            ])
            let expected = sessions.filter { $0.id.rawValue != 1234 && $0.id.rawValue != 2999 }
            #expect(tables.sessions.count == expected.count)
            #expect(tables.sessions.allSatisfy { $0.key == $0.value.id })
            #expect(tables.sessions.values.sorted { $0.id < $1.id } == expected)
            #expect(tables.tasks.map(\.token) == [TaskToken(1)])
            #expect(tables.nextSessionNumber == 3_001 && tables.nextTaskNumber == 3 && tables.clock == at(5))

            // The snapshot path reads the same, and both engines are the same engine.
            let snapshot = try store.loadChecked().snapshot
            #expect(snapshot.sessions == expected)
            let fromTables = try LifecycleEngine(restoring: tables)
            let fromSnapshot = try LifecycleEngine(restoring: snapshot)
            expectSameEngine(fromTables, fromSnapshot)
            #expect(fromTables.sessions == fromSnapshot.sessions)
            // Rows quarantined stay taken: the next session is past them.
            #expect(fromTables.nextSessionNumber == 3_001)
            store.close()
        }
    }

    /// A table read in two id ranges on two threads (start-up with a large table) is the table
    /// read in one: the same sessions in the same order, the same rows quarantined (one in each
    /// range) and the same counters.
    @Test func twoRangesReadOnTwoThreadsGiveWhatOneRangeGives() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try Self.store((1...3_000).map { Self.session(UInt64($0)) }, path, nextTaskNumber: 1, tasks: [])
            try withConnection(path) { db in
                try db.execute("PRAGMA ignore_check_constraints = ON; "
                                   + "UPDATE sessions SET role = 77 WHERE id = 10; "
                                   + "UPDATE sessions SET user_info = '[1]' WHERE id = 2500; "
                                   // Quarantined rows in the lower range leave a gap the upper one closes.
                                   + "UPDATE sessions SET footprint = 'x' WHERE id BETWEEN 1400 AND 1410", "damaging")
            }
            for deferring in [false, true] {
                let store = try SceneStore(path: path, durability: .off)
                let one = try store.loadTables(deferringPayloads: deferring, parallelAbove: .max)
                #expect(store.lastLoadRanges == 1)
                let two = try store.loadTables(deferringPayloads: deferring, parallelAbove: 0)
                #expect(store.lastLoadRanges == 2)
                #expect(one.quarantined.count == 13)
                #expect(two.quarantined == one.quarantined)
                #expect(two.tables.sessions.values == one.tables.sessions.values, "same sessions, same (id) order")
                #expect(two.tables.sessions.values.map(\.id) == one.tables.sessions.values.map(\.id).sorted())
                #expect(two.tables.sessions.allSatisfy { two.tables.sessions[$0.key]?.id == $0.key })
                #expect(two.tables.nextSessionNumber == one.tables.nextSessionNumber)
                #expect(two.tables.sessions.count == 3_000 - 13)
                store.close()
            }
        }
    }

    /// How the array is split between the two ranges: by id span where ids are dense (a gap of
    /// missing ids closed after), by counting each range where they are sparse; ids so far
    /// apart that their span does not fit (damaged rows) are read in one range. Each way reads
    /// what one range reads.
    /// Each layout: the ids stored, the damage done after, the parts expected, rows quarantined.
    static func layout(_ name: String) -> (ids: [Int], damage: [String], parts: [Int], quarantined: Int) {
        switch name {
        case "gaps": (Array(1...1000) + Array(1401...3000), [], [1500, 1500], 0)
        case "sparse": (Array(1...1000) + Array(50_001...51_000), [], [1000, 1000], 0)
        // Beyond the numbers a session can have: quarantined, and read in a range of its own.
        case "far": (Array(1...3000), ["UPDATE sessions SET id = 4611686018427387904 WHERE id = 3000"], [2999, 1], 1)
        default: (Array(1...3000), ["UPDATE sessions SET id = -9223372036854775807 WHERE id = 5",
                                    "UPDATE sessions SET id = 9223372036854775806 WHERE id = 6"], [3000], 2)
        }
    }

    @Test(arguments: ["gaps", "sparse", "far", "extreme"])
    func partsAreSizedByIdSpanOrByCount(layout: String) throws {
        let (ids, damage, parts, quarantinedIds) = Self.layout(layout)
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try Self.store(ids.map { Self.session(UInt64($0)) }, path, nextTaskNumber: 1, tasks: [])
            if !damage.isEmpty {
                try withConnection(path) { db in
                    try db.execute("PRAGMA ignore_check_constraints = ON; " + damage.joined(separator: "; "), "damaging")
                }
            }
            let store = try SceneStore(path: path, durability: .off)
            let one = try store.loadTables(deferringPayloads: true, parallelAbove: .max)
            let two = try store.loadTables(deferringPayloads: true, parallelAbove: 0)
            #expect(store.lastLoadRanges == parts.count, "\(layout)")
            #expect(store.lastLoadParts == parts, "\(layout)")
            #expect(two.quarantined == one.quarantined, "\(layout)")
            #expect(two.tables.sessions.values == one.tables.sessions.values, "\(layout): same sessions, same order")
            #expect(two.tables.sessions.allSatisfy { two.tables.sessions[$0.key]?.id == $0.key }, "\(layout)")
            #expect(two.tables.nextSessionNumber == one.tables.nextSessionNumber, "\(layout)")
            #expect(two.tables.sessions.count == ids.count - quarantinedIds, "\(layout)")
            #expect(two.quarantined.count == quarantinedIds, "\(layout)")
            store.close()
        }
    }
}
