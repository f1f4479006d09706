import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// A willTerminate answer with its scenes' state (R33): `Acknowledge(restorations:)` saves each
/// session's data as SaveState would, and refuses, saving nothing, what is not the app's to save.
@Suite("willTerminate answers carry restoration data")
struct WillTerminateAnswerTests {
    /// Deadlines far away (the refusals are examined before the answer), a small payload limit.
    static let configuration = """
        [Lifecycle]
        SuspendDelaySec=60s
        DidEnterBackgroundTimeoutSec=60s
        WillTerminateTimeoutSec=60s
        [Store]
        Durability=normal
        [Limits]
        MaxRestorationSize=1K
        """

    /// A new session of the attached app, brought to the background with its answer given.
    static func backgroundSession(_ app: AttachedApp, _ daemon: DaemonProcess) throws -> String {
        let session = try app.call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?"
        _ = try app.events(through: "didBecomeActive")
        try daemon.call("Background", ["session": .string(session)])
        let background = try app.events(through: "didEnterBackground").last!
        try app.call("Acknowledge", ["seq": .int(Int64(background.seq))])
        return session
    }

    /// Terminates the app and reads its events up to willTerminate, answering any
    /// didEnterBackground on the way (a foreground scene goes through the background first).
    static func terminate(_ app: AttachedApp, _ daemon: DaemonProcess) throws -> ObservedEvent {
        try daemon.call("Terminate", ["app": .string(app.app)])
        let deadline = Deadline(seconds: 60)
        while !deadline.hasPassed {
            guard let e = try app.next(timeout: 10) else { break }
            if e.event == "willTerminate" { return e }
            if e.event == "didEnterBackground" { try app.call("Acknowledge", ["seq": .int(Int64(e.seq))]) }
        }
        throw TestFailure("\(app.app) got no willTerminate")
    }

    static func refusal(_ body: () throws -> Void) -> VarlinkError? {
        do {
            try body()
            return nil
        } catch let error as VarlinkError {
            return error
        } catch {
            return VarlinkError(name: "\(error)")
        }
    }

    static func saved(_ daemon: DaemonProcess, _ session: String) throws -> JSONValue? {
        try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"]
    }

    @Test("a willTerminate answer's restorations are saved; another app's session, an unknown one, an oversize payload and restorations on didEnterBackground are refused, saving nothing", .timeLimit(.minutes(3)))
    func restorationsSavedAndRefused() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        let monitor = try EventMonitor(daemon, consecutive: false)
        let notes = try AttachedApp(daemon, app: "com.example.notes")
        let other = try AttachedApp(daemon, app: "com.example.other")
        _ = try notes.events(through: "didFinishLaunching")
        _ = try other.events(through: "didFinishLaunching")
        let first = try Self.backgroundSession(notes, daemon)
        let theirs = try Self.backgroundSession(other, daemon)

        // restorations belong to willTerminate: on didEnterBackground they are refused, and the
        // refusal settles nothing (the plain answer is still taken).
        let second = try notes.call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?"
        _ = try notes.events(through: "didBecomeActive")
        try daemon.call("Background", ["session": .string(second)])
        let background = try notes.events(through: "didEnterBackground").last!
        let misplaced = Self.refusal {
            try notes.call("Acknowledge", ["seq": .int(Int64(background.seq)), "restorations": [first: ["json": ["page": 1]]]])
        }
        #expect(misplaced?.name == "org.varlink.service.InvalidParameter", "\(String(describing: misplaced))")
        #expect(misplaced?.parameters["parameter"]?.stringValue == "restorations")
        try notes.call("Acknowledge", ["seq": .int(Int64(background.seq)), "restoration": ["json": ["page": 2]]])
        #expect(try Self.saved(daemon, first) == nil)
        #expect(try Self.saved(daemon, second)?["json"]?["page"]?.intValue == 2)

        let willTerminate = try Self.terminate(notes, daemon)
        #expect(willTerminate.object["deadline"]?.intValue != nil, "willTerminate is bounded")
        let seq = JSONValue.int(Int64(willTerminate.seq))
        let good: JSONValue = ["json": ["page": 3]]
        let oversize: JSONValue = ["base64": .string(String(repeating: "A", count: 2048))]
        let cases: [(JSONObject, String)] = [
            ([first: good, theirs: good], "io.scened.App.NotOwnSession"),
            ([first: good, "s999999": good], "io.scened.Manager.NoSuchSession"),
            ([first: good, second: oversize], "io.scened.Manager.LimitExceeded"),
            ([first: good, "notasession": good], "org.varlink.service.InvalidParameter"),
        ]
        for (restorations, expected) in cases {
            let refused = Self.refusal { try notes.call("Acknowledge", ["seq": seq, "restorations": .object(restorations)]) }
            #expect(refused?.name == expected, "\(restorations.keys): \(String(describing: refused))")
        }
        let limit = Self.refusal {
            try notes.call("Acknowledge", ["seq": seq, "restorations": [second: oversize]])
        }
        #expect(limit?.parameters["limit"]?.stringValue == "MaxRestorationSize")
        #expect(limit?.parameters["message"]?.stringValue?.contains(second) == true, "the error names the session: \(String(describing: limit))")
        #expect(try Self.saved(daemon, first) == nil, "a refused answer saves nothing")
        #expect(try Self.saved(daemon, second)?["json"]?["page"]?.intValue == 2)
        #expect(try Self.saved(daemon, theirs) == nil)

