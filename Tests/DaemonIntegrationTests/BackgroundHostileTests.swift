import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 36 item 5, the hostile side: no wake while the machine sleeps, a flood of scheduling
/// from one client, an app that goes away in the middle of a wake, answers for work that does
/// not exist.
@Suite("Background work, hostile (R34)", .serialized)
struct BackgroundHostileTests {
    @Test("a task falling due while the machine sleeps (dbusmock's PrepareForSleep) runs only after the resume",
          .timeLimit(.minutes(3)))
    func noWakeDuringSleep() throws {
        let scratch = TemporaryDirectory(prefix: "scened-wakes")
        let app = try WakeApp(directory: scratch.path, app: "com.example.nightowl")
        let rig = try LoginRig(sessions: [LoginFollowTests.me], apps: [(app.app, app.appFile())])
        try Wakes.launch(rig.daemon, app)
        let cgroup = try app.cgroup(rig.daemon)
        let due = Wakes.wallMicroseconds() + 2_000_000
        try app.call("ScheduleBackgroundTask", ["identifier": "digest", "kind": "refresh", "earliestBegin": .int(due)])
        try rig.waitFor("both delay inhibitors taken") { try rig.mock.inhibitors() == ["shutdown", "sleep"] }

        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:true"])
        try rig.waitFor("suspended for sleep") { try rig.app(app.app)["process"]?.stringValue == "suspended" }
        try WakeApp.waitFrozen(cgroup, true)
        // Asleep until well past the task's time: nothing runs, it waits.
        while Wakes.wallMicroseconds() < due + 2_500_000 {
            #expect(WakeApp.frozen(cgroup) == true, "frozen while asleep")
            sleepMilliseconds(100)
        }
        #expect(app.events("performBackgroundTask").isEmpty, "no wake while asleep: \(BackgroundWakeTests.briefs(app))")
        let waiting = try rig.daemon.call("ListBackgroundWork", ["app": .string(app.app)])
        #expect(waiting["tasks"]?.arrayValue?.count == 1 && waiting["wakes"]?.arrayValue?.isEmpty == true, "\(waiting)")
        #expect(try rig.daemon.call("GetStatus")["status"]?["background"]?["wakingApps"]?.intValue == 0)

        let resumedAt = Wakes.wallMicroseconds()
        try rig.mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:false"])
        let handed = try #require(try app.waitEvents("performBackgroundTask", seconds: 10).first)
        #expect(handed.time >= resumedAt, "after the resume")
        #expect(handed.object["identifier"]?.stringValue == "digest")
        let delay = Double(handed.time - resumedAt) / 1e6
        #expect(delay < 3, "handed over \(delay) s after the resume")
        try StopSupport.waitFor("completed") {
            try rig.daemon.call("ListBackgroundWork", ["app": .string(app.app)])["wakes"]?.arrayValue?.isEmpty == true
        }
        try Wakes.assertConformant(rig.daemon, "a task due during sleep")
        print("sleep: the task due while asleep ran \(Format.fixed(delay * 1000, 0)) ms after the resume")
    }

    @Test("memory pressure: a processing task under way is cut short at warning; another waits for normal pressure while a refresh task still runs",
          .timeLimit(.minutes(3)))
    func processingWaitsForNormalPressure() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.indexer", flags: ["hold=index"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        let now = Wakes.wallMicroseconds()
        for (identifier, kind, delay) in [("index", "processing", 1_500_000), ("late", "processing", 6_000_000), ("feed", "refresh", 6_000_000)] {
            try app.call("ScheduleBackgroundTask", ["identifier": .string(identifier), "kind": .string(kind), "earliestBegin": .int(now + Int64(delay))])
        }
        try daemon.call("Background", ["session": .string(session)])

        let index = try #require(try app.waitEvents("performBackgroundTask").first)
        #expect(index.object["identifier"]?.stringValue == "index")
        let raised = monotonicSeconds()
        try daemon.call("SetPressure", ["level": "warning"])
        let expiry = try #require(try app.waitEvents("backgroundTaskWillExpire", seconds: 10).first)
        let cut = monotonicSeconds() - raised
        #expect(expiry.object["identifier"]?.stringValue == "index" && cut < 3, "cut short \(cut) s after the warning: \(expiry.object)")
        #expect(expiry.time < (index.object["deadline"]?.intValue ?? 0) - 100_000_000, "long before its 180 s budget ends")

