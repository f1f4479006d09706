import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// A stop of scened (SIGTERM: `systemctl stop`, a restart, a shutdown) with real processes,
/// rule R32: foreground scenes resign and enter the background (answers awaited, their data
/// saved), the apps scened started get willTerminate and end with reason shutdown, suspended
/// apps get nothing, apps that attached on their own keep their process. Bounded by
/// StopTimeoutSec=; a silent app costs at most its deadline.
@Suite("A stop of scened saves the scenes' state", .serialized)
struct GracefulStopTests {
    static func configuration(_ extra: String = "", suspendDelay: String = "300ms") -> String {
        """
        [Lifecycle]
        SuspendDelaySec=\(suspendDelay)
        StopTimeoutSec=10s
        \(extra)
        [System]
        FollowLogin=no
        [Store]
        Durability=normal
        """
    }

    static func notesApp(_ workspace: Workspace, _ app: String) throws {
        try StartedAppTests.appFile(workspace, app, "[Launch]\nExecStart=\(try StartedAppTests.notes(workspace, app))")
    }

    /// Deactivates and activates the session `times` times; waits until the app has counted.
    static func moveCounter(_ daemon: DaemonProcess, _ session: String, to count: Int) throws {
        for _ in 1..<count {
            try daemon.call("Deactivate", ["session": .string(session)])
            try daemon.call("Activate", ["session": .string(session)])
        }
        try StopSupport.waitFor("scene-notes counted \(count) activations") { daemon.stderr.contains("counter=\(count)") }
    }

    @Test("kill -TERM with scene-notes in the foreground: resign, background, willTerminate, terminated (shutdown); the count comes back after a new start",
          .timeLimit(.minutes(3)))
    func foregroundStartedApp() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let app = "com.example.stopnotes"
        try Self.notesApp(workspace, app)
        var daemon = try DaemonProcess(workspace)
        let session = try #require(try daemon.call("Connect", ["app": .string(app)])["session"]?["id"]?.stringValue)
        try Self.moveCounter(daemon, session, to: 4)
        let pid = try #require(try StartedAppTests.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        let since = try StopSupport.nextSeq(daemon)

        let elapsed = try StopSupport.timedStop(daemon, bound: 10)
        print("SIGTERM to exit with one foreground started app: \(Int(elapsed * 1000)) ms (StopTimeoutSec=10s)")
        #expect(elapsed < 5, "the stop took \(elapsed) s, well under StopTimeoutSec=10s")
        #expect(StopSupport.gone(pid), "the started app ended with scened")
        #expect(daemon.notify?.wait(for: "EXTEND_TIMEOUT_USEC=", seconds: 1) != nil, "the stop told the manager its bound")
        let log = daemon.stderr
        #expect(log.contains("saving counter=4"), "the app saved its count at didEnterBackground")
        #expect(log.contains("applicationWillTerminate"), "the app was told willTerminate")
        #expect(log.contains("App \(app) terminated (shutdown)"), "the journal entry says shutdown:\n\(log.suffix(2000))")
        #expect(!log.contains("(exited)"), "never 'exited'")

        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let events = try StopSupport.events(daemon, since: since).filter { $0.app == app }
        print("events of the stop: \(events.map { "\($0.event)/\($0.object["cause"]?.stringValue ?? "-")" })")
        #expect(events.map(\.event) == ["willResignActive", "didEnterBackground", "willTerminate", "terminated"])
        #expect(events.prefix(2).allSatisfy { $0.object["cause"]?.stringValue == "shutdown" }, "\(events)")
        #expect(events.last?.object["reason"]?.stringValue == "shutdown")
        #expect(!events.contains { $0.object["reason"]?.stringValue == "exited" })
        let saved = try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"]
        #expect(saved?["json"]?["counter"]?.intValue == 4, "the answer's data was saved: \(String(describing: saved))")

