import Foundation
import SceneClient
import ScenedTestSupport
import Testing
import Varlink

/// URLs and activities through the real scened (issue 37): Open (io.scened.Manager, as scenectl
/// open sends it) and an app's own open reach the right scene's delegate, in UIKit's order.
@Suite("SceneClient URLs and activities with the real daemon", .serialized)
@MainActor
struct RoutingDaemonTests {
    static let app = "org.example.routed"
    static let editType = "org.example.routed.edit"

    /// The routed app handles routed: URLs and the edit activity.
    static func workspace() throws -> Workspace {
        let workspace = try Workspace(configuration: SceneClientTests.patientConfiguration)
        try makeDirectory(workspace.path + "/apps.d")
        try writeTextFile(workspace.path + "/apps.d/\(app).conf", "[App]\nURLSchemes=routed\nActivityTypes=\(editType)\n")
        try writeTextFile(workspace.path + "/apps.d/org.example.source.conf", "[App]\nBackgroundModes=\n")
        return workspace
    }

    /// The callbacks after the first `count`.
    static func since(_ running: RunningApp, _ count: Int) -> [String] { Array(running.recorder.callbacks.dropFirst(count)) }

    @Test("a new scene gets its URL in willConnectTo; a connected one openURLContexts in UIKit's place", .timeLimit(.minutes(10)))
    func newAndConnectedScenes() async throws {
        let workspace = try Self.workspace()
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let feed = try MonitorFeed(socketPath: socket, app: Self.app)
        defer { feed.stop() }
        let running = RunningApp(app: Self.app, socketPath: socket, requestSceneAtLaunch: false)
        try await eventually("launched") { running.recorder.callbacks.contains("didFinishLaunching") }

        let opened = try await manager(socket, "Open", ["url": "routed:new?text=hi"])
        #expect(opened["app"]?.stringValue == Self.app && opened["session"]?.stringValue == "s1", "\(opened)")
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        #expect(running.recorder.opened == ["s1 routed:new?text=hi from -"])
        #expect(!running.recorder.callbacks.contains("openURLContexts s1"), "a new scene gets it only in its options")

        // From the background, asked to activate: between willEnterForeground and didBecomeActive.
        try await manager(socket, "Background", ["session": "s1"])
        try await eventually("s1 home") { running.recorder.callbacks.contains("stateRestorationActivity s1") }
        var before = running.recorder.callbacks.count
        try await manager(socket, "Open", ["url": "routed:two", "session": "s1"])
        try await eventually("s1 active again") { Self.since(running, before).contains("didBecomeActive s1") }
        #expect(Self.since(running, before) == ["willEnterForeground s1", "openURLContexts s1", "didBecomeActive s1"])
        // Inactive: the URL, then didBecomeActive.
        try await manager(socket, "Deactivate", ["session": "s1"])
        try await eventually("s1 inactive") { running.recorder.callbacks.last == "willResignActive s1" }
        before = running.recorder.callbacks.count
        try await manager(socket, "Open", ["url": "routed:three"])
        try await eventually("s1 active a third time") { Self.since(running, before).contains("didBecomeActive s1") }
        #expect(Self.since(running, before) == ["openURLContexts s1", "didBecomeActive s1"])
        // Active: the URL alone. In the background without activate: the URL alone, still home.
        before = running.recorder.callbacks.count
        try await manager(socket, "Open", ["url": "routed:four"])
        try await eventually("four") { running.recorder.opened.contains("s1 routed:four from -") }
        try await manager(socket, "Background", ["session": "s1"])
        try await eventually("s1 home again") { running.recorder.callbacks.filter { $0 == "stateRestorationActivity s1" }.count == 2 }
        let home = running.recorder.callbacks.count
        try await manager(socket, "Open", ["url": "routed:five", "activate": false])
        try await eventually("five") { running.recorder.opened.contains("s1 routed:five from -") }
        #expect(Self.since(running, before).first == "openURLContexts s1")
        #expect(Self.since(running, home) == ["openURLContexts s1"])
        #expect(running.application.connectedScenes.first?.activationState == .background)

        try await manager(socket, "Terminate", ["app": .string(Self.app)])
        _ = try await running.ending()
        try SceneClientTests().checkSameAsMonitor(feed, running, "routed")
        try daemon.stop()
    }

