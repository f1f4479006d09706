import Glibc
import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Stored data is not trusted blindly: a row that does not decode or does not make sense is
/// left in place, recorded, not loaded, and its identifier stays taken.
@Suite struct QuarantineTests {
    func session(_ n: UInt64, app: AppID = mail, configuration: String = "Default Configuration") -> SceneSession {
        SceneSession(id: SessionID(n), app: app, role: .windowApplication, configurationName: configuration,
                     userInfo: UserInfo(json: #"{"n":\#(n)}"#), restoration: .json(#"{"r":\#(n)}"#), footprint: n,
                     condition: .live, sceneState: .background, sceneInstance: 1, createdAt: at(1), lastActiveAt: at(1),
                     backgroundSince: at(1), activations: 0, restores: 0, restoreCostMs: 0, isProtected: false)
    }

    func task(_ n: UInt64, app: AppID = mail, session: UInt64?) -> BackgroundTask {
        BackgroundTask(token: TaskToken(n), app: app, session: session.map(SessionID.init), name: "task \(n)",
                       beganAt: at(2), expirationSentAt: nil)
    }

    /// mail with sessions 1–4 and task t1 (session s1), maps with sessions 5–6 and task t2
    /// (session s5), closed; then `damage` applied with plain SQL.
    func storeWithDamage(_ dir: TemporaryDirectory, _ damage: String) throws -> SceneStore {
        let path = dir.file("scened.db")
        do {
            let store = try SceneStore(path: path, durability: .normal)
            try store.commit(StoreBatch(sessions: (1...4).map { session($0) } + (5...6).map { session($0, app: maps) },
                                        apps: [AppRecord(id: mail), AppRecord(id: maps)],
                                        tasks: [task(1, session: 1), task(2, app: maps, session: 5)]))
            store.close()
        }
        // Damage on disk skips the schema's CHECKs too.
        try withConnection(path) { db in try db.execute("PRAGMA ignore_check_constraints = ON; " + damage, "damaging") }
        return try SceneStore(path: path, durability: .normal)
    }

    func loaded(_ store: SceneStore) throws -> (sessions: [UInt64], tasks: [UInt64], quarantined: [String]) {
        let stored = try store.loadChecked()
        // The engine takes what was loaded.
        _ = try LifecycleEngine(restoring: stored.snapshot)
        return (stored.snapshot.sessions.map(\.id.rawValue), stored.snapshot.tasks.map(\.token.rawValue),
                stored.quarantined.map(\.description))
    }

    static let sessionDamage: [(sql: String, reason: String)] = [
        ("UPDATE sessions SET user_info = '{\"a\":' WHERE id = 2", #"user_info is not a JSON object ("{\"a\":")"#),
        ("UPDATE sessions SET user_info = '[1,2]' WHERE id = 2", #"user_info is not a JSON object ("[1,2]")"#),
        ("UPDATE sessions SET user_info = CAST(X'7B2261223A2280227D' AS TEXT) WHERE id = 2",
         #"user_info is not a JSON object ("{\"a\":\"\x80\"}")"#),
        ("UPDATE sessions SET user_info = X'7B7D' WHERE id = 2", "user_info is a blob, not text"),
        ("UPDATE sessions SET scene_state = 4 WHERE id = 2", "scene state 4 is not one"),
        ("UPDATE sessions SET role = -1 WHERE id = 2", "role -1 is not one"),
        ("UPDATE sessions SET condition = 2 WHERE id = 2", "condition 2 is neither live nor archived"),
        ("UPDATE sessions SET restoration = '{\"x\"}' WHERE id = 2", #"restoration is text but not a JSON object ("{\"x\"}")"#),
        ("UPDATE sessions SET restoration = 1.5 WHERE id = 2", "restoration is a real number, neither text nor bytes"),
        ("UPDATE sessions SET scene_instance = 5000000000 WHERE id = 2", "scene_instance 5000000000 is out of range"),
        ("UPDATE sessions SET created_at = 'yesterday' WHERE id = 2", "created_at is text, not an integer"),
        ("UPDATE sessions SET protected = 2 WHERE id = 2", "protected is 2, neither 0 nor 1"),
        ("UPDATE sessions SET app = 9 WHERE id = 2", "app reference 9 names no app"),
        ("UPDATE sessions SET configuration = 7 WHERE id = 2", "configuration reference 7 names no configuration"),
    ]

    @Test(arguments: 0..<sessionDamage.count)
    func damagedSessionIsQuarantined(_ index: Int) throws {
        let (sql, reason) = Self.sessionDamage[index]
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, sql)
            let result = try loaded(store)
            #expect(result.sessions == [1, 3, 4, 5, 6])
            #expect(result.quarantined == ["session s2: \(reason)"])
            #expect(try store.quarantineRecords().map(\.description) == ["session s2: \(reason)"])
        }
    }

    /// The row stays where it is, and a copy of its values is kept with the record.
    @Test func quarantinedRowIsKeptWithACopyOfItsValues() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE sessions SET user_info = 'not json' WHERE id = 3")
            _ = try loaded(store)
            _ = try loaded(store)   // loading again records nothing twice
            let evidence = try #require(store.connection).texts("SELECT evidence FROM quarantine", "test")
            #expect(evidence.count == 1)
            #expect(evidence.first?.contains("id=3 ") == true && evidence.first?.contains("user_info='not json'") == true)
            #expect(try #require(store.connection).texts("SELECT user_info FROM sessions WHERE id = 3", "test") == ["not json"])
        }
    }

    @Test func quarantinedSessionIdIsNeverHandedOutAgain() throws {
        try withTemporaryDirectory { dir in
            // The highest session and the counters' mark both damaged away: s6 is unreadable and
            // the mark says 2. The next session is still s7.
            let store = try storeWithDamage(dir, "UPDATE sessions SET condition = 9 WHERE id = 6; UPDATE counters SET next_session = 2")
            let stored = try store.loadChecked()
            #expect(stored.snapshot.sessions.map(\.id.rawValue) == [1, 2, 3, 4, 5])
            #expect(stored.snapshot.nextSessionNumber == 7)
            var engine = try LifecycleEngine(restoring: stored.snapshot)
            var effects: [Effect] = []
            let result = try engine.handle(.connect(ConnectRequest(app: mail)), now: at(10), effects: &effects)
            #expect(result == .session(SessionID(7)))
            try store.commit(StoreBatch(effects: effects, engine: engine))
            #expect(try store.load().nextSessionNumber == 8)
        }
    }

    @Test func damagedAppTakesItsSessionsAndTasksWithIt() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE apps SET process = 7 WHERE id = 'com.example.maps'")
            let result = try loaded(store)
            #expect(result.sessions == [1, 2, 3, 4])
            #expect(result.tasks == [1])
            #expect(result.quarantined == [
                "apps row 2: app com.example.maps: process state 7 is not one",
                "session s5: its app com.example.maps (apps row 2) is quarantined",
                "session s6: its app com.example.maps (apps row 2) is quarantined",
                "task t2: its app com.example.maps (apps row 2) is quarantined",
            ])
            // A client using the app again writes a fresh record over the damaged one (its
            // values are in the quarantine), and the app's sessions come back with it.
            try store.commit(StoreBatch(apps: [AppRecord(id: maps)]))
            #expect(try loaded(store).sessions == [1, 2, 3, 4, 5, 6])
            let evidence = try #require(store.connection).texts("SELECT evidence FROM quarantine WHERE table_name = 'apps'", "test")
            #expect(evidence.first?.contains("process=7") == true)
        }
    }

    @Test func appWithAnUnreadableIdKeepsItsReference() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE apps SET id = 'not an app id' WHERE ref = 1")
            let result = try loaded(store)
            #expect(result.sessions == [5, 6])
            #expect(result.quarantined.first == #"apps row 1: id "not an app id" is not a reverse-DNS app identifier"#)
            #expect(result.quarantined.dropFirst().allSatisfy { $0.hasSuffix("app reference 1 names no app") })
            // A new app is given a new reference: the damaged row stays as it was.
            try store.commit(StoreBatch(apps: [AppRecord(id: notes)]))
            let rows = try #require(store.connection).texts("SELECT ref || ' ' || id FROM apps ORDER BY ref", "test")
            #expect(rows == ["1 not an app id", "2 com.example.maps", "3 com.example.notes"])
        }
    }

    @Test func taskOfAQuarantinedSessionGoesWithIt() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE sessions SET role = 99 WHERE id = 1; UPDATE tasks SET name = X'FF' WHERE token = 2")
            let result = try loaded(store)
            #expect(result.tasks.isEmpty)
            #expect(result.quarantined == [
                "session s1: role 99 is not one",
                "task t1: its session s1 is not loaded (quarantined, or not stored)",
                "task t2: name is a blob, not text",
            ])
        }
    }

    @Test func configurationThatDoesNotDecodeIsQuarantinedWithItsSessions() throws {
        try withTemporaryDirectory { dir in
            let store = try storeWithDamage(dir, "UPDATE configurations SET name = CAST(X'C0AF' AS TEXT)")
            let result = try loaded(store)
            #expect(result.sessions.isEmpty)
            #expect(result.quarantined.first == "configurations row 1: name is not valid UTF-8")
            #expect(result.quarantined.count == 9, "the configuration, six sessions, their two tasks")
        }
    }

    @Test func damagedCountersRefuseTheOpen() throws {
        try withTemporaryDirectory { dir in
            let error = try #require(throws: StoreError.self) {
                _ = try storeWithDamage(dir, "UPDATE counters SET next_task = -3")
            }
            #expect(error.kind == .corrupt)
            #expect(error.description.hasSuffix("the counters row is damaged: next_task is -3, outside 1..<2^62"))
        }
    }

    // MARK: - The event log

    @Test func damagedEventsAreSkippedAndReadingGoesOn() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .normal)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], events: (1...10).map(walEvent)))
            // Restoration JSON that is not an object, an unknown state, a name stored as text.
            var bad = walEvent(4)
            bad.detail = .connect(restoration: .json("{"), reconnect: true)
            let extra = try #require(RowCoding.extra(detail: bad.detail, cause: bad.cause))
            try #require(store.connection).execute("""
                UPDATE events SET extra = X'\(extra.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())' WHERE seq = 4;
                UPDATE events SET state = 40 WHERE seq = 5; UPDATE events SET name = 'x' WHERE seq = 6;
                """, "test")
            // Pages of three: the damaged rows do not shorten a page nor end the reading.
            #expect(try store.events(after: 0, limit: 3).map(\.seq) == [1, 2, 3])
            #expect(try store.events(after: 3, limit: 3).map(\.seq) == [7, 8, 9])
            #expect(try store.events(after: 9, limit: 3).map(\.seq) == [10])
            #expect(store.quarantinedEvents.map(\.description) == [
                "event #4: detail or cause is malformed", "event #5: state 40 is not one",
                "event #6: name is text, not an integer",
            ])
            _ = try store.events(after: 0, limit: 100)
            #expect(store.quarantinedEvents.count == 3, "each is reported once")
        }
    }

    // MARK: - What one commit may allocate

    @Test func aBatchAllocatingBeyondTheCapIsRefused() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            try store.commit(StoreBatch(sessions: [session(1)], apps: [AppRecord(id: mail)]))
            let cap = Tuning.maxAllocationsPerCommit
            let error = try #require(throws: StoreError.self) {
                try store.commit(StoreBatch(sessions: [session(cap + 2)]))
            }
            #expect(error.kind == .constraint)
            #expect(error.description.contains("one commit may allocate at most \(cap)"))
            #expect(try store.load().sessions.map(\.id.rawValue) == [1])
            // Right at the cap is allowed.
            try store.commit(StoreBatch(sessions: [session(cap + 1)]))
            #expect(try store.load().nextSessionNumber == cap + 2)
        }
    }
}

/// The JSON check behind userInfo and restoration data: RFC 8259, strictly.
@Suite struct JSONCheckTests {
    static let objects = [
        "{}", " {} ", "{\"a\":1}", "{\"a\":[1,2,{\"b\":null}],\"c\":true,\"d\":false}", "{\"\":\"\"}",
        "{\"n\":-0.5e+10,\"m\":0,\"k\":1E3}", "{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83C\"}",
        "{\"é\":\"Zoë 🎬\"}", "\t\n{\r\n\"a\" : [ ] }\n", String(repeating: "{\"a\":", count: 2000) + "1" + String(repeating: "}", count: 2000),
    ]
    static let notObjects = [
        "", " ", "[]", "1", "\"a\"", "null", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}", "{\"a\":1 \"b\":2}",
        "{a:1}", "{'a':1}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":1e}", "{\"a\":+1}", "{\"a\":-}",
        "{\"a\":tru}", "{\"a\":nul}", "{\"a\":NaN}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\t\"}",
        "{\"a\":\"unterminated}", "{} {}", "{}x", "{\"a\":[1,]}", "{\"a\":[,1]}", "{\"a\":[1 2]}", "{\"a\":{}", "{\"a\":1}}",
        String(repeating: "{\"a\":", count: 50) + "1" + String(repeating: "}", count: 49),
    ]

    /// Past 64 levels the nesting is kept another way; objects and arrays must still close in
    /// order there.
    static let deep = "{\"a\":" + String(repeating: "[{\"b\":", count: 40) + "0" + String(repeating: "}]", count: 40) + "}"
    static let deepMismatched = "{\"a\":" + String(repeating: "[{\"b\":", count: 40) + "0"
        + String(repeating: "}]", count: 2) + "]}" + String(repeating: "}]", count: 37) + "}"

    @Test func deepNestingClosesInOrder() {
        var good = Self.deep, bad = Self.deepMismatched
        #expect(good.withUTF8 { JSONCheck.isObject($0) })
        #expect(!bad.withUTF8 { JSONCheck.isObject($0) })
    }

    @Test func objectsAreAccepted() {
        for text in Self.objects {
            var t = text
            #expect(t.withUTF8 { JSONCheck.isObject($0) }, "\(text.prefix(40))")
        }
    }

    @Test func anythingElseIsRefused() {
        for text in Self.notObjects {
            var t = text
            #expect(!t.withUTF8 { JSONCheck.isObject($0) }, "\(text.prefix(60))")
        }
    }

    @Test func malformedUTF8IsRefused() {
        let bad: [[UInt8]] = [[0x80], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                              [0xF8, 0x88, 0x80, 0x80, 0x80], [0xE2, 0x82], [0xFF]]
        for bytes in bad {
            let text = Array("{\"a\":\"".utf8) + bytes + Array("\"}".utf8)
            #expect(!text.withUnsafeBufferPointer { JSONCheck.isObject($0) }, "\(bytes)")
            #expect(!bytes.withUnsafeBufferPointer { UTF8Check.isValid($0) }, "\(bytes)")
        }
        let good: [[UInt8]] = [[0x24], [0xC2, 0xA2], [0xE2, 0x82, 0xAC], [0xF0, 0x90, 0x8D, 0x88], [0xEF, 0xBF, 0xBF]]
        for bytes in good { #expect(bytes.withUnsafeBufferPointer { UTF8Check.isValid($0) }, "\(bytes)") }
    }
}
