import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 36 item 5: notifications (io.scened.Manager.Notify) to real processes: delivered at
/// once to a running app, thawing a frozen one, exactly once across a kill -9 of scened, only
/// from those allowed to send them, and bounded per app.
@Suite("Notifications to real processes (R34)", .serialized)
struct NotificationTests {
    static func notify(_ daemon: DaemonProcess, _ app: String, _ payload: JSONObject) throws -> String {
        let reply = try daemon.call("Notify", ["app": .string(app), "payload": .object(payload)])
        guard let id = reply["notification"]?.stringValue else { throw TestFailure("Notify without an id: \(reply)") }
        return id
    }

    @Test("Notify to a running app: didReceiveNotification at once with the payload; to a suspended one: thawed, answered, frozen again",
          .timeLimit(.minutes(3)))
    func runningAndSuspendedApp() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.inbox", flags: ["delay=1.0"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        // A scene in the foreground keeps it running.
        let session = try #require(try daemon.call("Connect", ["app": .string(app.app)])["session"]?["id"]?.stringValue)
        let cgroup = try app.cgroup(daemon)

        let sent = monotonicSeconds()
        let first = try Self.notify(daemon, app.app, ["text": "hello", "n": 1])
        let got = try #require(try app.waitEvents("didReceiveNotification", seconds: 5).first)
        let latency = monotonicSeconds() - sent
        #expect(latency < 1.0, "at once: \(latency) s")
        #expect(got.object["notification"]?.stringValue == first)
        #expect(got.object["kind"]?.stringValue == "notification")
        #expect(got.object["payload"]?["text"]?.stringValue == "hello" && got.object["payload"]?["n"]?.intValue == 1,
                "the payload: \(got.object)")
        #expect(got.cause == "background")
        #expect(!app.events.contains { $0.event == "resumed" }, "a running app is not resumed")
        try StopSupport.waitFor("the first answered") { try Wakes.listWork(daemon, app.app)["wakes"]?.arrayValue?.isEmpty == true }

        // Home: suspended after 300 ms, frozen.
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)
        let second = try Self.notify(daemon, app.app, ["text": "again"])
        try WakeApp.waitFrozen(cgroup, false, seconds: 10)
        let both = try app.waitEvents("didReceiveNotification", count: 2)
        #expect(both.last?.object["notification"]?.stringValue == second)
        #expect(both.last?.object["payload"]?["text"]?.stringValue == "again")
        #expect(WakeApp.frozen(cgroup) == false, "thawed until it answers (1 s)")
        try WakeApp.waitFrozen(cgroup, true)
        // The app is frozen before it reads its answer's reply and the suspended event: scened's log.
        let story = try BackgroundWakeTests.logged(daemon, app.app, from: "resumed")
        #expect(story == ["resumed background", "didReceiveNotification background", "suspended background"], "\(story)")
        let left = try Wakes.listWork(daemon, app.app)
        #expect(left["notifications"]?.arrayValue?.isEmpty == true && left["wakes"]?.arrayValue?.isEmpty == true, "\(left)")
        try Wakes.assertConformant(daemon, "notifications to a running and a frozen app")
        print("Notify to a running app: didReceiveNotification \(Format.fixed(latency * 1000, 1)) ms after the call")
    }

    @Test("scene-notes, frozen, which knows nothing of notifications: thawed for one, frozen again when its budget ends, the same process",
          .timeLimit(.minutes(3)))
    func sceneNotesThawedForANotification() throws {
        let workspace = try Workspace(configuration: Wakes.configuration(background: "NotificationBudgetSec=2s"))
        let app = "org.example.notes"
        // scene-notes answers notifications (SceneClient acknowledges when its handler returns):
        // its handling is made to outlast the budget, as an app that does not answer.
        try StartedAppTests.appFile(workspace, app,
                                    "[Launch]\nExecStart=\(try StartedAppTests.notes(workspace, app)) --notification-delay-sec 30")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try #require(try daemon.call("Connect", ["app": .string(app)])["session"]?["id"]?.stringValue)
        let pid = try #require(try StartedAppTests.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        let cgroup = try #require(StartedAppTests.cgroupDirectory(pid), "a cgroup of its own (the tests run as root)")
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)

        let id = try Self.notify(daemon, app, ["note": "remember the milk"])
        try WakeApp.waitFrozen(cgroup, false, seconds: 10)
        let thawed = monotonicSeconds()
        try WakeApp.waitFrozen(cgroup, true, seconds: 15)
        let awake = monotonicSeconds() - thawed
        #expect(awake > 1.2 && awake < 5, "thawed for its budget (2 s), not answered: \(awake) s")
        let logged = try StopSupport.events(daemon, since: 0).filter { $0.app == app }.drop { $0.event != "resumed" }
        #expect(logged.map { "\($0.event) \($0.cause)" } == ["resumed background", "didReceiveNotification background", "suspended background"],
                "\(logged.map(\.description))")
        #expect(logged.dropFirst().first?.object["notification"]?.stringValue == id)
        #expect(try StartedAppTests.app(daemon, app)["startedPid"]?.intValue == Int64(pid) && kill(pid, 0) == 0, "still the same process")
        try Wakes.assertConformant(daemon, "scene-notes and a notification")
        print("scene-notes: thawed \(Format.fixed(awake * 1000, 0)) ms for a notification it does not answer (budget 2 s)")
    }

    @Test("Notify to a not-running app with ExecStart=: started (didFinishLaunching, cause background), didReceiveNotification, answered, suspended and frozen",
          .timeLimit(.minutes(3)))
    func notRunningAppIsStartedForANotification() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.mailbox")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let id = try Self.notify(daemon, app.app, ["subject": "hi"])
        let got = try app.waitEvents("didReceiveNotification")
        #expect(got.first?.object["notification"]?.stringValue == id && got.first?.object["payload"]?["subject"]?.stringValue == "hi")
        #expect(app.events.first.map { "\($0.event) \($0.cause)" } == "didFinishLaunching background", "\(app.events.map(\.description))")
        try WakeApp.waitFrozen(try app.cgroup(daemon), true)
        let logged = try BackgroundWakeTests.logged(daemon, app.app, from: "didFinishLaunching")
        #expect(logged == ["didFinishLaunching background", "didReceiveNotification background", "suspended background"], "\(logged)")
        #expect(try Wakes.listWork(daemon, app.app)["wakes"]?.arrayValue?.isEmpty == true)
    }

    @Test("a notification whose Notify reply came just before a kill -9 of scened is delivered exactly once (the app's reattach, and the event log), also one still stored at the kill",
          .timeLimit(.minutes(3)))
    func exactlyOnceAcrossAKill() throws {
        let workspace = try Workspace()
        let name = "com.example.once"
        var daemon = try DaemonProcess(workspace)
        var app = try AttachedApp(daemon, app: name)
        let launched = try app.events(through: "didFinishLaunching")
        var seen: [String: Int] = [:]
        var ids: [String] = []
        var nextSeq = UInt64(0)
        var replayed = 0
        func take(_ e: ObservedEvent) throws {
            nextSeq = e.seq + 1
            guard e.event == "didReceiveNotification" else { return }
            seen[e.object["notification"]?.stringValue ?? "?", default: 0] += 1
        }
        for e in launched { try take(e) }
        for round in 0..<3 {
            let id = try Self.notify(daemon, name, ["round": .int(Int64(round))])
            ids.append(id)
            daemon.crash()
            // What the first scened managed to send before it died.
            while let e = try app.next(timeout: 1) { try take(e) }
            daemon = try DaemonProcess(workspace)
            // Events before this one were committed by the killed scened: replays.
            let live = try StopSupport.nextSeq(daemon)
            app = try AttachedApp(daemon, app: name, since: nextSeq)
            while let e = try app.next(timeout: 2) {
                try take(e)
                guard e.event == "didReceiveNotification" else { continue }
                do {
                    try app.call("Acknowledge", ["seq": .int(Int64(e.seq))])
                } catch let error as VarlinkError where error.name == "io.scened.App.NotAwaiting" {
                    guard e.seq < live else {
                        throw TestFailure("round \(round): \(error) for a live event (next \(live)): \(e.object); "
                                          + "log: \(try StopSupport.events(daemon, since: 0).map { "\($0.seq) \($0.event) \($0.cause)" })")
                    }
                    // Handed over before the kill and replayed: a wake's items are not
                    // stored, so nothing waits for this answer any more.
                    replayed += 1
                }
            }
        }
        defer { if daemon.child.isRunning { try? daemon.stop() } }

        // Not running (detached) and not startable: the notification waits, stored, through a
        // kill -9, and the app's next process gets it once.
        try app.call("Detach")
        let stored = try Self.notify(daemon, name, ["round": "stored"])
        ids.append(stored)
        daemon.crash()
        daemon = try DaemonProcess(workspace)
        let waiting = try Wakes.listWork(daemon, name)["notifications"]?.arrayValue ?? []
        #expect(waiting.map { $0["notification"]?.stringValue } == [stored], "stored: \(waiting)")
        app = try AttachedApp(daemon, app: name)
        let handed = try app.events(through: "didReceiveNotification")
        for e in handed { try take(e) }
        try app.call("Acknowledge", ["seq": .int(Int64(handed.last?.seq ?? 0))])
        while let e = try app.next(timeout: 1) { try take(e) }
        #expect(ids.allSatisfy { seen[$0] == 1 }, "each seen once by the app: \(seen) for \(ids)")
        let log = try StopSupport.events(daemon, since: 0).filter { $0.event == "didReceiveNotification" }
        let logged = Dictionary(grouping: log, by: { $0.object["notification"]?.stringValue ?? "?" }).mapValues(\.count)
        #expect(ids.allSatisfy { logged[$0] == 1 } && logged.count == ids.count, "once each in the event log: \(logged)")
        #expect(try Wakes.listWork(daemon, name)["notifications"]?.arrayValue?.isEmpty == true)
        print("Notify then kill -9, three rounds: each delivered once; \(replayed) handed over before the kill and replayed on the reattach")
    }

    @Test("hostile: an app that never answers its notifications: the open ones count toward MaxPendingNotifications until their budget ends, then it is frozen again and Notify is accepted again",
          .timeLimit(.minutes(3)))
    func unansweredNotificationsHoldTheLimit() throws {
        let workspace = try Workspace(configuration: Wakes.configuration(background: "NotificationBudgetSec=2s\nMaxPendingNotifications=8"))
        let app = try WakeApp(workspace, app: "com.example.deaf", flags: ["no-ack"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)

        let sender = try RawConnection(path: daemon.socketPath)
        for i in 0..<20 { try sender.sendCall("io.scened.Manager.Notify", ["app": .string(app.app), "payload": ["i": .int(Int64(i))]]) }
        var outcomes: [String: Int] = [:]
        for _ in 0..<20 { outcomes[try sender.receiveObject(timeout: 30).errorName ?? "accepted", default: 0] += 1 }
        #expect(outcomes == ["accepted": 8, "io.scened.Manager.LimitExceeded": 12], "\(outcomes)")
        let handed = try app.waitEvents("didReceiveNotification", count: 8, seconds: 10)
        #expect(Set(handed.compactMap { $0.object["notification"]?.stringValue }).count == 8)
        let open = try Wakes.listWork(daemon, app.app)
        #expect((open["wakes"]?.arrayValue?.count ?? 0) + (open["notifications"]?.arrayValue?.count ?? 0) == 8, "\(open)")
        do {
            _ = try Self.notify(daemon, app.app, ["while": "open"])
            Issue.record("a ninth notification was accepted while eight are unanswered")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.LimitExceeded" && error.parameters["limit"]?.stringValue == "MaxPendingNotifications", "\(error)")
        }

        // Their budget (2 s) ends: closed without an event, the app suspended and frozen.
        try StopSupport.waitFor("the items closed", seconds: 10) {
            try Wakes.listWork(daemon, app.app)["wakes"]?.arrayValue?.isEmpty == true
        }
        try WakeApp.waitFrozen(cgroup, true)
        let logged = try BackgroundWakeTests.logged(daemon, app.app, from: "resumed")
        #expect(logged.last == "suspended background", "\(logged)")
        #expect(!logged.contains { $0.hasPrefix("backgroundTaskWillExpire") }, "no expiration event for notifications: \(logged)")
        #expect(try StartedAppTests.app(daemon, app.app)["process"]?.stringValue == "suspended")
        _ = try Self.notify(daemon, app.app, ["after": "budget"])
        try app.waitEvents("didReceiveNotification", count: 9, seconds: 10)
        try daemon.assertServing("after unanswered notifications")
        try Wakes.assertConformant(daemon, "unanswered notifications")
    }

    @Test("Notify from a user outside NotifyGroup= is PermissionDenied; a member of the group is accepted",
          .timeLimit(.minutes(2)))
    func notifyGroup() throws {
        let users = try TestUsers()
        defer { users.remove() }
        let workspace = try Workspace()
        chmod(workspace.path, 0o755)
        let app = "com.example.pushed"
        try StartedAppTests.appFile(workspace, app, "[App]\nNotifyGroup=\(users.group)")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let outsider = try users.notify(as: users.outsider, socket: daemon.socketPath, app: app)
        #expect(outsider.contains("org.varlink.service.PermissionDenied"), "the outsider: \(outsider)")
        let member = try users.notify(as: users.member, socket: daemon.socketPath, app: app)
        #expect(member.contains("\"notification\""), "the member: \(member)")
        let waiting = try Wakes.listWork(daemon, app)["notifications"]?.arrayValue ?? []
        #expect(waiting.count == 1, "only the member's is stored: \(waiting)")
        try daemon.assertServing("after a refused Notify")
    }

    @Test("1,000 notifications to one app: MaxPendingNotifications accepted, the rest LimitExceeded; RSS bounded, a bystander still served; an oversized payload is LimitExceeded MaxNotificationSize; a sender that vanishes loses nothing sent whole",
          .timeLimit(.minutes(3)))
    func floodAndOversize() throws {
        let workspace = try Workspace()
        let app = "com.example.flooded"
        // Known (apps.d) but not startable and not running: its notifications wait.
        try StartedAppTests.appFile(workspace, app, "[App]\nBackgroundModes=")
        try StartedAppTests.appFile(workspace, "com.example.other", "[App]\nBackgroundModes=")
        let daemon = try DaemonProcess(workspace, environment: ScenedLaunch.measuredMemoryEnvironment)
        defer { if daemon.child.isRunning { try? daemon.stop() } }

        // A sender that vanishes with its replies unread and a call half sent: what was
        // received whole is stored all the same.
        let vanishing = try RawConnection(path: daemon.socketPath)
        for i in 0..<5 { try vanishing.sendCall("io.scened.Manager.Notify", ["app": "com.example.other", "payload": ["i": .int(Int64(i))]]) }
        try vanishing.send("{\"method\":\"io.scened.Manager.Notify\",\"parameters\":{\"app\":\"com.ex")
        vanishing.close()
        try StopSupport.waitFor("the vanished sender's five stored") {
            try Wakes.listWork(daemon, "com.example.other")["notifications"]?.arrayValue?.count == 5
        }

        let bystander = try daemon.client(timeout: .seconds(10))
        func statusLatencies(_ n: Int) throws -> [Double] {
            try (0..<n).map { _ in
                let start = monotonicSeconds()
                _ = try bystander.call("io.scened.Manager.GetStatus")
                return monotonicSeconds() - start
            }
        }
        let quiet = try statusLatencies(50).sorted()
        let rssBefore = Wakes.rssKiB(daemon.pid)

        let payload: JSONObject = ["text": .string(String(repeating: "x", count: 1_000))]
        let flooder = try RawConnection(path: daemon.socketPath)
        let start = monotonicSeconds()
        var during: [Double] = []
        var outcomes: [String: Int] = [:]
        var limits = Set<String>()
        // Ten rounds of 100 pipelined calls, the bystander asking while each is handled.
        for _ in 0..<10 {
            for _ in 0..<100 { try flooder.sendCall("io.scened.Manager.Notify", ["app": .string(app), "payload": .object(payload)]) }
            during += try statusLatencies(5)
            for _ in 0..<100 {
                let reply = try flooder.receiveObject(timeout: 60)
                outcomes[reply.errorName ?? "accepted", default: 0] += 1
                if let limit = reply.parametersObject["limit"]?.stringValue { limits.insert(limit) }
            }
        }
        during.sort()
        let elapsed = monotonicSeconds() - start
        let rssAfter = Wakes.rssKiB(daemon.pid)
        #expect(outcomes == ["accepted": 64, "io.scened.Manager.LimitExceeded": 936], "\(outcomes)")
        #expect(limits == ["MaxPendingNotifications"], "\(limits)")
        #expect(try Wakes.listWork(daemon, app)["notifications"]?.arrayValue?.count == 64)
        let ratio = during[during.count / 2] / max(quiet[quiet.count / 2], 0.000_05)
        #expect(during[during.count / 2] < 0.5, "GetStatus median \(during[during.count / 2]) s during the flood")
        #expect(ratio < 50, "the bystander's median GetStatus latency rose \(ratio)× (loose bound)")
        #expect(rssAfter - rssBefore < 20 * 1024, "RSS grew \(rssAfter - rssBefore) KiB")
        print("1,000 Notify to one app: \(Format.fixed(elapsed * 1000, 0)) ms; bystander GetStatus median "
              + "\(Format.fixed(quiet[quiet.count / 2] * 1e6, 0)) µs quiet, \(Format.fixed(during[during.count / 2] * 1e6, 0)) µs "
              + "during (×\(Format.fixed(ratio, 1))); RSS \(rssBefore) → \(rssAfter) KiB")

        // Oversized: refused with the limit named; a payload within it is accepted.
        let big: JSONObject = ["text": .string(String(repeating: "y", count: 5_000))]
        do {
            _ = try Self.notify(daemon, "com.example.other", big)
            Issue.record("a 5,000-byte payload was accepted")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.LimitExceeded")
            #expect(error.parameters["limit"]?.stringValue == "MaxNotificationSize", "\(error)")
            #expect(error.parameters["maximum"]?.intValue == 4096, "\(error)")
        }
        let fits = try daemon.call("Notify", ["app": .string("com.example.other"), "payload": ["text": .string(String(repeating: "z", count: 3_000))]])
        #expect(fits["notification"] != nil)
        #expect(try Wakes.listWork(daemon, "com.example.other")["notifications"]?.arrayValue?.count == 6)
        try daemon.assertServing("after the flood")
    }
}