    @Test("an activity: willContinueUserActivityWithType, then continue", .timeLimit(.minutes(10)))
    func continueActivity() async throws {
        let workspace = try Self.workspace()
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let running = RunningApp(app: Self.app, socketPath: socket)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        let before = running.recorder.callbacks.count
        try await manager(socket, "Open", ["activity": ["activityType": .string(Self.editType), "title": "Edit",
                                                        "targetContentIdentifier": "doc-1", "userInfo": ["line": 3]]])
        try await eventually("continued") { Self.since(running, before).contains("continue s1 \(Self.editType)") }
        #expect(Self.since(running, before) == ["willContinueUserActivity s1 \(Self.editType)", "continue s1 \(Self.editType)"])
        #expect(running.recorder.opened == ["s1 activity \(Self.editType) doc-1"])
        try await running.application.detach()
        _ = try await running.ending()
        try daemon.stop()
    }

    @Test("activation conditions choose between two scenes; neither taking it makes a new scene", .timeLimit(.minutes(10)))
    func conditionsChoose() async throws {
        let workspace = try Self.workspace()
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let running = RunningApp(app: Self.app, socketPath: socket)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        try await running.application.requestSceneSessionActivation(configuration: "Second")
        try await eventually("s2 active") { running.recorder.callbacks.contains("didBecomeActive s2") }
        for scene in running.application.connectedScenes {
            let own = ["routed:doc?id=\(scene.session.persistentIdentifier)"]
            try await running.application.setActivationConditions(
                SceneActivationConditions(canActivateFor: own, prefersToActivateFor: own), for: scene)
        }
        for (i, (url, session)) in [("routed:doc?id=s2", "s2"), ("routed:doc?id=s1", "s1"), ("routed:doc?id=s2", "s2")].enumerated() {
            let reply = try await manager(socket, "Open", ["url": .string(url)])
            #expect(reply["session"]?.stringValue == session, "\(url): \(reply)")
            try await eventually(url) { running.recorder.opened.count == i + 1 }
        }
        #expect(running.recorder.opened == ["s2 routed:doc?id=s2 from -", "s1 routed:doc?id=s1 from -", "s2 routed:doc?id=s2 from -"])
        let reply = try await manager(socket, "Open", ["url": "routed:doc?id=elsewhere"])
        #expect(reply["session"]?.stringValue == "s3", "\(reply)")
        try await eventually("s3 connected with it") { running.recorder.opened.contains("s3 routed:doc?id=elsewhere from -") }
        try await running.application.detach()
        _ = try await running.ending()
        try daemon.stop()
    }

