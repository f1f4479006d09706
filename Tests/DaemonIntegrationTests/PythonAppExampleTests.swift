import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Examples/python/scene_app.py, the app on the PyPI `varlink` package, against the real
/// daemon: it attaches, answers didEnterBackground with its state, and a later process of it
/// restores the state after the first was killed.
@Suite("The Python app example")
struct PythonAppExampleTests {
    static let app = "com.example.pynotes"

    /// Examples/python/scene_app.py, from this file's path (Tests/DaemonIntegrationTests/…).
    static var script: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/Examples/python/scene_app.py"
    }

    static func start(_ daemon: DaemonProcess, _ label: String, note: String) throws -> ChildProcess {
        try ChildProcess(["/usr/bin/env", "python3", script, "--socket", daemon.socketPath, "--app", app, "--note", note],
                         environment: ["PYTHONUNBUFFERED": "1"], directory: daemon.workspace.path, label: label,
                         stdoutPipe: true)
    }

    /// Lines until one containing `text`; fails with everything the app said if none comes.
    static func lines(_ child: ChildProcess, through text: String, timeout: Double = 15) throws -> [String] {
        var out: [String] = []
        let deadline = Deadline(seconds: timeout)
        while !deadline.hasPassed {
            guard let line = child.readLine(seconds: Double(deadline.remainingMilliseconds) / 1000) else { break }
            out.append(line)
            if line.contains(text) { return out }
        }
        throw TestFailure("the app printed no '\(text)' within \(timeout) s (\(child.outcome)):\n\(out.joined(separator: "\n"))\nstderr: \(child.stderr)")
    }

    @Test("scene_app.py attaches, prints its callbacks, answers didEnterBackground with its state, and its next process restores the state from willConnectTo")
    func pythonAppAttachesAnswersAndRestores() throws {
        let workspace = try Workspace()
        try PythonClientTests.requireModule(workspace)
        let daemon = try DaemonProcess(workspace)
        let monitor = try EventMonitor(daemon, parameters: ["app": .string(Self.app)], consecutive: false)

        // First process: launched by its attach, asks for a new scene.
        let first = try Self.start(daemon, "pyapp-1", note: "draft")
        let attached = try Self.lines(first, through: "didBecomeActive")
        #expect(attached.first?.hasPrefix("attached \(Self.app) pid ") == true, "\(attached)")
        #expect(attached.contains { $0.hasSuffix(" didFinishLaunching") }, "\(attached)")
        guard let requested = attached.first(where: { $0.hasPrefix("requested a new scene: ") }) else {
            throw TestFailure("no new scene requested: \(attached)")
        }
        let session = String(requested.dropFirst("requested a new scene: ".count))
        #expect(attached.contains { $0.hasSuffix("willConnectTo \(session) new scene") }, "\(attached)")

        // The system sends it home: the app answers before the deadline, with its state.
        try daemon.call("Background", ["session": .string(session)])
        let home = try Self.lines(first, through: "didEnterBackground")
        let state = #"{"foregrounds": 1, "note": "draft"}"#
        #expect(home.last?.hasSuffix("didEnterBackground \(session) answered, saved \(state)") == true, "\(home)")
        // The answer is in once the session has the state (Acknowledge commits it).
        let saved = waitUntil(seconds: 10) {
            let s = try? daemon.call("GetSession", ["session": .string(session)])
            return s?["session"]?["restoration"]?["json"]?["foregrounds"]?.intValue == 1
        }
        #expect(saved, "the answer's restoration data is the session's")

        // Killed: terminated with no callbacks, the session archived with what it saved.
        first.killNow()
        let gone = waitUntil(seconds: 10) {
            (try? daemon.call("GetApp", ["app": .string(Self.app)]))?["app"]?["process"]?.stringValue == "notRunning"
        }
        #expect(gone, "the killed app is terminated")

        // The next process brings the archived session back and restores from willConnectTo.
        let second = try Self.start(daemon, "pyapp-2", note: "other")
        let back = try Self.lines(second, through: "didBecomeActive")
        #expect(back.contains("requested the activation of \(session)"), "\(back)")
        #expect(!back.contains { $0.contains("configurationForConnecting") }, "no configurationForConnecting on a reconnection: \(back)")
        #expect(back.contains { $0.hasSuffix("willConnectTo \(session) restored \(state)") }, "\(back)")
        try daemon.call("Background", ["session": .string(session)])
        let again = try Self.lines(second, through: "didEnterBackground")
        #expect(again.last?.hasSuffix(#"answered, saved {"foregrounds": 2, "note": "draft"}"#) == true,
                "the restored state goes on: \(again)")

        // SIGTERM: a clean Detach.
        second.signal(SIGTERM)
        _ = try Self.lines(second, through: "detached")
        #expect(second.finish(within: 10) == 0, "\(second.outcome) \(second.stderr)")
        #expect(second.stderr.isEmpty, "\(second.stderr)")
        #expect(try daemon.call("GetApp", ["app": .string(Self.app)])["app"]?["process"]?.stringValue == "notRunning")

        // What the app printed is what the Monitor saw, callback for callback (both processes).
        var seen: [ObservedEvent] = []
        while let e = try monitor.next(timeout: 1) { seen.append(e) }
        let printed = (attached + home + back + again).compactMap { line -> Int64? in
            guard let first = line.split(separator: " ").first, let seq = Int64(first) else { return nil }
            return seq
        }
        let delivered = seen.filter { $0.event != "terminated" }.map { Int64($0.seq) }
        #expect(printed == delivered, "printed \(printed), the Monitor \(delivered)")
        try monitor.assertConformant("the Python app example")
        try daemon.assertServing("after the Python app example")
    }

    @Test("a stop of scened: scene_app.py answers the shutdown's didEnterBackground with its state, keeps running, and attaches again after the restart", .timeLimit(.minutes(3)))
    func pythonAppThroughAStop() throws {
        let workspace = try Workspace()
        try PythonClientTests.requireModule(workspace)
        var daemon = try DaemonProcess(workspace)
        let app = try Self.start(daemon, "pyapp-stop", note: "kept")
        let launched = try Self.lines(app, through: "didBecomeActive")
        guard let requested = launched.first(where: { $0.hasPrefix("requested a new scene: ") }) else {
            throw TestFailure("no new scene requested: \(launched)")
        }
        let session = String(requested.dropFirst("requested a new scene: ".count))

        // SIGTERM: the foreground scene resigns and goes home (cause shutdown), the answer with
        // its state is awaited, then scened exits; the app, not started by scened, stays.
        try daemon.stop()
        let down = try Self.lines(app, through: "connection to scened lost")
        #expect(down.contains { $0.hasPrefix("cause of event ") && $0.hasSuffix(": shutdown") }, "\(down)")
        let state = #"{"foregrounds": 1, "note": "kept"}"#
        #expect(down.contains { $0.hasSuffix("didEnterBackground \(session) answered, saved \(state)") }, "\(down)")

        daemon = try DaemonProcess(workspace)
        let back = try Self.lines(app, through: "reattached")
        #expect(back.last?.hasPrefix("reattached \(Self.app) pid ") == true, "\(back)")
        let saved = try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"]
        #expect(saved?["json"]?["note"]?.stringValue == "kept", "the stop kept the answer's state: \(String(describing: saved))")
        // Still the same process, still served: back to the foreground.
        try daemon.call("Activate", ["session": .string(session)])
        _ = try Self.lines(app, through: "didBecomeActive")
        app.signal(SIGTERM)
        _ = try Self.lines(app, through: "detached")
        #expect(app.finish(within: 10) == 0, "\(app.outcome) \(app.stderr)")
        try daemon.assertServing("after the Python app's stop and restart")
    }

    @Test("scene_app.py prints why a scene resigns, and answers willTerminate with its scenes' state, which is saved", .timeLimit(.minutes(3)))
    func pythonAppSavesOnTheWayDown() throws {
        let workspace = try Workspace()
        try PythonClientTests.requireModule(workspace)
        let daemon = try DaemonProcess(workspace)
        let app = try Self.start(daemon, "pyapp-terminate", note: "unsaved")
        let launched = try Self.lines(app, through: "didBecomeActive")
        guard let requested = launched.first(where: { $0.hasPrefix("requested a new scene: ") }) else {
            throw TestFailure("no new scene requested: \(launched)")
        }
        let session = String(requested.dropFirst("requested a new scene: ".count))

        // An operator deactivates the scene: the app says why before the callback's line.
        try daemon.call("Deactivate", ["session": .string(session)])
        let resigned = try Self.lines(app, through: "willResignActive")
        #expect(resigned.count >= 2 && resigned[resigned.count - 2].hasPrefix("cause of event ") == true
                && resigned[resigned.count - 2].hasSuffix(": request"), "\(resigned)")
        try daemon.call("Activate", ["session": .string(session)])
        _ = try Self.lines(app, through: "didBecomeActive")
        #expect(try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"] == nil,
                "nothing saved before the way down")

        try daemon.call("Terminate", ["app": .string(Self.app)])
        let down = try Self.lines(app, through: "detached")
        let state = #"{"\#(session)": {"foregrounds": 1, "note": "unsaved"}}"#
        #expect(down.contains { $0.hasSuffix("willTerminate answered, saved \(state)") }, "\(down)")
        #expect(app.finish(within: 10) == 0, "\(app.outcome) \(app.stderr)")
        let saved = try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"]
        #expect(saved?["json"]?["note"]?.stringValue == "unsaved" && saved?["json"]?["foregrounds"]?.intValue == 1,
                "the willTerminate answer's state is the session's: \(String(describing: saved))")
        try daemon.assertServing("after the Python app's willTerminate")
    }
}