        // Activating the session starts the app again, restored with the count it had.
        _ = try daemon.call("Activate", ["session": .string(session)])
        try StopSupport.waitFor("the app restored its count") { daemon.stderr.contains("restored counter=4") }
    }

    @Test("a suspended started app gets nothing at the stop (R21) and is recorded terminated (shutdown)", .timeLimit(.minutes(3)))
    func suspendedStartedApp() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let app = "com.example.stopsuspended"
        try Self.notesApp(workspace, app)
        var daemon = try DaemonProcess(workspace)
        let session = try #require(try daemon.call("Connect", ["app": .string(app)])["session"]?["id"]?.stringValue)
        try daemon.call("Background", ["session": .string(session)])
        try StopSupport.waitFor("suspended") { try StartedAppTests.app(daemon, app)["process"]?.stringValue == "suspended" }
        let pid = try #require(try StartedAppTests.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        let linesBefore = daemon.stderr.split(separator: "\n").count
        let since = try StopSupport.nextSeq(daemon)

        let elapsed = try StopSupport.timedStop(daemon, bound: 10)
        print("SIGTERM to exit with one suspended started app: \(Int(elapsed * 1000)) ms")
        #expect(StopSupport.gone(pid))
        let after = daemon.stderr.split(separator: "\n").dropFirst(linesBefore)
        #expect(!after.contains { $0.contains("applicationWillTerminate") || $0.contains("sceneWillResignActive") },
                "a suspended app runs no code: \(after)")

        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let events = try StopSupport.events(daemon, since: since).filter { $0.app == app }
        #expect(events.map(\.event) == ["terminated"], "\(events)")
        #expect(events.first?.object["reason"]?.stringValue == "shutdown")
    }

    @Test("an app that attached on its own keeps its process through the stop and reattaches after the restart",
          .timeLimit(.minutes(3)))
    func selfAttachedAppSurvives() throws {
        // Not suspended after the restart while the test looks at it.
        let workspace = try Workspace(configuration: Self.configuration(suspendDelay: "60s"))
        let app = "com.example.selfattached"
        var daemon = try DaemonProcess(workspace)
        var attached = try AttachedApp(daemon, app: app)
        _ = try attached.events(through: "didFinishLaunching")
        let session = try #require(try attached.call("RequestSceneSessionActivation")["session"]?.stringValue)
        var last = try attached.events(through: "didBecomeActive").last!.seq

        var seen: [ObservedEvent] = []
        let elapsed = try StopSupport.timedStop(daemon, bound: 10) {
            // The app answers its didEnterBackground with its state, as a UIKit app saves.
            seen = try attached.events(through: "didEnterBackground")
            try attached.call("Acknowledge", ["seq": .int(Int64(seen.last!.seq)), "restoration": ["json": ["kept": 42]]])
        }
        print("SIGTERM to exit with one self-attached app answering: \(Int(elapsed * 1000)) ms")
        #expect(seen.map(\.event) == ["willResignActive", "didEnterBackground"])
        #expect(seen.allSatisfy { $0.object["cause"]?.stringValue == "shutdown" }, "\(seen)")
        last = seen.last!.seq
        // Whatever else the stream carries, it is no willTerminate or termination.
        while let reply = try attached.nextReply(timeout: 0.5) {
            #expect(reply.parametersObject["event"]?["event"]?.stringValue != "willTerminate", "\(reply)")
            #expect(reply.errorName != "io.scened.App.Terminated", "\(reply)")
        }

        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        attached = try AttachedApp(daemon, app: app, since: last + 1)
        let record = try StartedAppTests.app(daemon, app)
        #expect(record["process"]?.stringValue == "running", "reattached as the same process: \(record)")
        #expect(record["attachedPid"]?.intValue == Int64(getpid()))
        let logged = try StopSupport.events(daemon, since: 1).filter { $0.app == app }
        #expect(!logged.contains { $0.event == "terminated" || $0.event == "willTerminate" }, "\(logged.map(\.event))")
        let state = try daemon.call("GetSession", ["session": .string(session)])["session"]
        #expect(state?["state"]?.stringValue == "background")
        #expect(state?["restoration"]?["json"]?["kept"]?.intValue == 42, "the answer's data was saved")
        // It is served as usual: back to the foreground.
        _ = try attached.call("RequestSceneSessionActivation", ["session": .string(session)])
        #expect(try attached.events(through: "didBecomeActive").map(\.event) == ["willEnterForeground", "didBecomeActive"])
    }

    @Test("Terminate of a foreground started app runs the background chain first (R33); the saved count comes back",
          .timeLimit(.minutes(3)))
    func terminateRunsTheChain() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let app = "com.example.terminated"
        try Self.notesApp(workspace, app)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try #require(try daemon.call("Connect", ["app": .string(app)])["session"]?["id"]?.stringValue)
        try Self.moveCounter(daemon, session, to: 3)
        let pid = try #require(try StartedAppTests.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        let since = try StopSupport.nextSeq(daemon)
        try daemon.call("Terminate", ["app": .string(app)])
        try StopSupport.waitFor("the process gone") { StopSupport.gone(pid) }
        try StopSupport.waitFor("terminated") { try StartedAppTests.app(daemon, app)["process"]?.stringValue == "notRunning" }
        let events = try StopSupport.events(daemon, since: since).filter { $0.app == app }
        #expect(events.map(\.event) == ["willResignActive", "didEnterBackground", "willTerminate", "terminated"], "\(events)")
        #expect(events.last?.object["reason"]?.stringValue == "requested")
        #expect(daemon.stderr.contains("saving counter=3"))
        let saved = try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"]
        #expect(saved?["json"]?["counter"]?.intValue == 3, "\(String(describing: saved))")
        _ = try daemon.call("Activate", ["session": .string(session)])
        try StopSupport.waitFor("restored") { daemon.stderr.contains("restored counter=3") }
    }
}

