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

    @Test func tablesMatchTheSnapshotAndADamagedRowAmongManyIsQuarantined() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let sessions = (1...3_000).map { Self.session(UInt64($0)) }
            do {
                let store = try SceneStore(path: path, durability: .off)
                try store.commit(StoreBatch(sessions: sessions,
                                            apps: [AppRecord(id: mail), AppRecord(id: maps), AppRecord(id: notes)],
                                            tasks: [BackgroundTask(token: TaskToken(1), app: [mail, maps, notes][1777 % 3],
                                                                   session: SessionID(1777), name: "kept", beganAt: at(4),
                                                                   expirationSentAt: nil),
                                                    BackgroundTask(token: TaskToken(2), app: [mail, maps, notes][1234 % 3],
                                                                   session: SessionID(1234), name: "goes", beganAt: at(4),
                                                                   expirationSentAt: nil)],
                                            counters: EngineCounters(clock: at(5), nextSequence: 1,
                                                                     nextSessionNumber: 3_001, nextTaskNumber: 3)))
                store.close()
            }
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
}
