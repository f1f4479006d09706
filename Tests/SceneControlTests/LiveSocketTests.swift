import Glibc
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// scenectl against a scripted daemon on a real Unix socket.
@Suite struct LiveSocketTests {
    static func event(_ seq: Int64, _ name: String, session: String? = "s1", state: String = "foregroundActive") -> JSONObject {
        var event: JSONObject = ["seq": .int(seq), "time": .int(Int64(testNow) + seq), "event": .string(name),
                                 "app": "com.example.mail", "state": .string(state), "appState": "active", "cause": "request"]
        if let session { event["session"] = .string(session) }
        return event
    }

    static func run(_ arguments: [String], on daemon: ScriptedDaemon, out: CapturedOutput = CapturedOutput(),
                    err: CapturedOutput = CapturedOutput()) -> Int32 {
        SceneCtl.run(["--socket", daemon.path] + arguments, context: liveContext(out: out, err: err))
    }

    @Test func monitorPrintsEachEventAsItArrivesAndExits3WhenTheDaemonGoesAway() throws {
        let out = CapturedOutput(), err = CapturedOutput()
        let daemon = try ScriptedDaemon { call, peer in
            guard call.method == "io.scened.Manager.Monitor", call.more else {
                peer.fail(.expectedMore())
                return false
            }
            peer.reply([:], continues: true)  // subscribed
            // Each event is sent only once the previous one has been printed: nothing may wait
            // for a buffer to fill or for the stream to end.
            for (index, name) in ["willEnterForeground", "didBecomeActive", "willResignActive"].enumerated() {
                peer.reply(["event": .object(Self.event(Int64(index + 1), name))], continues: true)
                guard out.wait(until: { $0.split(separator: "\n").count == index + 2 }) else { return false }
            }
            return false  // hang up: the daemon went away
        }
        defer { daemon.stop() }
        let status = Self.run(["monitor", "--app", "com.example.mail", "--since", "1"], on: daemon, out: out, err: err)
        #expect(status == 3)
        #expect(out.lines == [
            "    SEQ TIME            EVENT                      APP                      SESSION  STATE              DETAIL",
            "      1 16:40:01.000001 willEnterForeground        com.example.mail         s1       foregroundActive",
            "      2 16:40:01.000002 didBecomeActive            com.example.mail         s1       foregroundActive",
            "      3 16:40:01.000003 willResignActive           com.example.mail         s1       foregroundActive",
        ])
        #expect(err.text == "scenectl: scened closed the connection (\(daemon.path))\n")
        #expect(daemon.calls.value.map(\.parameters) == [["app": "com.example.mail", "since": 1]])
    }

    @Test func monitorJSONIsOneEventObjectPerLine() throws {
        let daemon = try ScriptedDaemon { _, peer in
            peer.reply([:], continues: true)
            peer.reply(["event": .object(Self.event(7, "didEnterBackground", state: "background"))], continues: true)
            peer.reply(["event": .object(Self.event(8, "suspended", session: nil, state: "suspended"))], continues: true)
            return false
        }
        defer { daemon.stop() }
        let out = CapturedOutput()
        #expect(Self.run(["monitor", "--json"], on: daemon, out: out) == 3)
        let lines = out.lines
        try #require(lines.count == 2)
        let first = try JSONParser.parse(lines[0]), second = try JSONParser.parse(lines[1])
        #expect(first == .object(Self.event(7, "didEnterBackground", state: "background")))
        #expect(second["event"] == "suspended")
        #expect(second["session"] == nil)
        for line in [first, second] {
            for key in ["seq", "event", "app", "state"] { #expect(line[key] != nil, "\(key)") }
        }
    }

    @Test func monitorStopsQuietlyWhenStdoutCloses() throws {
        let daemon = try ScriptedDaemon { _, peer in
            peer.reply([:], continues: true)
            for seq in 1...50 { peer.reply(["event": .object(Self.event(Int64(seq), "didBecomeActive"))], continues: true) }
            usleep(200_000)
            return false
        }
        defer { daemon.stop() }
        let out = CapturedOutput(closeAfter: 3), err = CapturedOutput()
        #expect(Self.run(["monitor"], on: daemon, out: out, err: err) == 0)
        #expect(out.lines.count == 3)
        #expect(err.text.isEmpty)
    }

    @Test func listReadsBatchesUntilTheLast() throws {
        let daemon = try ScriptedDaemon { _, peer in
            for batch in 0..<3 {
                let sessions = (1...500).map { JSONValue.object(Fixtures.session("s\(batch * 500 + $0)")) }
                peer.reply(["sessions": .array(sessions)], continues: batch < 2)
            }
            return true
        }
        defer { daemon.stop() }
        let out = CapturedOutput()
        #expect(Self.run(["list", "--state", "foregroundActive"], on: daemon, out: out) == 0)
        let lines = out.lines
        #expect(lines.count == 1 + 1500 + 2)
        #expect(lines[1].hasPrefix("s1 "))
        #expect(lines[1500].hasPrefix("s1500 "))
        #expect(lines.last == "1500 sessions listed.")
        #expect(daemon.calls.value.map(\.parameters) == [["state": "foregroundActive"]])
        #expect(daemon.calls.value.map(\.more) == [true])
    }

    @Test func errorRepliesMapToExitStatuses() throws {
        let daemon = try ScriptedDaemon { call, peer in
            switch call.method {
            case "io.scened.Manager.GetSession":
                peer.fail(VarlinkError(name: "io.scened.Manager.NoSuchSession", parameters: ["session": "s5", "message": "no session s5"]))
            case "io.scened.Manager.Deactivate":
                peer.fail(VarlinkError(name: "io.scened.Manager.InvalidTransition", parameters: [
                    "command": "deactivate", "app": "com.example.mail", "session": "s5", "state": "background",
                    "reason": "not active", "message": "s5 is in the background"]))
            default:
                peer.fail(.methodNotFound(call.method))
            }
            return true
        }
        defer { daemon.stop() }
        for (arguments, status, message) in [
            (["show", "s5"], Int32(4), "no session s5"),
            (["deactivate", "s5"], 1, "s5 is in the background"),
            (["reload"], 1, "this scened cannot reload its configuration (no io.scened.Manager.Reload); restart it instead"),
        ] {
            let out = CapturedOutput(), err = CapturedOutput()
            #expect(Self.run(arguments, on: daemon, out: out, err: err) == status, "\(arguments)")
            #expect(err.text == "scenectl: \(message)\n")
            #expect(out.text.isEmpty)
        }
    }

    @Test func unreachableSockets() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let missing = directory.path + "/none"
        let err = CapturedOutput()
        #expect(SceneCtl.run(["--socket", missing, "status"], context: liveContext(out: CapturedOutput(), err: err)) == 3)
        #expect(err.text == "scenectl: cannot connect to \(missing): No such file or directory; is scened running?\n")

        // A socket file nobody listens on, as a crashed daemon leaves it.
        let stale = directory.path + "/stale"
        close(try UnixSocket.listen(path: stale))
        let refused = CapturedOutput()
        #expect(SceneCtl.run(["--socket", stale, "list"], context: liveContext(out: CapturedOutput(), err: refused)) == 3)
        #expect(refused.text == "scenectl: cannot connect to \(stale): Connection refused; is scened running?\n")
    }
}
