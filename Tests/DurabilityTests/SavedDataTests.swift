import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 16 item 1: large userInfo and restoration data stay in SQLite after a restart and
/// after a commit, and are read back when a caller needs them: GetSession, a reply that shows
/// the session, a reconnection's willConnectTo. Damage found in one is that caller's error;
/// the daemon starts and serves everyone else.
@Suite("Durability: saved data kept in the store", .serialized)
struct SavedDataTests {
    static let info: JSONObject = ["document": .string(String(repeating: "d", count: 300))]
    static let restoration: JSONObject = ["scroll": .string(String(repeating: "s", count: 16_000))]

    /// s1 and s3 archived with large data, s2 live with a small userInfo.
    static func prepare(_ daemon: Scened) throws {
        let c = try daemon.client()
        for (i, app) in ["org.saved.a", "org.saved.b", "org.saved.a"].enumerated() {
            let info: JSONObject = i == 1 ? ["k": .int(1)] : Self.info
            _ = try c.call("io.scened.Manager.Connect", ["app": .string(app), "userInfo": .object(info)])
        }
        for s in ["s1", "s3"] {
            _ = try c.call("io.scened.Manager.SaveState", ["session": .string(s), "restoration": ["json": .object(Self.restoration)]])
            _ = try c.call("io.scened.Manager.Background", ["session": .string(s)])
            _ = try c.call("io.scened.Manager.Disconnect", ["session": .string(s)])
        }
    }

    static func expectPayloads(_ session: JSONValue?, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(session?["userInfo"] == .object(Self.info), "\(label): userInfo", sourceLocation: sourceLocation)
        #expect(session?["restoration"]?["json"] == .object(Self.restoration), "\(label): restoration",
                sourceLocation: sourceLocation)
        #expect(session?["userInfoSize"]?.intValue == 315, "\(label): userInfoSize", sourceLocation: sourceLocation)
        #expect(session?["restorationSize"]?.intValue == 16_013, "\(label): restorationSize", sourceLocation: sourceLocation)
    }

    @Test("after a restart and after commits, GetSession, replies and a reconnection's willConnectTo have the data the store kept")
    func readBackAfterRestart() throws {
        let workspace = try DaemonWorkspace()
        let first = try workspace.start()
        try Self.prepare(first)
        try first.stop()

        let daemon = try workspace.start()
        Self.expectPayloads(try daemon.call("GetSession", ["session": "s1"])["session"], "GetSession after the restart")
        let listed = try daemon.call("ListSessions")["sessions"]?.arrayValue ?? []
        #expect(listed.first { $0["id"] == "s1" }?["restorationSize"]?.intValue == 16_013)
        #expect(listed.allSatisfy { $0["restoration"] == nil && $0["userInfo"] == nil })

        // The reconnection hands on the restoration data the store kept.
        let activated = try daemon.call("Activate", ["session": "s1"])
        Self.expectPayloads(activated["session"], "Activate's reply")
        let connect = activated["events"]?.arrayValue?.first { $0["event"] == "willConnectTo" }
        #expect(connect?["restoration"]?["json"] == .object(Self.restoration), "willConnectTo: \(connect ?? .null)")

        // Changes that leave the data in the store (committed without it) do not lose it.
        _ = try daemon.call("SetFootprint", ["session": "s3", "footprint": 4096])
        _ = try daemon.call("SaveUserInfo", ["session": "s3", "userInfo": ["k": 3]])
        let s3 = try daemon.call("GetSession", ["session": "s3"])["session"]
        #expect(s3?["userInfo"] == ["k": 3] && s3?["restoration"]?["json"] == .object(Self.restoration))
        try daemon.stop()

        let third = try workspace.start()
        Self.expectPayloads(try third.call("GetSession", ["session": "s1"])["session"], "GetSession after two restarts")
        let again = try third.call("GetSession", ["session": "s3"])["session"]
        #expect(again?["footprint"]?.intValue == 4096 && again?["userInfo"] == ["k": 3])
        #expect(again?["restoration"]?["json"] == .object(Self.restoration))
        try third.stop()
    }

    static func expectUnavailable(_ daemon: Scened, _ method: String, _ session: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try daemon.call(method, ["session": .string(session)])
            Issue.record("\(method) \(session) succeeded", sourceLocation: sourceLocation)
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.SavedDataUnavailable", "\(error)", sourceLocation: sourceLocation)
            #expect(error.parameters["session"] == .string(session), sourceLocation: sourceLocation)
            let reason = error.parameters["reason"]?.stringValue ?? ""
            #expect(reason.contains("damaged"), "\(reason)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(method) \(session): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("a damaged stored payload: the daemon starts, that session's GetSession and reconnection fail with SavedDataUnavailable, everyone else is served, SaveState writes over it")
    func damagedPayloadIsTheCallersError() throws {
        let workspace = try DaemonWorkspace()
        let first = try workspace.start()
        try Self.prepare(first)
        try first.stop()
        let inspector = try DatabaseInspector(directory: workspace.path)
        // Same length, no longer JSON; and a restoration that lost bytes behind its size's back.
        try inspector.damage(workspace.databasePath, """
            UPDATE sessions SET user_info = '{"a":' || substr(user_info, 6) WHERE id = 1;
            UPDATE sessions SET restoration = substr(restoration, 1, 100) WHERE id = 3;
            """)

        let daemon = try workspace.start()
        #expect(try daemon.call("GetStatus")["status"]?["quarantined"]?.intValue == 0)
        for method in ["GetSession", "Activate"] {
            Self.expectUnavailable(daemon, method, "s1")
            Self.expectUnavailable(daemon, method, "s3")
        }
        // Everyone else, and listing, go on.
        #expect(try daemon.call("ListSessions")["sessions"]?.arrayValue?.count == 3)
        #expect(try daemon.call("GetSession", ["session": "s2"])["session"]?["userInfo"] == ["k": 1])
        _ = try daemon.call("Background", ["session": "s2"])

        // New restoration data replaces what was damaged; the intact userInfo is kept.
        _ = try daemon.call("SaveState", ["session": "s3", "restoration": ["json": ["fresh": true]]]) 
        let activated = try daemon.call("Activate", ["session": "s3"])
        #expect(activated["session"]?["userInfo"] == .object(Self.info))
        let connect = activated["events"]?.arrayValue?.first { $0["event"] == "willConnectTo" }
        #expect(connect?["restoration"]?["json"] == ["fresh": true])
        try daemon.stop()
    }
}