/// The stop against apps that do not answer: each costs at most its deadline, the whole stop
/// at most StopTimeoutSec=, and a second SIGTERM ends the wait.
@Suite("A stop of scened with apps that do not answer", .serialized)
struct HostileStopTests {
    @Test("an attached app that never answers didEnterBackground costs at most its deadline (1 s)", .timeLimit(.minutes(3)))
    func silentAttachedApp() throws {
        let workspace = try Workspace(configuration: GracefulStopTests.configuration("DidEnterBackgroundTimeoutSec=1s"))
        let daemon = try DaemonProcess(workspace)
        let attached = try AttachedApp(daemon, app: "com.example.mute")
        _ = try attached.events(through: "didFinishLaunching")
        _ = try attached.call("RequestSceneSessionActivation")
        _ = try attached.events(through: "didBecomeActive")
        let elapsed = try StopSupport.timedStop(daemon, bound: 8)
        print("SIGTERM to exit, an attached app silent at didEnterBackground (deadline 1 s): \(Int(elapsed * 1000)) ms")
        #expect(elapsed >= 0.8 && elapsed < 3, "the stop waited \(elapsed) s for a 1 s deadline")
    }

    @Test("a started app that ignores SIGTERM and never answers willTerminate: the stop ends at StopTimeoutSec=3s and kills it",
          .timeLimit(.minutes(3)))
    func silentStartedApp() throws {
        let workspace = try Workspace(configuration: GracefulStopTests.configuration("StopTimeoutSec=3s\nWillTerminateTimeoutSec=60s"))
        let app = "com.example.deaf"
        let script = workspace.directory.file("deaf.py")
        try writeTextFile(script, StopSupport.silentApp)
        try StartedAppTests.appFile(workspace, app, "[Launch]\nExecStart=/usr/bin/python3 \(script)\nTimeoutStopSec=60s")
        let daemon = try DaemonProcess(workspace)
        // Launch answers InvalidTransition once the started process attached (it launched the
        // app itself): what matters here is that the process runs and is attached.
        _ = try? daemon.call("Launch", ["app": .string(app)])
        try StopSupport.waitFor("attached") { try StartedAppTests.app(daemon, app)["attachedPid"] != nil }
        let pid = try #require(try StartedAppTests.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        let elapsed = try StopSupport.timedStop(daemon, bound: 10)
        print("SIGTERM to exit, a started app deaf to willTerminate and SIGTERM (StopTimeoutSec=3s): \(Int(elapsed * 1000)) ms")
        #expect(elapsed >= 2.5 && elapsed < 5, "bounded by StopTimeoutSec=3s: \(elapsed) s")
        try StopSupport.waitFor("the deaf app killed", seconds: 5) { StopSupport.gone(pid) }
    }