        // The whole answer: JSON and bytes, each saved as SaveState saves it.
        try notes.call("Acknowledge", ["seq": seq, "restorations": [first: good, second: ["base64": "AAEC"]]])
        #expect(try Self.saved(daemon, first)?["json"]?["page"]?.intValue == 3)
        #expect(try Self.saved(daemon, second)?["base64"]?.stringValue == "AAEC")
        let again = Self.refusal { try notes.call("Acknowledge", ["seq": seq, "restorations": [:]]) }
        #expect(again?.name == "io.scened.App.NotAwaiting", "answered once: \(String(describing: again))")

        // The other app is served as before.
        #expect(try daemon.call("GetApp", ["app": "com.example.other"])["app"]?["process"]?.stringValue == "running")
        try notes.call("Detach")
        try monitor.assertConformant("willTerminate answers with restorations")
        try daemon.assertServing("after willTerminate answers")
    }

    @Test("hostile: 10,000 restorations entries are refused at once, saving nothing; an app's answer for all its 200 sessions is saved whole", .timeLimit(.minutes(5)))
    func floodOfRestorations() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        let app = try AttachedApp(daemon, app: "com.example.many")
        _ = try app.events(through: "didFinishLaunching")
        var own: [String] = []
        for _ in 0..<200 {
            own.append(try app.call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?")
        }
        let willTerminate = try Self.terminate(app, daemon)
        let seq = JSONValue.int(Int64(willTerminate.seq))

        // Its own 200, then 9,800 that are nobody's: refused as a whole.
        var flood = JSONObject(minimumCapacity: 10_000)
        for (i, s) in own.enumerated() { flood[s] = ["json": ["n": .int(Int64(i))]] }
        for i in 0..<9_800 { flood["s\(10_000_000 + i)"] = ["json": ["n": .int(Int64(i))]] }
        var start = monotonicSeconds()
        let refused = Self.refusal { try app.call("Acknowledge", ["seq": seq, "restorations": .object(flood)]) }
        let refusedIn = monotonicSeconds() - start
        #expect(refused?.name == "io.scened.Manager.NoSuchSession", "\(String(describing: refused))")
        #expect(try Self.saved(daemon, own[0]) == nil && Self.saved(daemon, own[199]) == nil, "nothing saved")
        try daemon.assertServing("after a flood of restorations")

        var all = JSONObject(minimumCapacity: own.count)
        for (i, s) in own.enumerated() { all[s] = ["json": ["n": .int(Int64(i))]] }
        start = monotonicSeconds()
        try app.call("Acknowledge", ["seq": seq, "restorations": .object(all)])
        let savedIn = monotonicSeconds() - start
        print("Acknowledge with 10,000 restorations refused in \(Int(refusedIn * 1000)) ms; with 200 saved and committed in \(Int(savedIn * 1000)) ms")
        #expect(refusedIn < 5 && savedIn < 5)
        for (i, s) in own.enumerated() where i % 20 == 0 || i == own.count - 1 {
            #expect(try Self.saved(daemon, s)?["json"]?["n"]?.intValue == Int64(i), "\(s)")
        }
        try daemon.assertServing("after an answer for 200 sessions")
    }

    @Test("hostile: an app that answers willTerminate and closes at once still has its state saved; the daemon serves the others", .timeLimit(.minutes(3)))
    func answerThenVanish() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        let bystander = try AttachedApp(daemon, app: "com.example.bystander")
        _ = try bystander.events(through: "didFinishLaunching")
        let app = try AttachedApp(daemon, app: "com.example.vanishing")
        _ = try app.events(through: "didFinishLaunching")
        let session = try Self.backgroundSession(app, daemon)
        let willTerminate = try Self.terminate(app, daemon)

        // The process exits as it answers: its attach connection closes first (the daemon has
        // seen it go), then the answer arrives on a connection that closes without reading the
        // reply.
        app.stream.close()
        let detached = waitUntil(seconds: 10) {
            (try? daemon.call("GetApp", ["app": "com.example.vanishing"]))?["app"]?["attachedPid"] == nil
        }
        #expect(detached, "the closed attach is noticed")
        let answer = try RawConnection(path: daemon.socketPath)
        try answer.sendCall("io.scened.App.Acknowledge", [
            "app": "com.example.vanishing", "seq": .int(Int64(willTerminate.seq)),
            "restorations": [session: ["json": ["count": 42]]],
        ])
        answer.close()
        app.requests.close()

        let saved = waitUntil(seconds: 10) { ((try? Self.saved(daemon, session))??["json"]?["count"]?.intValue) == 42 }
        #expect(saved, "the answer's state is saved although its sender is gone")
        #expect(try daemon.call("GetApp", ["app": "com.example.vanishing"])["app"]?["process"]?.stringValue == "notRunning")
        // The others are served: a new scene for the bystander, its callbacks delivered.
        _ = try bystander.call("RequestSceneSessionActivation")
        _ = try bystander.events(through: "didBecomeActive")
        try daemon.assertServing("after an app answered and vanished")
    }
}
