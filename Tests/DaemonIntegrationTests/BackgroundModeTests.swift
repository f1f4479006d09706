import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 36 item 5: UIBackgroundModes with a real process in a real cgroup: an app in a
/// declared activity is never frozen for idling; one it did not declare is refused.
@Suite("Background modes of real processes (R34)", .serialized)
struct BackgroundModeTests {
    @Test("BackgroundModes=audio: BeginBackgroundActivity(audio) keeps the app thawed over several suspend delays; EndBackgroundActivity lets it be suspended; location is BackgroundModeNotDeclared",
          .timeLimit(.minutes(3)))
    func audioActivityKeepsTheAppRunning() throws {
        let workspace = try Workspace(configuration: Wakes.configuration(suspendDelay: "1s"))
        let app = try WakeApp(workspace, app: "com.example.player", extra: "[App]\nBackgroundModes=audio")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try #require(try daemon.call("Connect", ["app": .string(app.app)])["session"]?["id"]?.stringValue)
        let cgroup = try app.cgroup(daemon)
        let pid = try #require(try app.pid(daemon))

        do {
            try app.call("BeginBackgroundActivity", ["mode": "location"])
            Issue.record("location was accepted though only audio is declared")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.App.BackgroundModeNotDeclared", "\(error)")
            #expect(error.parameters["mode"]?.stringValue == "location" && error.parameters["app"]?.stringValue == app.app, "\(error)")
        }
        try app.call("BeginBackgroundActivity", ["mode": "audio"])
        let record = try StartedAppTests.app(daemon, app.app)
        #expect(record["activeModes"]?.arrayValue?.compactMap(\.stringValue) == ["audio"], "\(record)")
        #expect(record["backgroundModes"]?.arrayValue?.compactMap(\.stringValue) == ["audio"], "\(record)")

        // Home, and four suspend delays of sampling: never frozen, never suspended.
        try daemon.call("Background", ["session": .string(session)])
        _ = try app.waitEvents("didEnterBackground")
        var samples = 0
        var frozenSeen = 0
        let end = Deadline(seconds: 4.5)
        while !end.hasPassed {
            samples += 1
            if WakeApp.frozen(cgroup) != false { frozenSeen += 1 }
            sleepMilliseconds(50)
        }
        #expect(frozenSeen == 0, "frozen in \(frozenSeen) of \(samples) samples while playing")
        #expect(try StartedAppTests.app(daemon, app.app)["process"]?.stringValue == "running")
        #expect(app.events("suspended").isEmpty, "\(BackgroundWakeTests.briefs(app))")

        // The activity ends: suspended (after the idle delay at most) and frozen.
        let ended = monotonicSeconds()
        try app.call("EndBackgroundActivity", ["mode": "audio"])
        try WakeApp.waitFrozen(cgroup, true, seconds: 15)
        let after = monotonicSeconds() - ended
        #expect(after < 5, "frozen \(after) s after EndBackgroundActivity")
        #expect(try StartedAppTests.app(daemon, app.app)["activeModes"]?.arrayValue?.isEmpty == true)
        #expect(try app.pid(daemon) == pid)
        try Wakes.assertConformant(daemon, "an audio activity")
        print("audio activity: \(samples) samples over 4.5 s, none frozen; frozen \(Format.fixed(after * 1000, 0)) ms after EndBackgroundActivity")
    }
}
