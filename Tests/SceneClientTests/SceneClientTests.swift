import Foundation
import SceneClient
import ScenedTestSupport
import Testing
import Varlink

/// SceneClient against the real scened: the delegates' callbacks are the Monitor's events in
/// order, restoration data makes the round trip, and a daemon restart loses and repeats nothing.
@Suite("SceneClient with the real daemon", .serialized)
@MainActor
struct SceneClientTests {
    /// The delegates run on the main actor, which in the whole suite's process the other
    /// suites' tests can keep busy for a minute or more on two cores: the deadlines these
    /// tests do not examine are far away, and their waits (bounds, not timings) long.
    static let patientConfiguration = Workspace.calmConfiguration + "\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=10min\nWillTerminateTimeoutSec=10min\n"

    /// Reads the Monitor's events of `app` up to its `terminated`, and checks that the
    /// delegates saw exactly their callbacks and SceneClient exactly their sequence numbers.
    func checkSameAsMonitor(_ feed: MonitorFeed, _ running: RunningApp, _ context: String) throws {
        let events = try feed.wait("terminated (\(context))") { $0["event"]?.stringValue == "terminated" }
        let expected = expectedCallbacks(for: events)
        #expect(running.recorder.callbacks == expected, """
            \(context): the delegates' callbacks differ from the Monitor's events
            monitor:   \(events.map(describe))
            expected:  \(expected)
            callbacks: \(running.recorder.callbacks)
            """)
        // Every event handled once, in order; terminated is the last (run() ends with it).
        let seqs = events.compactMap { $0["seq"]?.intValue }.map(UInt64.init)
        #expect(running.recorder.seqs == seqs, "\(context): handled \(running.recorder.seqs), the Monitor has \(seqs)")
        #expect(running.recorder.overruns.isEmpty, "\(context): overruns \(running.recorder.overruns)")
    }

    @Test("the delegates receive the Monitor's events as UIKit callbacks, in order", .timeLimit(.minutes(10)))
    func callbacksEqualMonitor() async throws {
        let workspace = try Workspace(configuration: Self.patientConfiguration)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.client"
        let feed = try MonitorFeed(socketPath: socket, app: app)
        defer { feed.stop() }
        // Slow scene handlers: events queue up and must still come one at a time, in order.
        let running = RunningApp(app: app, socketPath: socket, sceneDelay: .milliseconds(5))
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        #expect(running.application.isAttached)

        try await manager(socket, "Deactivate", ["session": "s1"])
        try await manager(socket, "Activate", ["session": "s1"])
        try await manager(socket, "Background", ["session": "s1"])
        try await manager(socket, "MemoryWarning", ["apps": [.string(app)]])
        // The app's own requests: a second scene, to the background, reclaimed, destroyed.
        let second = try await running.application.requestSceneSessionActivation(role: .windowApplication, configuration: "Second")
        #expect(second == "s2")
        try await eventually("s2 active") { running.recorder.callbacks.contains("didBecomeActive s2") }
        try await manager(socket, "Background", ["session": "s2"])
        try await manager(socket, "Disconnect", ["session": "s2"])
        try await running.application.requestSceneSessionDestruction(persistentIdentifier: "s2")
        let task = try await running.application.beginBackgroundTask(withName: "upload")
        try await running.application.endBackgroundTask(task)
        try await running.application.setFootprint(1 << 20)
        try await eventually("didDiscardSceneSessions") { running.recorder.callbacks.contains("didDiscardSceneSessions s2") }

        // willTerminate is answered, then terminated ends run().
        try await manager(socket, "Terminate", ["app": .string(app)])
        #expect(try await running.ending() == .terminated(reason: "requested"))
        try checkSameAsMonitor(feed, running, "one daemon")
        // The didEnterBackground answer carried stateRestorationActivity(for:)'s data.
        let s1 = try await manager(socket, "GetSession", ["session": "s1"])
        #expect(s1["session"]?["restoration"]?["json"]?["counter"]?.intValue == 2, "\(s1)")
        #expect(s1["session"]?["configuration"]?.stringValue == "Main")
        try daemon.stop()
    }

    @Test("stateRestorationActivity's data comes back in willConnectTo after a disconnect", .timeLimit(.minutes(10)))
    func restorationAfterDisconnect() async throws {
        let workspace = try Workspace(configuration: Self.patientConfiguration)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.restore"
        let feed = try MonitorFeed(socketPath: socket, app: app)
        defer { feed.stop() }
        let running = RunningApp(app: app, socketPath: socket)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        #expect(running.recorder.restored["s1"] == nil)
        #expect(running.recorder.reconnects["s1"] == false)

        try await manager(socket, "Background", ["session": "s1"])
        try await eventually("state saved") { running.recorder.callbacks.contains("stateRestorationActivity s1") }
        // scenectl, as an operator (or the reclaim policy) would: the scene goes, the session stays.
        let scenectl = try ChildProcess([try Binaries.require(Binaries.scenectl), "--socket", socket, "disconnect", "s1"],
                                        directory: workspace.path, label: "scenectl-disconnect")
        #expect(scenectl.finish(within: 10) == 0, "scenectl disconnect: \(scenectl.stderr)")
        try await eventually("didDisconnect") { running.recorder.callbacks.contains("didDisconnect s1") }
        #expect(running.application.connectedScenes.isEmpty)

        try await manager(socket, "Activate", ["session": "s1"])
        try await eventually("s1 reconnected") { running.recorder.callbacks.filter { $0 == "didBecomeActive s1" }.count == 2 }
        let saved = RestorationData.json(["counter": 1, "session": "s1"])
        #expect(running.recorder.restored["s1"] == saved)
        #expect(running.recorder.reconnects["s1"] == true)
        #expect(running.application.connectedScenes.map(\.instance) == [2])

        // The same round trip with the app's own SaveState and opaque bytes.
        let bytes = RestorationData.bytes([0, 1, 2, 250, 255])
        try await running.application.saveState(bytes, for: SceneSession(persistentIdentifier: "s1"))
        let stored = try await manager(socket, "GetSession", ["session": "s1"])
        #expect(stored["session"]?["restoration"]?["base64"]?.stringValue == "AAEC+v8=")

        try await running.application.detach()
        #expect(try await running.ending() == .detached)
        // Detach ends the process for scened (terminated, reason exited) and delivers nothing.
        let ended = try feed.wait("terminated") { $0["event"]?.stringValue == "terminated" }
        #expect(ended.last?["reason"]?.stringValue == "exited")
        let lastSeq = ended.dropLast().last?["seq"]?.intValue.map(UInt64.init)
        #expect(running.recorder.seqs.last == lastSeq, "the last event handled is the one before terminated")
        #expect(running.recorder.callbacks.last == "didBecomeActive s1")
        try daemon.stop()
    }

    @Test("a reclaim notice asks stateRestorationActivity and lets the scene go at once, with that state", .timeLimit(.minutes(10)))
    func reclaimNoticeSavesAndReleases() async throws {
        let workspace = try Workspace(configuration: """
            [Lifecycle]
            SuspendDelaySec=60s
            [Reclaim]
            SettleSec=100ms
            SuspendEarly=no
            TerminateSuspendedAtCritical=no
            GraceCriticalSec=10min
            DidEnterBackgroundTimeoutSec=10min
            [Store]
            Durability=normal
            """)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.reclaimed"
        let running = RunningApp(app: app, socketPath: socket)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        try await running.application.setFootprint(100 << 20, for: SceneSession(persistentIdentifier: "s1"))
        try await manager(socket, "Background", ["session": "s1"])
        try await eventually("state saved") { running.recorder.callbacks.contains("stateRestorationActivity s1") }
        let start = ContinuousClock.now
        try await manager(socket, "SetPressure", ["level": "critical"])
        try await eventually("reclaimed") { running.recorder.callbacks.contains("didDisconnect s1") }
        let waited = ContinuousClock.now - start
        #expect(waited < .seconds(540), "released by the answer, not by the 10 min deadline: \(waited)")
        #expect(running.recorder.callbacks.filter { $0 == "stateRestorationActivity s1" }.count == 2,
                "asked again for the notice: \(running.recorder.callbacks)")
        let stored = try await manager(socket, "GetSession", ["session": "s1"])
        #expect(stored["session"]?["condition"]?.stringValue == "archived")
        #expect(stored["session"]?["restoration"]?["json"]?["session"]?.stringValue == "s1")
        try await manager(socket, "ClearPressure")
        try await running.application.detach()
        _ = try await running.ending()
        try daemon.stop()
    }

    @Test("after scened restarts (SIGTERM, then kill -9) the app reattaches: nothing lost, nothing repeated",
          .timeLimit(.minutes(10)))
    func reattachAfterRestart() async throws {
        let workspace = try Workspace(configuration: Self.patientConfiguration)
        var daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.reattach"
        let running = RunningApp(app: app, socketPath: socket)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }

        // 1. A clean stop (the app answers its didEnterBackground) and a start on the same
        // state directory.
        try await stopAnswering(daemon)
        daemon = try DaemonProcess(workspace)
        try await eventually("the first reattach", seconds: 300) { running.application.reattachCount == 1 && running.application.isAttached }
        try await manager(socket, "Background", ["session": "s1"])
        try await manager(socket, "Activate", ["session": "s1"])
        try await eventually("active again") { running.recorder.callbacks.filter { $0 == "didBecomeActive s1" }.count == 2 }

        // 2. kill -9 right after a commit: the events may or may not have reached the app, and
        // didEnterBackground's answer may go to the dead daemon.
        try await manager(socket, "Background", ["session": "s1"])
        daemon.crash()
        _ = daemon.child.wait(seconds: 5)
        daemon = try DaemonProcess(workspace)
        try await eventually("the second reattach", seconds: 300) { running.application.reattachCount == 2 && running.application.isAttached }
        try await eventually("the backgrounding handled") { running.recorder.callbacks.filter { $0 == "stateRestorationActivity s1" }.count == 2 }
        try await manager(socket, "Activate", ["session": "s1"])
        try await manager(socket, "Background", ["session": "s1"])
        try await eventually("third background") { running.recorder.callbacks.filter { $0 == "stateRestorationActivity s1" }.count == 3 }

        try await manager(socket, "Terminate", ["app": .string(app)])
        #expect(try await running.ending() == .terminated(reason: "requested"))
        // The whole history of the app, across the three daemons.
        let feed = try MonitorFeed(socketPath: socket, app: app, since: 0)
        defer { feed.stop() }
        try checkSameAsMonitor(feed, running, "across restarts")
        // Every answer reached a daemon: the last one's data is stored.
        let s1 = try await manager(socket, "GetSession", ["session": "s1"])
        #expect(s1["session"]?["restoration"]?["json"]?["counter"]?.intValue == 3, "\(s1)")
        try daemon.stop()
    }

    @Test("scene-notes restores its saved state after kill -9 and a new start", .timeLimit(.minutes(10)))
    func exampleRestoresAfterKill() throws {
        let workspace = try Workspace(configuration: Self.patientConfiguration)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let notes = try Binaries.require(Binaries.directory + "/scene-notes")
        let app = "org.example.notes"
        let first = try ChildProcess([notes, "--app", app, "--socket", socket], directory: workspace.path, label: "notes-1")
        func state() -> String? {
            let reply = try? VarlinkClient(path: socket, timeout: .seconds(5)).call("io.scened.Manager.ListSessions", ["app": .string(app)])
            return reply?["sessions"]?[0]?["state"]?.stringValue
        }
        #expect(waitUntil(seconds: 120) { state() == "foregroundActive" }, "first start: \(first.stdout)")
        try daemon.call("Background", ["session": "s1"])
        #expect(waitUntil(seconds: 120) { first.stdout.contains("saving counter=1") }, "\(first.stdout)")
        // The app prints before its answer is sent: kill it only once scened has the state.
        #expect(waitUntil(seconds: 120) {
            let s = try? daemon.call("GetSession", ["session": "s1"])
            return s?["session"]?["restoration"]?["json"] != nil || s?["session"]?["restoration"]?["base64"] != nil
        }, "the answer with the state did not reach scened")
        first.killNow()
        #expect(waitUntil(seconds: 120) {
            (try? daemon.call("GetApp", ["app": .string(app)]))?["app"]?["process"]?.stringValue == "notRunning"
        })
        let second = try ChildProcess([notes, "--app", app, "--socket", socket], directory: workspace.path, label: "notes-2")
        #expect(waitUntil(seconds: 120) { second.stdout.contains("restored counter=1") }, "second start: \(second.stdout)")
        #expect(waitUntil(seconds: 120) { second.stdout.contains("counter=2") }, "\(second.stdout)")
        try daemon.call("Terminate", ["app": .string(app)])
        #expect(second.finish(within: 120) == 0, "\(second.stdout)\n\(second.stderr)")
        try daemon.stop()
    }

    @Test("scene-notes saves its count on the way down: in its willTerminate answer, and on a SIGTERM of its own", .timeLimit(.minutes(10)))
    func exampleSavesOnTheWayDown() throws {
        let workspace = try Workspace(configuration: Self.patientConfiguration)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let notes = try Binaries.require(Binaries.directory + "/scene-notes")
        let app = "org.example.notes"
        func saved() -> Int64? {
            let s = try? daemon.call("GetSession", ["session": "s1"])
            return s?["session"]?["restoration"]?["json"]?["counter"]?.intValue
        }
        let first = try ChildProcess([notes, "--app", app, "--socket", socket], directory: workspace.path, label: "notes-down-1")
        #expect(waitUntil(seconds: 120) { first.stdout.contains("counter=1") }, "first start: \(first.stdout)")
        // Resigning and coming back counts again; nothing is saved, the scene never went home.
        try daemon.call("Deactivate", ["session": "s1"])
        try daemon.call("Activate", ["session": "s1"])
        #expect(waitUntil(seconds: 120) { first.stdout.contains("counter=2") }, "\(first.stdout)")
        #expect(first.stdout.contains("sceneWillResignActive s1 cause=request"), "the cause is logged: \(first.stdout)")
        #expect(saved() == nil)

        // Terminated in the foreground: the willTerminate answer carries the count.
        try daemon.call("Terminate", ["app": .string(app)])
        #expect(first.finish(within: 120) == 0, "\(first.stdout)\n\(first.stderr)")
        #expect(first.stdout.contains("applicationWillTerminate cause="), "\(first.stdout)")
        #expect(saved() == 2, "the count it had in the foreground is saved: \(first.stdout)")

        // A SIGTERM of its own (not from scened): it saves, then detaches.
        let second = try ChildProcess([notes, "--app", app, "--socket", socket], directory: workspace.path, label: "notes-down-2")
        #expect(waitUntil(seconds: 120) { second.stdout.contains("restored counter=2") }, "\(second.stdout)")
        #expect(waitUntil(seconds: 120) { second.stdout.contains("counter=3") }, "\(second.stdout)")
        second.signal(SIGTERM)
        #expect(second.finish(within: 120) == 0, "\(second.stdout)\n\(second.stderr)")
        #expect(saved() == 3, "saved before the detach: \(second.stdout)")
        try daemon.stop()
    }
}

/// Deadlines: a prompt answer is never late; a handler that returns after didEnterBackground's
/// deadline is told it overran, and scened terminates the app as hung.
@Suite("SceneClient deadlines", .serialized)
@MainActor
struct SceneClientDeadlineTests {
    static let shortDeadline = Workspace.calmConfiguration + "\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n"

    @Test("a handler that overruns didEnterBackground is reported and the app terminated as hung", .timeLimit(.minutes(10)))
    func overrunIsReported() async throws {
        let workspace = try Workspace(configuration: Self.shortDeadline)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.slow"
        // Every scene callback takes 400 ms: the didEnterBackground answer comes too late.
        let running = RunningApp(app: app, socketPath: socket, sceneDelay: .milliseconds(400))
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        #expect(running.recorder.overruns.isEmpty, "foreground callbacks are not bounded")
        try await manager(socket, "Background", ["session": "s1"])
        #expect(try await running.ending() == .terminated(reason: "hung"))
        #expect(running.recorder.overruns.map(\.event) == ["didEnterBackground"], "\(running.recorder.overruns)")
        #expect(running.recorder.overruns.first.map { $0.overrun > .zero } == true)
        let a = try await manager(socket, "GetApp", ["app": .string(app)])
        #expect(a["app"]?["process"]?.stringValue == "notRunning")
        try daemon.stop()
    }
}