        // At warning: the refresh task falls due and runs; the processing one waits.
        let feed = try app.waitEvents("performBackgroundTask", count: 2, seconds: 15).last
        #expect(feed?.object["identifier"]?.stringValue == "feed", "\(String(describing: feed))")
        try WakeApp.waitFrozen(cgroup, true)
        while Wakes.wallMicroseconds() < now + 8_000_000 { sleepMilliseconds(100) }
        let waiting = try Wakes.listWork(daemon, app.app)["tasks"]?.arrayValue?.compactMap { $0["identifier"]?.stringValue }
        #expect(waiting == ["late"], "the processing task waits at warning: \(String(describing: waiting))")
        #expect(app.events("performBackgroundTask").count == 2)

        try daemon.call("SetPressure", ["level": "normal"])
        let late = try app.waitEvents("performBackgroundTask", count: 3, seconds: 10).last
        #expect(late?.object["identifier"]?.stringValue == "late" && late?.object["kind"]?.stringValue == "processing")
        try WakeApp.waitFrozen(cgroup, true)
        try Wakes.assertConformant(daemon, "background work under pressure")
        print("pressure: the processing task cut short \(Format.fixed(cut * 1000, 0)) ms after the warning")
    }

    @Test("10,000 ScheduleBackgroundTask and CancelBackgroundTask calls from one client (replacements, cancels, too many): all answered, at most MaxScheduledTasks kept, CPU and RSS bounded",
          .timeLimit(.minutes(5)))
    func schedulingFlood() throws {
        let workspace = try Workspace(configuration: Wakes.configuration(suspendDelay: "60s"))
        let daemon = try DaemonProcess(workspace, environment: ScenedLaunch.measuredMemoryEnvironment)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let name = "com.example.scheduler"
        let attached = try AttachedApp(daemon, app: name)
        _ = try attached.events(through: "didFinishLaunching")
        let flooder = try RawConnection(path: daemon.socketPath)
        let later = Wakes.wallMicroseconds() + 3_600_000_000
        let cpuBefore = try daemon.cpuTicks()
        let rssBefore = Wakes.rssKiB(daemon.pid)
        var outcomes: [String: Int] = [:]
        var limits = Set<String>()
        var most = 0
        let start = monotonicSeconds()
        for batch in 0..<20 {
            for j in 0..<500 {
                let i = batch * 500 + j
                switch i % 10 {
                case 0..<6:
                    try flooder.sendCall("io.scened.App.ScheduleBackgroundTask", ["app": .string(name), "identifier": .string("t\((i * 7) % 48)"),
                                                                                 "kind": i % 3 == 0 ? "processing" : "refresh",
                                                                                 "earliestBegin": .int(later + Int64(i))])
                case 6, 7:
                    try flooder.sendCall("io.scened.App.ScheduleBackgroundTask", ["app": .string(name), "identifier": .string("t\(i % 8)"),
                                                                                 "kind": "refresh", "earliestBegin": .int(later)])
                default:
                    try flooder.sendCall("io.scened.App.CancelBackgroundTask", ["app": .string(name), "identifier": .string("t\((i * 11) % 48)")])
                }
            }
            for _ in 0..<500 {
                let reply = try flooder.receiveObject(timeout: 60)
                outcomes[reply.errorName ?? "ok", default: 0] += 1
                if let limit = reply.parametersObject["limit"]?.stringValue { limits.insert(limit) }
            }
            let count = try Wakes.listWork(daemon, name)["tasks"]?.arrayValue?.count ?? -1
            most = max(most, count)
        }
        let elapsed = monotonicSeconds() - start
        let cpu = Double(try daemon.cpuTicks() - cpuBefore) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
        let rssAfter = Wakes.rssKiB(daemon.pid)
        #expect(outcomes.values.reduce(0, +) == 10_000, "every call answered: \(outcomes)")
        #expect(Set(outcomes.keys).isSubset(of: ["ok", "io.scened.Manager.LimitExceeded", "io.scened.Manager.NoSuchBackgroundTask"]),
                "\(outcomes)")
        #expect(outcomes["io.scened.Manager.LimitExceeded", default: 0] > 0, "48 identifiers against 32: some refused \(outcomes)")
        #expect(limits.isSubset(of: ["MaxScheduledTasks"]), "\(limits)")
        #expect(most <= 32 && most > 0, "at most MaxScheduledTasks kept: \(most)")
        #expect(cpu < 8_000, "scened used \(cpu) ms of CPU for 10,000 calls")
        #expect(rssAfter - rssBefore < 30 * 1024, "RSS grew \(rssAfter - rssBefore) KiB")
        let kept = try Wakes.listWork(daemon, name)["tasks"]?.arrayValue?.count ?? -1
        #expect(try StartedAppTests.app(daemon, name)["scheduledTasks"]?.intValue == Int64(kept), "GetApp agrees with ListBackgroundWork")
        try daemon.assertServing("after a scheduling flood")
        print("10,000 schedule/cancel calls: \(Format.fixed(elapsed * 1000, 0)) ms, scened CPU \(Format.fixed(cpu, 0)) ms, "
              + "RSS \(rssBefore) → \(rssAfter) KiB, outcomes \(outcomes.sorted { $0.key < $1.key }), at most \(most) kept")
    }

    @Test("an app that closes its Attach connection in the middle of a wake: the wake's items closed, the app terminated (exited), scened serves on; Complete of an unknown identifier is NoSuchBackgroundTask",
          .timeLimit(.minutes(3)))
    func appGoneMidWake() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.quitter", flags: ["no-complete"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let pid = try #require(try app.pid(daemon))
        try app.call("ScheduleBackgroundTask", ["identifier": "upload", "kind": "refresh",
                                                "earliestBegin": .int(Wakes.wallMicroseconds() + 2_000_000)])
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(try app.cgroup(daemon), true)
        try app.waitEvents("performBackgroundTask")
        #expect(try Wakes.listWork(daemon, app.app)["wakes"]?.arrayValue?.count == 1)

        do {
            try app.call("CompleteBackgroundTask", ["identifier": "nonesuch", "success": true])
            Issue.record("an unknown identifier was completed")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.NoSuchBackgroundTask", "\(error)")
            #expect(error.parameters["identifier"]?.stringValue == "nonesuch", "\(error)")
        }
        #expect(try Wakes.listWork(daemon, app.app)["wakes"]?.arrayValue?.count == 1, "the open item untouched")

        try app.closeAttach()
        try StopSupport.waitFor("terminated") { try StartedAppTests.app(daemon, app.app)["process"]?.stringValue == "notRunning" }
        let left = try Wakes.listWork(daemon, app.app)
        #expect(left["wakes"]?.arrayValue?.isEmpty == true && left["tasks"]?.arrayValue?.isEmpty == true, "\(left)")
        try StopSupport.waitFor("the process gone") { StopSupport.gone(pid) }
        let log = try StopSupport.events(daemon, since: 0)
        #expect(log.last?.event == "terminated" && log.last?.object["reason"]?.stringValue == "exited",
                "\(log.suffix(3).map { "\($0.event) \($0.object["reason"]?.stringValue ?? "")" })")
        try daemon.assertServing("after an app left in the middle of a wake")
        try Wakes.assertConformant(daemon, "an app gone mid-wake")
    }

    @Test("hostile: an app whose process dies before attaching, with a notification waiting: started a bounded number of times, scened idle and serving, and another app's wake not held up (MaxConcurrentWakes=1)",
          .timeLimit(.minutes(3)))
    func brokenAppDoesNotHoldTheWakes() throws {
        let workspace = try Workspace(configuration: Wakes.configuration(background: "MaxConcurrentWakes=1"))
        let broken = "com.example.broken"
        try StartedAppTests.appFile(workspace, broken, "[Launch]\nExecStart=/bin/sh -c \"exit 3\"")
        let good = try WakeApp(workspace, app: "com.example.good", flags: ["delay=0.5"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, good)
        let cgroup = try good.cgroup(daemon)
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)

        let cpuBefore = try daemon.cpuTicks()
        _ = try NotificationTests.notify(daemon, broken, ["to": "broken"])
        try StopSupport.waitFor("the broken app's start failed") { daemon.stderr.contains("exited with status 3") }
        let sent = monotonicSeconds()
        _ = try NotificationTests.notify(daemon, good.app, ["to": "good"])
        try good.waitEvents("didReceiveNotification", seconds: 20)
        let delay = monotonicSeconds() - sent
        #expect(delay < 3, "the good app's notification waited \(delay) s behind the broken app's start")
        sleepMilliseconds(3_000)
        let cpu = Double(try daemon.cpuTicks() - cpuBefore) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
        let starts = daemon.stderr.split(separator: "\n").filter { $0.contains("Started \(broken): pid") }.count
        #expect(starts >= 1 && starts <= 5, "started \(starts) times")
        #expect(cpu < 1_000, "scened used \(cpu) ms of CPU meanwhile")
        let waiting = try Wakes.listWork(daemon, broken)["notifications"]?.arrayValue?.count
        #expect(waiting == 1, "the broken app's notification still waits")
        try daemon.assertServing("with a broken app's notification waiting")
        print("broken app: started \(starts) times; the good app's notification \(Format.fixed(delay * 1000, 0)) ms; scened CPU \(Format.fixed(cpu, 0)) ms")
    }
}