    @Test("scene-notes: notes:new makes a note in a new scene, notes:open shows it in its own", .timeLimit(.minutes(10)))
    func sceneNotesOpensURLs() throws {
        let workspace = try Workspace(configuration: SceneClientTests.patientConfiguration)
        try makeDirectory(workspace.path + "/apps.d")
        try writeTextFile(workspace.path + "/apps.d/org.example.notes.conf",
                          try readExistingTextFile(FakeAppDaemon.interfaceDirectory + "/../config/apps.d/org.example.notes.conf"))
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let notes = try Binaries.require(Binaries.directory + "/scene-notes")
        let child = try ChildProcess([notes, "--app", "org.example.notes", "--socket", socket], directory: workspace.path, label: "notes-urls")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("s1 takes notes:open?id=s1") }, "\(child.stdout)")
        func open(_ url: String) throws -> String? {
            try daemon.call("Open", ["url": .string(url)])["session"]?.stringValue
        }
        #expect(try open("notes:new?text=hi%20there") == "s2")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("note s2: \"hi there\"") }, "\(child.stdout)")
        #expect(try open("notes:open?id=s1") == "s1")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("showing note s1: \"\"") }, "\(child.stdout)")
        #expect(try open("notes:open?id=s2") == "s2")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("showing note s2: \"hi there\"") }, "\(child.stdout)")
        #expect(child.stdout.contains("scene(_:openURLContexts:) s2 notes:open?id=s2 from -"), "\(child.stdout)")
        // The note was saved as it came.
        let saved = try daemon.call("GetSession", ["session": "s2"])
        #expect(saved["session"]?["restoration"]?["json"]?["text"]?.stringValue == "hi there", "\(saved)")
        try daemon.call("Terminate", ["app": "org.example.notes"])
        #expect(child.finish(within: 120) == 0, "\(child.stdout)\n\(child.stderr)")
        try daemon.stop()
    }

    @Test("scene_app.py: an Open stored before it attached arrives in willConnectTo, the next by openURLContexts", .timeLimit(.minutes(10)))
    func pythonOpensURLs() throws {
        let workspace = try Workspace(configuration: SceneClientTests.patientConfiguration)
        let examples = FakeAppDaemon.interfaceDirectory + "/../Examples/python"
        try makeDirectory(workspace.path + "/apps.d")
        try writeTextFile(workspace.path + "/apps.d/com.example.pynotes.conf",
                          try readExistingTextFile(examples + "/com.example.pynotes.conf"))
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let stored = try daemon.call("Open", ["url": "pynotes:first?text=hi"])
        #expect(stored["app"]?.stringValue == "com.example.pynotes" && stored["open"]?.stringValue != nil, "\(stored)")
        let child = try ChildProcess(["/usr/bin/env", "python3", examples + "/scene_app.py", "--socket", socket,
                                      "--app", "com.example.pynotes", "--no-scene"], directory: workspace.path, label: "py-urls")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("willConnectTo s1 new scene opened with pynotes:first?text=hi") },
                "\(child.stdout)\n\(child.stderr)")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("didBecomeActive s1") }, "\(child.stdout)")
        #expect(try daemon.call("Open", ["url": "pynotes:second"])["session"]?.stringValue == "s1")
        #expect(waitUntil(seconds: 120) { child.stdout.contains("openURLContexts s1 pynotes:second") }, "\(child.stdout)")
        #expect(waitUntil(seconds: 120) {
            (try? daemon.call("GetSession", ["session": "s1"]))?["session"]?["restoration"]?["json"]?["note"]?.stringValue == "pynotes:second"
        }, "the note saved")
        try daemon.call("Terminate", ["app": "com.example.pynotes"])
        #expect(child.finish(within: 120) == 0, "\(child.stdout)\n\(child.stderr)")
        try daemon.stop()
    }

    @Test("an app opens another app's URL: it arrives with sourceApplication", .timeLimit(.minutes(10)))
    func appOpensAnother() async throws {
        let workspace = try Self.workspace()
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let target = RunningApp(app: Self.app, socketPath: socket)
        let source = RunningApp(app: "org.example.source", socketPath: socket, requestSceneAtLaunch: false)
        try await eventually("target active") { target.recorder.callbacks.contains("didBecomeActive s1") }
        try await eventually("source launched") { source.recorder.callbacks.contains("didFinishLaunching") }
        let result = try await source.application.open("routed:from-source")
        #expect(result == OpenResult(app: Self.app, session: "s1", pendingOpen: nil))
        try await eventually("delivered") { target.recorder.opened.contains("s1 routed:from-source from org.example.source") }
        // A scheme nobody handles: NoHandler naming it.
        let error = await #expect(throws: VarlinkError.self) { try await source.application.open("nobody:x") }
        #expect(error?.name == "io.scened.Manager.NoHandler" && error?.parameters["scheme"]?.stringValue == "nobody", "\(String(describing: error))")
        try await source.application.detach()
        try await target.application.detach()
        _ = try await source.ending()
        _ = try await target.ending()
        try daemon.stop()
    }
}