    @Test("50 attached apps with a foreground scene, half of them silent: the stop ends after one deadline", .timeLimit(.minutes(3)))
    func halfOfFiftySilent() throws {
        let workspace = try Workspace(configuration: GracefulStopTests.configuration("DidEnterBackgroundTimeoutSec=1s"))
        let daemon = try DaemonProcess(workspace)
        let apps = (0..<50).map { "com.example.fleet\($0)" }
        let fleet = try AppFleet(daemon, apps: apps)
        try fleet.attachAll()
        try fleet.pump(until: { fleet.attached.allSatisfy { $0 != nil } }, seconds: 30, "attached")
        for i in apps.indices {
            try fleet.send("io.scened.App.RequestSceneSessionActivation", ["app": .string(apps[i])], for: .activation(i))
        }
        try fleet.pump(until: { fleet.received.allSatisfy { $0.contains { $0["event"]?.stringValue == "didBecomeActive" } } },
                       seconds: 30, "all active")
        // Even apps answer their didEnterBackground, odd ones never do.
        fleet.onEvent = { i, event in
            guard i % 2 == 0, event["event"]?.stringValue == "didEnterBackground", let seq = event["seq"]?.intValue else { return }
            try fleet.send("io.scened.App.Acknowledge", ["app": .string(apps[i]), "seq": .int(seq)], for: .acknowledge(i, seq: seq))
        }
        let elapsed = try StopSupport.timedStop(daemon, bound: 10) {
            let deadline = Deadline(seconds: 10)
            // The connections close as scened exits: the fleet's complaints about that are expected.
            while daemon.child.isRunning && !deadline.hasPassed { try fleet.pump(milliseconds: 20) }
        }
        let backgrounded = fleet.received.filter { $0.contains { $0["event"]?.stringValue == "didEnterBackground" } }.count
        print("SIGTERM to exit, 50 attached apps, 25 silent (deadline 1 s): \(Int(elapsed * 1000)) ms, \(fleet.acknowledged) answers")
        #expect(backgrounded == 50, "every app was sent to the background")
        #expect(elapsed < 4, "bounded by one deadline: \(elapsed) s")
    }

    @Test("a second SIGTERM during the chain exits at once", .timeLimit(.minutes(3)))
    func secondSignal() throws {
        let workspace = try Workspace(configuration: GracefulStopTests.configuration("DidEnterBackgroundTimeoutSec=30s\nStopTimeoutSec=60s"))
        let daemon = try DaemonProcess(workspace)
        let attached = try AttachedApp(daemon, app: "com.example.slow")
        _ = try attached.events(through: "didFinishLaunching")
        _ = try attached.call("RequestSceneSessionActivation")
        _ = try attached.events(through: "didBecomeActive")
        daemon.child.signal(SIGTERM)
        _ = try attached.events(through: "didEnterBackground")
        sleepMilliseconds(300)
        #expect(daemon.child.isRunning, "the first SIGTERM waits for the answer")
        let start = monotonicSeconds()
        daemon.child.signal(SIGTERM)
        #expect(daemon.child.wait(seconds: 5), "exited after the second SIGTERM")
        let elapsed = monotonicSeconds() - start
        print("second SIGTERM to exit: \(Int(elapsed * 1000)) ms")
        #expect(elapsed < 1.5)
        #expect(daemon.child.exitStatus == 0, "\(daemon.child.outcome)")
    }
}
