import Testing
import SceneCore
@testable import SceneStore
import ScenedTestSupport

/// Issue 16 item 1: a start-up that defers payloads loads only the sizes of large userInfo and
/// restoration data; SavedDataReader reads them back, checked; commits of other changes leave
/// them as they are on disk.
@Suite struct DeferredPayloadTests {
    static let bigInfo = UserInfo(json: #"{"document":""# + String(repeating: "d", count: 200) + #""}"#)
    static let bigJSON = RestorationData.json(#"{"scroll":""# + String(repeating: "s", count: 16_000) + #""}"#)
    static let bigBytes = RestorationData.bytes((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    static let smallInfo = UserInfo(json: #"{"k":1}"#)

    func session(_ n: UInt64, _ userInfo: UserInfo, _ restoration: RestorationData?, footprint: UInt64 = 1) -> SceneSession {
        SceneSession(id: SessionID(n), app: mail, role: .windowApplication, configurationName: "Default Configuration",
                     userInfo: userInfo, restoration: restoration, footprint: footprint, condition: .archived,
                     sceneState: .unattached, sceneInstance: 1, createdAt: at(1), lastActiveAt: at(1),
                     backgroundSince: at(1), activations: 0, restores: 0, restoreCostMs: 0, isProtected: false)
    }

    func store(_ dir: TemporaryDirectory) throws -> SceneStore {
        let store = try SceneStore(path: dir.file("scened.db"), durability: .full, eventLogCapacity: 100)
        try store.commit(StoreBatch(
            sessions: [session(1, Self.bigInfo, Self.bigJSON), session(2, Self.smallInfo, Self.bigBytes),
                       session(3, Self.smallInfo, .json(#"{"a":1}"#)), session(4, .empty, nil)],
            apps: [AppRecord(id: mail, process: .notRunning)],
            counters: EngineCounters(clock: at(1), nextSequence: 1, nextSessionNumber: 5, nextTaskNumber: 1)))
        return store
    }

    @Test("deferred: large payloads load as their sizes, small ones as they are; the reader gives back the bytes")
    func deferredLoad() throws {
        try withTemporaryDirectory { dir in
            let store = try store(dir)
            let (tables, quarantined, _) = try store.loadTables(deferringPayloads: true)
            #expect(quarantined.isEmpty)
            let s = tables.sessions
            #expect(s[SessionID(1)]!.savedUserInfo == .stored(byteCount: Self.bigInfo.json.utf8.count))
            #expect(s[SessionID(1)]!.savedRestoration == .stored(byteCount: Self.bigJSON.byteCount))
            #expect(s[SessionID(2)]!.savedUserInfo == .held(Self.smallInfo))
            #expect(s[SessionID(2)]!.savedRestoration == .stored(byteCount: 5_000))
            #expect(s[SessionID(3)]!.savedRestoration == .held(.json(#"{"a":1}"#)))
            #expect(s[SessionID(4)]!.savedUserInfo == .held(.empty) && !s[SessionID(4)]!.hasStoredPayload)
            // Not deferred (tests, exports), everything is held, as before.
            let full = try store.loadTables().tables.sessions
            #expect(full.values.allSatisfy { !$0.hasStoredPayload })
            #expect(full[SessionID(1)]!.restoration == Self.bigJSON)

            let reader = try SavedDataReader(path: dir.file("scened.db"))
            #expect(try reader.userInfo(SessionID(1)) == Self.bigInfo && reader.restoration(SessionID(1)) == Self.bigJSON)
            #expect(try reader.userInfo(SessionID(2)) == Self.smallInfo && reader.restoration(SessionID(2)) == Self.bigBytes)
            #expect(try reader.restoration(SessionID(4)) == nil)
            let missing = try #require(throws: StoreError.self) { try reader.userInfo(SessionID(99)) }
            #expect(missing.kind == .corrupt && missing.message.contains("s99"))
        }
    }

    @Test("a commit of a session whose payloads are in the store changes its row but not its payloads")
    func commitKeepsStoredPayloads() throws {
        try withTemporaryDirectory { dir in
            let store = try store(dir)
            var s1 = try store.loadTables(deferringPayloads: true).tables.sessions[SessionID(1)]!
            s1.footprint = 777
            try store.commit(StoreBatch(sessions: [s1],
                                        counters: EngineCounters(clock: at(2), nextSequence: 1, nextSessionNumber: 5,
                                                                 nextTaskNumber: 1)))
            let reader = try SavedDataReader(path: dir.file("scened.db"))
            #expect(try reader.userInfo(SessionID(1)) == Self.bigInfo && reader.restoration(SessionID(1)) == Self.bigJSON)
            #expect(try store.loadTables().tables.sessions[SessionID(1)]!.footprint == 777)

            // A new restoration (held) replaces the stored one; the userInfo still stays.
            s1.restoration = .bytes([1, 2, 3])
            try store.commit(StoreBatch(sessions: [s1],
                                        counters: EngineCounters(clock: at(3), nextSequence: 1, nextSessionNumber: 5,
                                                                 nextTaskNumber: 1)))
            #expect(try reader.userInfo(SessionID(1)) == Self.bigInfo && reader.restoration(SessionID(1)) == .bytes([1, 2, 3]))
            let reloaded = try store.loadTables(deferringPayloads: true).tables.sessions[SessionID(1)]!
            #expect(reloaded.savedRestoration == .held(.bytes([1, 2, 3])))
            #expect(reloaded.savedUserInfo.isStored)
        }
    }

    @Test("damage in a stored payload is found by the read, named, and does not stop the load",
          arguments: [
              ("UPDATE sessions SET user_info = '{\"a\":' || substr(user_info, 6) WHERE id = 1", "user_info is not a JSON object"),
              ("UPDATE sessions SET restoration = 7 WHERE id = 1", "restoration is an integer"),
              ("UPDATE sessions SET restoration_size = 4000 WHERE id = 2", "its size says 4000"),
              ("UPDATE sessions SET user_info = 5 WHERE id = 1", #"user_info is not a JSON object ("5")"#),
          ])
    func damagedAtRead(_ damage: String, _ expected: String) throws {
        try withTemporaryDirectory { dir in
            let store = try store(dir)
            try withConnection(dir.file("scened.db")) { db in try db.execute(damage, "damaging") }
            let (tables, quarantined, _) = try store.loadTables(deferringPayloads: true)
            #expect(quarantined.isEmpty, "\(quarantined)")
            #expect(tables.sessions.count == 4)
            let reader = try SavedDataReader(path: dir.file("scened.db"))
            let id = damage.hasSuffix("id = 2") ? SessionID(2) : SessionID(1)
            let userInfoDamaged = damage.contains("user_info")
            let error = try #require(throws: StoreError.self) {
                if userInfoDamaged { _ = try reader.userInfo(id) } else { _ = try reader.restoration(id) }
            }
            #expect(error.kind == .corrupt)
            #expect(error.message.contains("session \(id)") && error.message.contains(expected), "\(error.message)")
            // The session's other payload, and other sessions, still read.
            if userInfoDamaged { #expect(try reader.restoration(id) != nil) } else { _ = try reader.userInfo(id) }
            #expect(try reader.restoration(SessionID(3)) == .json(#"{"a":1}"#))
        }
    }
}
