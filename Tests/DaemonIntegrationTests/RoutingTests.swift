import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 37: Open routes a URL or an activity to the app whose apps.d file claims it, and to
/// the scene the activation conditions choose; an app suspended is thawed, one not running is
/// started (or, attach-only, gets it at its next Attach); every refusal is a clear error.
@Suite("Routing: Open to real processes (issue 37)", .serialized)
struct RoutingTests {
    static func configuration(_ routing: String = "") -> String {
        Wakes.configuration() + "\n[Routing]\n\(routing)\n"
    }

    /// The error Open (io.scened.Manager) answers with, or nil if it was accepted.
    static func refusal(_ daemon: DaemonProcess, _ parameters: JSONObject) throws -> VarlinkError? {
        do {
            _ = try daemon.call("Open", parameters)
            return nil
        } catch let error as VarlinkError {
            return error
        }
    }

    @Test("every refusal of Open: NoHandler, InvalidArgument, LimitExceeded, NotOwnSession, NoSuchSession; ListRoutes and the App JSON",
          .timeLimit(.minutes(2)))
    func errorsAndRoutes() throws {
        let workspace = try Workspace(configuration: Self.configuration("MaxURLSize=1K\nMaxActivitySize=2K"))
        try StartedAppTests.appFile(workspace, "com.example.maps", "[App]\nURLSchemes=maps GEO\nActivityTypes=com.example.maps.route")
        try StartedAppTests.appFile(workspace, "com.example.web", "[App]\nURLSchemes=web")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }

        let routes = try daemon.call("ListRoutes")["routes"]?.arrayValue ?? []
        #expect(routes.map { "\($0["kind"]?.stringValue ?? "") \($0["name"]?.stringValue ?? "") \($0["app"]?.stringValue ?? "")" }
                == ["scheme geo com.example.maps", "scheme maps com.example.maps", "scheme web com.example.web",
                    "activityType com.example.maps.route com.example.maps"], "\(routes)")
        #expect(routes.first?["file"]?.stringValue?.hasSuffix("apps.d/com.example.maps.conf") == true)

        func expectError(_ p: JSONObject, _ name: String, _ field: String, _ value: String) throws {
            let e = try Self.refusal(daemon, p)
            #expect(e?.name == "io.scened.Manager." + name, "\(p): \(String(describing: e))")
            #expect(e?.parameters[field]?.stringValue == value, "\(p): \(String(describing: e))")
            #expect(e?.parameters["message"]?.stringValue?.isEmpty == false)
        }
        try expectError(["url": "mailto:someone@example.com"], "NoHandler", "scheme", "mailto")
        try expectError(["activity": ["activityType": "com.example.unknown"]], "NoHandler", "activityType", "com.example.unknown")
        for bad in ["", "maps", "1maps:x", "maps:two words", "maps:\u{1}", "maps:line\nbreak"] {
            try expectError(["url": .string(bad)], "InvalidArgument", "parameter", "url")
        }
        try expectError(["url": "maps:x", "activity": ["activityType": "com.example.maps.route"]], "InvalidArgument", "parameter", "activity")
        try expectError([:], "InvalidArgument", "parameter", "url")
        try expectError(["activity": ["activityType": "route"]], "InvalidArgument", "parameter", "activity.activityType")
        try expectError(["url": .string("maps:" + String(repeating: "x", count: 1_100))], "LimitExceeded", "limit", "MaxURLSize")
        try expectError(["activity": ["activityType": "com.example.maps.route", "userInfo": ["t": .string(String(repeating: "y", count: 2_100))]]],
                        "LimitExceeded", "limit", "MaxActivitySize")
        let web = try #require(try daemon.call("Connect", ["app": "com.example.web"])["session"]?["id"]?.stringValue)
        try expectError(["url": "maps:here", "session": .string(web)], "NotOwnSession", "session", web)
        try expectError(["url": "maps:here", "session": "s999"], "NoSuchSession", "session", "s999")

        // Accepted: maps is not running and attach-only, so the Open is stored.
        let stored = try daemon.call("Open", ["url": "GEO:48.85,2.35"])
        #expect(stored["app"]?.stringValue == "com.example.maps" && stored["session"] == nil, "\(stored)")
        #expect(stored["open"]?.stringValue == "o1", "\(stored)")
        let app = try StartedAppTests.app(daemon, "com.example.maps")
        #expect(app["urlSchemes"]?.arrayValue?.compactMap(\.stringValue) == ["maps", "geo"], "\(app)")
        #expect(app["activityTypes"]?.arrayValue?.compactMap(\.stringValue) == ["com.example.maps.route"])
        #expect(app["pendingOpens"]?.intValue == 1, "\(app)")
        try daemon.assertServing("after refused Opens")
    }

    @Test("the scene is chosen by activation conditions among several: prefers, then can; none accepting: a new scene with it in willConnectTo",
          .timeLimit(.minutes(2)))
    func sceneChosenByConditions() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let name = "com.example.docs"
        try StartedAppTests.appFile(workspace, name, "[App]\nURLSchemes=docs")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let app = try AttachedApp(daemon, app: name)
        _ = try app.events(through: "didFinishLaunching")
        var sessions: [String] = []
        for _ in 0..<3 {
            sessions.append(try #require(try daemon.call("Connect", ["app": .string(name)])["session"]?["id"]?.stringValue))
        }
        try app.call("SetActivationConditions", ["session": .string(sessions[0]), "canActivateFor": []])
        try app.call("SetActivationConditions", ["session": .string(sessions[1]), "canActivateFor": ["docs:report-*"],
                                                 "prefersToActivateFor": ["docs:report-*"]])
        try app.call("SetActivationConditions", ["session": .string(sessions[2]), "canActivateFor": ["docs:photo-?"]])
        let refusals: [(JSONObject, String)] = [
            (["canActivateFor": .array((0..<33).map { .string("p\($0)") })], "MaxActivationPatterns"),
            (["prefersToActivateFor": [.string(String(repeating: "x", count: 1_025))]], "MaxActivationPatternSize"),
            (["canActivateFor": [""]], "InvalidArgument"),
        ]
        for (conditions, expected) in refusals {
            var p = conditions
            p["session"] = .string(sessions[0])
            do {
                try app.call("SetActivationConditions", p)
                Issue.record("accepted: \(expected)")
            } catch let error as VarlinkError {
                let got = error.parameters["limit"]?.stringValue ?? String(error.name.split(separator: ".").last ?? "")
                #expect(got == expected, "\(error)")
            }
        }

        let report = try daemon.call("Open", ["url": "docs:report-7"])
        #expect(report["session"]?.stringValue == sessions[1], "prefers: \(report)")
        let opened = report["events"]?.arrayValue?.first { $0["event"]?.stringValue == "openURLContexts" }
        #expect(opened?["session"]?.stringValue == sessions[1])
        #expect(opened?["urlContexts"]?[0]?["url"]?.stringValue == "docs:report-7", "\(report)")
        #expect(opened?["cause"]?.stringValue == "request")

        let photo = try daemon.call("Open", ["url": "docs:photo-1", "activate": false])
        #expect(photo["session"]?.stringValue == sessions[2], "can: \(photo)")
        #expect(photo["events"]?.arrayValue?.map { $0["event"]?.stringValue ?? "" } == ["openURLContexts"], "no activation: \(photo)")

        let other = try daemon.call("Open", ["url": "docs:notes"])
        let new = try #require(other["session"]?.stringValue)
        #expect(!sessions.contains(new), "none accepts docs:notes: a new scene")
        let connect = other["events"]?.arrayValue?.first { $0["event"]?.stringValue == "willConnectTo" }
        #expect(connect?["urlContexts"]?[0]?["url"]?.stringValue == "docs:notes", "\(other)")

        // The attached process got them too, each in its scene.
        var seen: [String] = []
        while seen.count < 3, let e = try app.next(timeout: 5) {
            if e.event == "openURLContexts" || (e.event == "willConnectTo" && e.object["urlContexts"] != nil) {
                seen.append("\(e.event) \(e.object["session"]?.stringValue ?? "")")
            }
        }
        #expect(seen == ["openURLContexts \(sessions[1])", "openURLContexts \(sessions[2])", "willConnectTo \(new)"], "\(seen)")
        try Wakes.assertConformant(daemon, "Opens chosen by conditions")

        // Round trips of Open to a connected scene (the reply waits for the commit), for the record.
        let client = try daemon.client()
        var times: [Double] = []
        for i in 0..<300 {
            let start = monotonicSeconds()
            let r = try client.call("io.scened.Manager.Open", ["url": .string("docs:report-\(i)"), "activate": false])
            times.append(monotonicSeconds() - start)
            #expect(r["session"]?.stringValue == sessions[1])
        }
        times.sort()
        print("Open to a connected scene, round trip with its commit: p50 \(Format.fixed(times[150] * 1e6, 0)) µs, "
              + "p99 \(Format.fixed(times[296] * 1e6, 0)) µs (300 calls)")
    }

    @Test("a URL to a suspended, frozen app: thawed and resumed, openURLContexts in its scene, frozen again",
          .timeLimit(.minutes(2)))
    func suspendedAppIsThawed() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let app = try WakeApp(workspace, app: "com.example.inbox", extra: "[App]\nURLSchemes=inbox")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)

        let sent = monotonicSeconds()
        let reply = try daemon.call("Open", ["url": "inbox:message/12", "activate": false])
        #expect(reply["session"]?.stringValue == session)
        let got = try #require(try app.waitEvents("openURLContexts", seconds: 10).first)
        let latency = monotonicSeconds() - sent
        #expect(got.object["urlContexts"]?[0]?["url"]?.stringValue == "inbox:message/12")
        try WakeApp.waitFrozen(cgroup, true)
        let story = try BackgroundWakeTests.logged(daemon, app.app, from: "resumed")
        #expect(story.prefix(2) == ["resumed request", "openURLContexts request"], "\(story)")
        try Wakes.assertConformant(daemon, "an Open to a suspended app")
        print("Open to a frozen app: openURLContexts in the app \(Format.fixed(latency * 1000, 1)) ms after the call")
    }

    @Test("a URL to a not-running app with ExecStart=: stored, the app started, didFinishLaunching then willConnectTo with the URL",
          .timeLimit(.minutes(2)))
    func notRunningAppIsStarted() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let app = try WakeApp(workspace, app: "com.example.viewer", extra: "[App]\nURLSchemes=viewer")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let reply = try daemon.call("Open", ["url": "viewer:/photos/1.jpg"])
        #expect(reply["open"]?.stringValue == "o1" && reply["session"] == nil, "\(reply)")
        let connect = try #require(try app.waitEvents("willConnectTo", seconds: 20).first)
        #expect(connect.object["urlContexts"]?[0]?["url"]?.stringValue == "viewer:/photos/1.jpg", "\(connect.object)")
        let names = app.events.map(\.event)
        #expect(names.first == "didFinishLaunching", "\(names)")
        #expect(app.events.first?.cause == "request")
        #expect(try StartedAppTests.app(daemon, app.app)["pendingOpens"]?.intValue == 0)
        try Wakes.assertConformant(daemon, "an Open that started its app")
    }

    @Test("a URL to an attach-only app that is not running: stored, delivered at its next Attach, exactly once",
          .timeLimit(.minutes(2)))
    func attachOnlyAppGetsItAtAttach() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let name = "com.example.later"
        try StartedAppTests.appFile(workspace, name, "[App]\nURLSchemes=later\nActivityTypes=com.example.later.read")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        #expect(try daemon.call("Open", ["url": "later:1"])["open"]?.stringValue == "o1")
        #expect(try daemon.call("Open", ["activity": ["activityType": "com.example.later.read", "userInfo": ["page": 3]]])["open"]?.stringValue == "o2")
        #expect(try StartedAppTests.app(daemon, name)["pendingOpens"]?.intValue == 2)
        let app = try AttachedApp(daemon, app: name)
        var got: [ObservedEvent] = []
        while let e = try app.next(timeout: 2) { got.append(e) }
        #expect(got.first?.event == "didFinishLaunching", "\(got)")
        let urls = got.compactMap { $0.object["urlContexts"]?[0]?["url"]?.stringValue }
        let activities = got.compactMap { $0.object["userActivities"]?[0]?["userInfo"]?["page"]?.intValue }
        #expect(urls == ["later:1"] && activities == [3], "each once, in order: \(got)")
        #expect(try StartedAppTests.app(daemon, name)["pendingOpens"]?.intValue == 0)
        try Wakes.assertConformant(daemon, "stored Opens delivered at an attach")
    }

    @Test("an app opens another's URL (io.scened.App.Open: sourceApplication is the app) and activates a scene with a URL",
          .timeLimit(.minutes(2)))
    func appsOpenThings() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let source = try WakeApp(workspace, app: "com.example.source", extra: "[App]\nURLSchemes=source")
        try StartedAppTests.appFile(workspace, "com.example.target", "[App]\nURLSchemes=target")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        _ = try Wakes.foreground(daemon, source)

        let opened = try source.call("Open", ["url": "target:doc/1"])
        #expect(opened["target"]?.stringValue == "com.example.target" && opened["open"]?.stringValue == "o1", "\(opened)")
        do {
            try source.call("Open", ["url": "nobody:x"])
            Issue.record("an Open with no handler was accepted")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.NoHandler" && error.parameters["scheme"]?.stringValue == "nobody", "\(error)")
        }
        let target = try AttachedApp(daemon, app: "com.example.target")
        let connect = try #require(try target.events(through: "willConnectTo").last)
        #expect(connect.object["urlContexts"]?[0]?["url"]?.stringValue == "target:doc/1")
        #expect(connect.object["urlContexts"]?[0]?["sourceApplication"]?.stringValue == "com.example.source", "\(connect.object)")

        // RequestSceneSessionActivation with a URL: a new scene gets it in willConnectTo; an
        // existing one by openURLContexts.
        let new = try #require(try source.call("RequestSceneSessionActivation", ["url": "source:new"])["session"]?.stringValue)
        let connects = try source.waitEvents("willConnectTo", count: 2)
        #expect(connects.last?.object["session"]?.stringValue == new)
        #expect(connects.last?.object["urlContexts"]?[0]?["url"]?.stringValue == "source:new", "\(connects.last?.object ?? [:])")
        try source.call("RequestSceneSessionActivation", ["session": .string(new), "activity": ["activityType": "com.example.x.y", "title": "again"]])
        let continued = try #require(try source.waitEvents("continueUserActivity").first)
        #expect(continued.object["session"]?.stringValue == new)
        #expect(continued.object["userActivities"]?[0]?["title"]?.stringValue == "again")
        try Wakes.assertConformant(daemon, "apps opening things")
    }

    @Test("Opens stored for an app: a kill -9 of scened keeps them; restarted with ExecStart= now, scened starts the app, which gets each once",
          .timeLimit(.minutes(2)))
    func storedOpensSurviveARestart() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let app = try WakeApp(directory: workspace.path, app: "com.example.afterwards")
        try StartedAppTests.appFile(workspace, app.app, "[App]\nURLSchemes=after")
        var daemon = try DaemonProcess(workspace)
        #expect(try daemon.call("Open", ["url": "after:1"])["open"]?.stringValue == "o1")
        #expect(try daemon.call("Open", ["url": "after:2"])["open"]?.stringValue == "o2")
        daemon.crash()
        try StartedAppTests.appFile(workspace, app.app, app.appFile("[App]\nURLSchemes=after"))
        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        // The first makes a new scene; the second goes to that scene, which accepts anything.
        try app.waitEvents("openURLContexts", seconds: 20)
        _ = waitUntil(seconds: 1) { false }
        let delivered = app.events.filter { $0.object["urlContexts"] != nil }
        #expect(delivered.map { "\($0.event) \($0.object["urlContexts"]?[0]?["url"]?.stringValue ?? "")" }
                == ["willConnectTo after:1", "openURLContexts after:2"], "each once, in order")
        #expect(app.events.first?.event == "didFinishLaunching")
        #expect(try StartedAppTests.app(daemon, app.app)["pendingOpens"]?.intValue == 0)
        try Wakes.assertConformant(daemon, "stored Opens across a kill -9")
    }

    @Test("two apps claiming one scheme: scened refuses to start naming both files; Reload refuses it and keeps the routes in force",
          .timeLimit(.minutes(2)))
    func conflictingSchemes() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        try StartedAppTests.appFile(workspace, "com.example.one", "[App]\nURLSchemes=maps")
        try StartedAppTests.appFile(workspace, "com.example.two", "[App]\nURLSchemes=web Maps")
        let child = try ChildProcess(
            [Binaries.scened, "--socket", workspace.socketPath, "--state-dir", workspace.stateDirectory, "--config", workspace.configPath],
            directory: workspace.path, label: "conflict")
        #expect(child.wait(seconds: 15), "scened did not give up")
        #expect(child.exitStatus != nil && child.exitStatus != 0, "\(child.outcome)")
        #expect(child.stderr.contains("apps.d/com.example.one.conf:2") && child.stderr.contains("apps.d/com.example.two.conf:2"),
                "both files named: \(child.stderr)")

        try StartedAppTests.appFile(workspace, "com.example.two", "[App]\nURLSchemes=web")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        try StartedAppTests.appFile(workspace, "com.example.two", "[App]\nURLSchemes=web maps")
        do {
            try daemon.call("Reload")
            Issue.record("Reload accepted two apps claiming maps:")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.ConfigurationError", "\(error)")
            let message = error.parameters["message"]?.stringValue ?? ""
            #expect(message.contains("com.example.one"), "\(error)")
        }
        let routes = try daemon.call("ListRoutes")["routes"]?.arrayValue ?? []
        #expect(routes.map { $0["name"]?.stringValue ?? "" } == ["maps", "web"], "the old routes kept: \(routes)")
        #expect(try daemon.call("Open", ["url": "maps:x"])["app"]?.stringValue == "com.example.one")
    }

    @Test("another user's Open to an app that is not theirs is PermissionDenied; its owner's is accepted",
          .timeLimit(.minutes(2)))
    func otherUsersAreRefused() throws {
        let users = try TestUsers()
        defer { users.remove() }
        let workspace = try Workspace(configuration: Self.configuration())
        chmod(workspace.path, 0o755)
        try StartedAppTests.appFile(workspace, "com.example.mine", "[App]\nUser=\(users.member)\nURLSchemes=mine")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let refused = try users.call(as: users.outsider, socket: daemon.socketPath, "io.scened.Manager.Open", ["url": "mine:1"])
        #expect(refused.contains("org.varlink.service.PermissionDenied"), "the outsider: \(refused)")
        let owner = try users.call(as: users.member, socket: daemon.socketPath, "io.scened.Manager.Open", ["url": "mine:2?token=s3cret"])
        #expect(owner.contains("\"open\""), "the owner: \(owner)")
        #expect(try StartedAppTests.app(daemon, "com.example.mine")["pendingOpens"]?.intValue == 1, "only the owner's stored")

        // The outsider may Monitor the app, but not read the URL its scene is opened with.
        let script = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            s.sendall(json.dumps({"method": "io.scened.Manager.Monitor", "parameters": {"app": "com.example.mine"}, "more": True}).encode() + b"\\0")
            buf = b""
            while True:
                data = s.recv(65536)
                if not data:
                    break
                buf += data
                while b"\\0" in buf:
                    msg, buf = buf.split(b"\\0", 1)
                    e = json.loads(msg).get("parameters", {}).get("event", {})
                    if e.get("event") == "willConnectTo":
                        print(json.dumps(e))
                        sys.exit(0)
            """
        let monitor = try ChildProcess(["/usr/bin/setpriv", "--reuid=\(users.outsider)", "--regid=\(users.outsider)", "--init-groups",
                                        "/usr/bin/python3", "-c", script, daemon.socketPath], directory: workspace.path, label: "outsider-monitor")
        defer { monitor.killNow() }
        _ = waitUntil(seconds: 1) { false }
        let app = try AttachedApp(daemon, app: "com.example.mine")
        let connect = try #require(try app.events(through: "willConnectTo").last)
        #expect(connect.object["urlContexts"]?[0]?["url"]?.stringValue == "mine:2?token=s3cret", "the app gets it")
        #expect(monitor.wait(seconds: 10), "the outsider's Monitor saw no willConnectTo: \(monitor.stderr)")
        #expect(monitor.stdout.contains("\"withheld\": true") && !monitor.stdout.contains("s3cret"), "the outsider saw: \(monitor.stdout)")
        try daemon.assertServing("after a refused Open")
    }

    @Test("10,000 garbage Opens from one client: each refused, a bystander served, RSS bounded; a flood to a not-running app stops at MaxPendingOpens",
          .timeLimit(.minutes(3)))
    func hostileFloods() throws {
        let workspace = try Workspace(configuration: Self.configuration("MaxPendingOpens=16"))
        try StartedAppTests.appFile(workspace, "com.example.sink", "[App]\nURLSchemes=sink")
        let daemon = try DaemonProcess(workspace, environment: ScenedLaunch.measuredMemoryEnvironment)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
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
        let garbage: [JSONObject] = [
            ["url": .string("sink:" + String(repeating: "x", count: 9_000))], ["url": "no scheme"], ["url": "sink:\u{0}"],
            ["url": "unknown:x"], ["activity": ["activityType": "x"]], ["url": "sink:a", "activity": ["activityType": "a.b"]],
            ["url": .string(String(repeating: "é", count: 3_000) + ":x")],
        ]
        let flooder = try RawConnection(path: daemon.socketPath)
        var outcomes: [String: Int] = [:]
        var during: [Double] = []
        let start = monotonicSeconds()
        for round in 0..<20 {
            for i in 0..<500 { try flooder.sendCall("io.scened.Manager.Open", garbage[(round * 500 + i) % garbage.count]) }
            during += try statusLatencies(5)
            for _ in 0..<500 { outcomes[try flooder.receiveObject(timeout: 60).errorName ?? "accepted", default: 0] += 1 }
        }
        let elapsed = monotonicSeconds() - start
        during.sort()
        let rssAfter = Wakes.rssKiB(daemon.pid)
        #expect(outcomes["accepted"] == nil && outcomes.values.reduce(0, +) == 10_000, "\(outcomes)")
        let ratio = during[during.count / 2] / max(quiet[quiet.count / 2], 0.000_05)
        #expect(during[during.count / 2] < 0.5, "GetStatus median \(during[during.count / 2]) s during the flood")
        #expect(ratio < 50, "the bystander's median GetStatus latency rose \(ratio)× (loose bound)")
        #expect(rssAfter - rssBefore < 20 * 1024, "RSS grew \(rssAfter - rssBefore) KiB")
        print("10,000 garbage Opens: \(Format.fixed(elapsed * 1000, 0)) ms; \(outcomes); bystander GetStatus median "
              + "\(Format.fixed(quiet[quiet.count / 2] * 1e6, 0)) µs quiet, \(Format.fixed(during[during.count / 2] * 1e6, 0)) µs "
              + "during (×\(Format.fixed(ratio, 1))); RSS \(rssBefore) → \(rssAfter) KiB")

        var stored: [String: Int] = [:]
        var limits = Set<String>()
        for i in 0..<100 { try flooder.sendCall("io.scened.Manager.Open", ["url": .string("sink:\(i)")]) }
        for _ in 0..<100 {
            let reply = try flooder.receiveObject(timeout: 60)
            stored[reply.errorName ?? "accepted", default: 0] += 1
            if let limit = reply.parametersObject["limit"]?.stringValue { limits.insert(limit) }
        }
        #expect(stored == ["accepted": 16, "io.scened.Manager.LimitExceeded": 84], "\(stored)")
        #expect(limits == ["MaxPendingOpens"])
        #expect(try StartedAppTests.app(daemon, "com.example.sink")["pendingOpens"]?.intValue == 16)
        try daemon.assertServing("after the Open floods")
    }
}
