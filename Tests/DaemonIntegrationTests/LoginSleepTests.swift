import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Microseconds since the epoch, as the daemon's event times and task deadlines are given.
private func wallMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// Sleep as logind announces it (PrepareForSleep from the dbusmock template): the apps are
/// backgrounded, suspended and frozen before scened lets go of its delay inhibitor.
@Suite("scened and logind's sleep (dbusmock on a private bus)", .serialized)
struct LoginSleepTests {
    @Test("PrepareForSleep: background chain (cause sleep), suspended and frozen before the inhibitor goes; resume brings the scene back",
          .timeLimit(.minutes(3)))
    func sleepWithStartedApp() throws {
        let app = "com.example.sleepy"
        let notes = try Binaries.require(Binaries.directory + "/scene-notes")
        let rig = try LoginRig(sessions: [LoginFollowTests.me],
                               apps: [(app, "[Launch]\nExecStart=\(notes) --app \(app) --socket @SOCKET@")])
        let monitor = try EventMonitor(rig.daemon, parameters: ["app": .string(app)], consecutive: false)
        let connected = try rig.daemon.call("Connect", ["app": .string(app)])
        let session = try #require(connected["session"]?["id"]?.stringValue)
        #expect(connected["session"]?["state"]?.stringValue == "foregroundActive")
        let pid = try #require(try rig.app(app)["startedPid"]?.intValue.map(Int32.init))
        let cgroup = StartedAppTests.cgroupDirectory(pid)
        if geteuid() == 0 { #expect(cgroup?.hasSuffix("/app-\(app)") == true, "a cgroup of its own: \(cgroup ?? "none")") }
        func frozen() -> Bool? { cgroup.map { readTextFile($0 + "/cgroup.events").contains("frozen 1") } }
        try rig.waitFor("both delay inhibitors taken") { try rig.mock.inhibitors() == ["shutdown", "sleep"] }
        while try monitor.next(timeout: 0.3) != nil {}

        let start = monotonicSeconds()
        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:true"])
        // Read the inhibitors first, then the freezer: the inhibitor seen gone with the
        // cgroup not yet frozen would be a release before the freeze.
        var frozenAtRelease: Bool?
        var polls = 0
        try rig.waitFor("the sleep inhibitor released", seconds: 10) {
            polls += 1
            guard try !rig.mock.inhibitors().contains("sleep") else { return false }
            frozenAtRelease = frozen()
            return true
        }
        let prepared = monotonicSeconds() - start
        print("sleep preparation (PrepareForSleep(true) to the delay inhibitor gone, one started app): "
              + "\(Format.fixed(prepared * 1000, 0)) ms, \(polls) polls")
        if cgroup != nil { #expect(frozenAtRelease == true, "the cgroup was frozen when the inhibitor went") }
        #expect(prepared < 4.5, "within logind's InhibitDelayMaxSec= (5 s)")
        let record = try rig.app(app)
        #expect(record["process"]?.stringValue == "suspended")
        #expect(record["frozen"]?.boolValue == true)
        #expect(try rig.system()["sleeping"]?.boolValue == true)
        var down: [String] = []
        while let e = try monitor.next(timeout: 0.5) { down.append("\(e.event) \(e.object["cause"]?.stringValue ?? "?")") }
        #expect(down == ["willResignActive sleep", "didEnterBackground sleep", "suspended sleep"], "\(down)")
        let saved = try rig.daemon.call("GetSession", ["session": .string(session)])
        #expect(saved["session"]?["restoration"] != nil, "scene-notes' answer saved: \(saved)")

        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:false"])
        try rig.waitFor("the scene back in the foreground") {
            try rig.daemon.call("GetSession", ["session": .string(session)])["session"]?["state"]?.stringValue == "foregroundActive"
        }
        var up: [String] = []
        while let e = try monitor.next(timeout: 0.5) { up.append("\(e.event) \(e.object["cause"]?.stringValue ?? "?")") }
        #expect(up == ["resumed sleep", "willEnterForeground sleep", "didBecomeActive sleep"], "\(up)")
        #expect(try rig.app(app)["frozen"]?.boolValue == false)
        if cgroup != nil { #expect(frozen() == false, "thawed") }
        try rig.waitFor("the sleep inhibitor taken again") { try rig.mock.inhibitors() == ["shutdown", "sleep"] }
        #expect(try rig.system()["sleeping"]?.boolValue == false)
        try monitor.assertConformant("sleep and resume")
    }

    /// What this proves: scened's task budget is counted from the app's latest stay in the
    /// background as a running process; a sleep suspends the app, so no expiration is sent
    /// while prepared for sleep, and the budget after resume is whole again from the resume.
    /// That the kernel's CLOCK_MONOTONIC stops during a real suspend is not shown here: a
    /// container cannot sleep.
    @Test("a sleep in the middle of a background task's budget: no expiration while asleep, the full budget from the resume",
          .timeLimit(.minutes(2)))
    func sleepInTheMiddleOfABudget() throws {
        let budget: Int64 = 3_000_000
        let rig = try LoginRig(sessions: [LoginFollowTests.me], lifecycle: "SuspendDelaySec=60s\nBackgroundTaskBudgetSec=3s\nExpirationGraceSec=60s")
        let app = try AttachedApp(rig.daemon, app: "com.example.uploader")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()
        try rig.daemon.call("Background", ["session": .string(s)])
        _ = try app.answered(through: "didEnterBackground")
        let task = try app.call("BeginBackgroundTask", ["session": .string(s), "name": "upload"])["task"]?.stringValue ?? "?"
        func expiresAt() throws -> Int64? {
            (try rig.app("com.example.uploader")["tasks"]?.arrayValue ?? []).first { $0["token"]?.stringValue == task }?["expiresAt"]?.intValue
        }
        let first = try #require(try expiresAt())
        #expect(first - wallMicroseconds() > 2_000_000 && first - wallMicroseconds() <= budget, "the budget runs")

        sleepMilliseconds(1_500)
        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:true"])
        try rig.waitFor("suspended for sleep") { try rig.app("com.example.uploader")["process"]?.stringValue == "suspended" }
        // Asleep well past the first deadline.
        let asleep = try app.drain(quiet: 3.0)
        #expect(wallMicroseconds() > first + 1_000_000, "slept past the budget's first end")
        #expect(!asleep.contains { $0.event == "backgroundTaskWillExpire" }, "no expiration while asleep: \(asleep.map(\.brief))")

        let resumedAt = wallMicroseconds()
        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:false"])
        try rig.waitFor("resumed") { try rig.app("com.example.uploader")["process"]?.stringValue == "running" }
        let renewed = try #require(try expiresAt())
        let left = renewed - resumedAt
        #expect(left > budget - 300_000 && left <= budget + 500_000, "the whole budget from the resume: \(left) µs")
        let expiry = try app.events(through: "backgroundTaskWillExpire", timeout: 6)
        let after = Double(wallMicroseconds() - resumedAt) / 1e6
        #expect(after > 2.7 && after < 5, "the expiration \(after) s after the resume")
        print("sleep mid-budget: expiresAt moved \(Format.fixed(Double(renewed - first) / 1e6, 2)) s later; "
              + "backgroundTaskWillExpire \(Format.fixed(after, 2)) s after the resume (budget 3 s)")
        #expect(expiry.last?.object["cause"] != nil)
        try app.call("EndBackgroundTask", ["task": .string(task)])
    }
    @Test("hostile: an app that never answers before sleep holds the sleep up at most the sleep bound, then is hung",
          .timeLimit(.minutes(2)))
    func silentAppBeforeSleep() throws {
        let rig = try LoginRig(sessions: [LoginFollowTests.me])
        let silent = try AttachedApp(rig.daemon, app: "com.example.silent")
        _ = try silent.answered(through: "didFinishLaunching")
        _ = try silent.foregroundScene()
        try rig.waitFor("the sleep inhibitor taken") { try rig.mock.inhibitors().contains("sleep") }
        let start = monotonicSeconds()
        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:true"])
        // Its didEnterBackground is never answered.
        _ = try silent.events(through: "didEnterBackground")
        try rig.waitFor("the sleep inhibitor released", seconds: 10) { try !rig.mock.inhibitors().contains("sleep") }
        let held = monotonicSeconds() - start
        print("sleep with an app that never answers: inhibitor released \(Format.fixed(held, 2)) s after PrepareForSleep (bound 4.5 s)")
        #expect(held > 4 && held < 5.5, "released after \(held) s")
        try rig.daemon.assertServing("while prepared for sleep")
    }

    @Test("hostile: logind gone while the machine is prepared for sleep → the apps come back as after a resume",
          .timeLimit(.minutes(2)))
    func logindGoneWhileAsleep() throws {
        let rig = try LoginRig(sessions: [LoginFollowTests.me])
        let app = try AttachedApp(rig.daemon, app: "com.example.dreamer")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()
        try rig.waitFor("the sleep inhibitor taken") { try rig.mock.inhibitors().contains("sleep") }
        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:true"])
        _ = try app.answered(through: "didEnterBackground")
        try rig.waitFor("suspended for sleep") { try rig.app("com.example.dreamer")["process"]?.stringValue == "suspended" }
        rig.mock.killMock()
        let back = try app.answered(through: "didBecomeActive").map(\.brief)
        #expect(back.suffix(2) == ["willEnterForeground \(s) sleep", "didBecomeActive \(s) sleep"], "\(back)")
        #expect(try rig.app("com.example.dreamer")["process"]?.stringValue == "running")
        #expect(try rig.system()["sleeping"]?.boolValue == false)
    }
}
