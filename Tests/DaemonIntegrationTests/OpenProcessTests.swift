import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Issue 37 item 5 with real app processes scened starts itself (the background-work tests'
/// app, WakeApp): a URL to a suspended (frozen) app, to one not running, to one that crashed,
/// and across a kill -9 of scened between Open's answer and the delivery.
@Suite("Open: URLs to real processes (issue 37)", .serialized)
struct OpenProcessTests {
    static let maps = "com.example.maps"

    static func mapsApp(_ workspace: Workspace, flags: [String] = []) throws -> WakeApp {
        try WakeApp(workspace, app: maps, flags: flags, extra: Routes.appSection(schemes: ["maps"]))
    }

    /// "event cause" of the app's events in scened's log from the last `name` on.
    static func logged(_ daemon: DaemonProcess, from name: String) throws -> [String] {
        try BackgroundWakeTests.logged(daemon, maps, from: name, last: true)
    }

    /// How many events in scened's whole log carried `url` (willConnectTo or openURLContexts).
    static func deliveries(_ daemon: DaemonProcess, _ url: String) throws -> Int {
        try StopSupport.events(daemon, since: 0).filter { Routes.urls($0).contains(url) }.count
    }

    @Test("a suspended, frozen app: thawed, resumed (cause request), brought forward around openURLContexts; without activate it gets the URL in the background and is frozen again",
          .timeLimit(.minutes(3)))
    func suspendedAppIsThawed() throws {
        let workspace = try Workspace(configuration: Routes.configuration())
        let app = try Self.mapsApp(workspace)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        let pid = try #require(try app.pid(daemon))
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)

        let reply = try Routes.open(daemon, url: "maps:?q=Alexanderplatz")
        #expect(reply["session"]?.stringValue == session && reply["open"] == nil, "\(reply)")
        #expect(Routes.briefs(reply) == ["resumed -", "willEnterForeground \(session)", "openURLContexts \(session)",
                                         "didBecomeActive \(session)"], "\(Routes.briefs(reply))")
        let got = try #require(try app.waitEvents("openURLContexts").last)
        #expect(Routes.urls(got) == ["maps:?q=Alexanderplatz"] && got.cause == "request", "\(got.object)")
        #expect(WakeApp.frozen(cgroup) == false, "thawed to receive it")
        #expect(try Self.logged(daemon, from: "resumed") == ["resumed request", "willEnterForeground request",
                                                              "openURLContexts request", "didBecomeActive request"])

        // Home again, frozen; an Open without activate: the URL in the background, then frozen.
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)
        let quiet = try Routes.open(daemon, url: "maps:?q=Tegel", activate: false)
        #expect(Routes.briefs(quiet) == ["resumed -", "openURLContexts \(session)"], "\(Routes.briefs(quiet))")
        let second = try app.waitEvents("openURLContexts", count: 2)
        #expect(second.last.map(Routes.urls) == ["maps:?q=Tegel"] && second.last?.state == "background")
        try WakeApp.waitFrozen(cgroup, true, seconds: 10)
        #expect(try app.pid(daemon) == pid, "the same process throughout")
        try Wakes.assertConformant(daemon, "an Open to a frozen app")
    }

    @Test("a not-running app with ExecStart=: the Open is stored (open o…), the app started: didFinishLaunching, then a new scene whose willConnectTo has the URL; a second Open meanwhile arrives after it, in order",
          .timeLimit(.minutes(3)))
    func notRunningAppIsStarted() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s"))
        let app = try Self.mapsApp(workspace)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let first = try Routes.open(daemon, url: "maps:first")
        let second = try Routes.open(daemon, url: "maps:second")
        #expect(first["app"]?.stringValue == Self.maps && first["open"]?.stringValue?.hasPrefix("o") == true
                && first["session"] == nil, "stored for the launch: \(first)")
        try StopSupport.waitFor("both URLs delivered", seconds: 30) { Routes.delivered(app).count >= 2 }
        #expect(Routes.delivered(app) == ["maps:first", "maps:second"], "in order, once each: \(Routes.delivered(app))")
        let story = app.events.map(\.event)
        let launched = try #require(story.firstIndex(of: "didFinishLaunching"), "\(story)")
        let connected = try #require(story.firstIndex(of: "willConnectTo"), "\(story)")
        #expect(launched < connected && story[launched + 1..<connected].allSatisfy { $0 == "configurationForConnecting" },
                "didFinishLaunching, then willConnectTo: \(story)")
        let connect = try #require(app.events("willConnectTo").first)
        #expect(Routes.urls(connect) == ["maps:first"], "the first URL in willConnectTo: \(connect.object)")
        try StopSupport.waitFor("foregroundActive, as activate defaults to true") {
            app.events("didBecomeActive").count >= 1
        }
        #expect(try Routes.pending(daemon, Self.maps) == 0, "nothing left stored")
        #expect(second["open"] != nil || second["session"] != nil, "\(second)")
        try Wakes.assertConformant(daemon, "an Open that launched its app")
    }

    @Test("an app killed -9: the next Open starts it again and the new process gets the URL, once",
          .timeLimit(.minutes(3)))
    func crashedAppIsStartedAgain() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s"))
        let app = try Self.mapsApp(workspace)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        _ = try Wakes.foreground(daemon, app)
        let old = try #require(try app.pid(daemon))
        kill(old, SIGKILL)
        try StopSupport.waitFor("the crash seen") { try StartedAppTests.app(daemon, Self.maps)["process"]?.stringValue == "notRunning" }

        let reply = try Routes.open(daemon, url: "maps:after-the-crash")
        #expect(reply["app"]?.stringValue == Self.maps && (reply["open"] != nil || reply["session"] != nil), "\(reply)")
        try StopSupport.waitFor("the URL delivered", seconds: 30) { Routes.delivered(app).contains("maps:after-the-crash") }
        let new = try #require(try app.pid(daemon))
        #expect(new != old, "a new process")
        let records = app.records.filter { ($0["event"]?["urlContexts"]?.arrayValue ?? []).contains { $0["url"]?.stringValue == "maps:after-the-crash" } }
        #expect(records.count == 1 && records.first?["pid"]?.intValue == Int64(new), "once, to the new process: \(records)")
        sleepMilliseconds(500)
        #expect(try Self.deliveries(daemon, "maps:after-the-crash") == 1)
        #expect(try Routes.pending(daemon, Self.maps) == 0)
    }

    @Test("kill -9 of scened between Open's answer and the delivery (an app that attaches by itself): after the restart the app gets the URL exactly once, and not again after a second kill",
          .timeLimit(.minutes(3)))
    func killedDaemonSelfAttachingApp() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s"))
        let notes = OpenSceneTests.notes
        try Routes.appFile(workspace, notes, schemes: ["notes"])
        var daemon = try DaemonProcess(workspace)
        let reply = try Routes.open(daemon, url: "notes:kept")
        let id = try #require(reply["open"]?.stringValue, "stored: \(reply)")
        #expect(try Routes.pending(daemon, notes) == 1)
        daemon.crash()

        daemon = try DaemonProcess(workspace)
        #expect(try Routes.pending(daemon, notes) == 1, "\(id) survived the kill")
        let app = try AttachedApp(daemon, app: notes)
        let story = try app.events(through: "willConnectTo")
        #expect(Routes.urls(try #require(story.last)) == ["notes:kept"], "\(story)")
        #expect(story.first?.event == "didFinishLaunching", "\(story)")
        #expect(try Routes.pending(daemon, notes) == 0)
        daemon.crash()

        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        #expect(try Routes.pending(daemon, notes) == 0, "delivered and removed in one commit")
        let again = try AttachedApp(daemon, app: notes)
        let later = try again.drain(quiet: 1)
        #expect(!later.contains { Routes.urls($0).contains("notes:kept") }, "not delivered twice: \(later)")
        #expect(try Self.deliveries(daemon, "notes:kept") == 1)
    }

    @Test("kill -9 of scened between Open's answer and the delivery (an ExecStart= app slow to start): the restarted scened starts it and it gets the URL exactly once",
          .timeLimit(.minutes(3)))
    func killedDaemonStartedApp() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s"))
        let app = try WakeApp(directory: workspace.path, app: Self.maps)
        // Two seconds before the app attaches: the kill falls inside the window for sure.
        try StartedAppTests.appFile(workspace, Self.maps, "[Launch]\nExecStart=/bin/sh -c \"sleep 2; exec \(app.execStart)\"\n"
                                    + Routes.appSection(schemes: ["maps"]))
        var daemon = try DaemonProcess(workspace)
        let reply = try Routes.open(daemon, url: "maps:survives")
        #expect(reply["open"] != nil, "stored: \(reply)")
        daemon.crash()
        #expect(Routes.delivered(app).isEmpty, "killed before the delivery")

        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        try StopSupport.waitFor("the URL delivered after the restart", seconds: 40) { !Routes.delivered(app).isEmpty }
        sleepMilliseconds(1_500)
        #expect(Routes.delivered(app) == ["maps:survives"], "exactly once: \(Routes.delivered(app))")
        #expect(try Self.deliveries(daemon, "maps:survives") == 1)
        #expect(try Routes.pending(daemon, Self.maps) == 0)
    }
}
