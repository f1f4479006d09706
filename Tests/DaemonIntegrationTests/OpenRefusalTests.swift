import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Issue 37 item 5, what Open refuses against the real scened: malformed URLs, unknown schemes
/// and types, oversized payloads, too many stored opens; and two apps claiming one scheme.
@Suite("Open: refusals and configuration errors (issue 37)", .serialized)
struct OpenRefusalTests {
    static let notes = OpenSceneTests.notes

    @Test("malformed URLs are InvalidArgument naming url; unknown schemes and types NoHandler naming them; oversized URL and activity LimitExceeded naming MaxURLSize and MaxActivitySize; every refusal changes nothing and scened serves on",
          .timeLimit(.minutes(2)))
    func badInput() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s"))
        try Routes.appFile(workspace, Self.notes, schemes: ["notes"], types: [OpenSceneTests.editType])
        let daemon = try DaemonProcess(workspace)
        defer { try? daemon.stop() }
        let app = try AttachedApp(daemon, app: Self.notes)
        _ = try app.events(through: "didFinishLaunching")
        let session = try Routes.sessionID(try daemon.call("Connect", ["app": .string(Self.notes)]))
        _ = try app.drain()
        let before = try StopSupport.nextSeq(daemon)

        let malformed = ["", "notes", "no scheme here", "1notes:x", "no tes:x", ":x", "notes:a\u{1}b", "notes:a\nb",
                         "notes:tab\there", "nötes:x"]
        for url in malformed {
            let r = Routes.refusal("url \(url.debugDescription)") { try Routes.open(daemon, url: url) }
            #expect(r?.name == "InvalidArgument" && r?.parameters["parameter"]?.stringValue == "url",
                    "\(url.debugDescription): \(String(describing: r))")
        }
        let neither = Routes.refusal("neither url nor activity") { try Routes.open(daemon) }
        #expect(neither?.name == "InvalidArgument" || neither?.name == "InvalidParameter", "\(String(describing: neither))")
        let both = Routes.refusal("url and activity") {
            try Routes.open(daemon, url: "notes:x", activity: ["activityType": .string(OpenSceneTests.editType)])
        }
        #expect(both?.name == "InvalidArgument" || both?.name == "InvalidParameter", "\(String(describing: both))")

        let unknown = Routes.refusal("an unknown scheme") { try Routes.open(daemon, url: "Zebra:stripes") }
        #expect(unknown?.name == "NoHandler" && unknown?.parameters["scheme"]?.stringValue?.lowercased() == "zebra",
                "\(String(describing: unknown))")
        let noType = Routes.refusal("an unknown activity type") {
            try Routes.open(daemon, activity: ["activityType": "com.example.nobody.view"])
        }
        #expect(noType?.name == "NoHandler" && noType?.parameters["activityType"]?.stringValue == "com.example.nobody.view",
                "\(String(describing: noType))")

        // Default limits: MaxURLSize=8K, MaxActivitySize=16K.
        let long = "notes:" + String(repeating: "x", count: 8 * 1024)
        let tooLong = Routes.refusal("a URL over 8 KiB") { try Routes.open(daemon, url: long) }
        #expect(tooLong?.name == "LimitExceeded" && tooLong?.parameters["limit"]?.stringValue == "MaxURLSize"
                && tooLong?.parameters["maximum"]?.intValue == 8192, "\(String(describing: tooLong))")
        let fits = "notes:" + String(repeating: "y", count: 8 * 1024 - 6)
        #expect(try Routes.open(daemon, url: fits)["session"]?.stringValue == session, "exactly MaxURLSize is accepted")
        let big: JSONObject = ["activityType": .string(OpenSceneTests.editType),
                               "userInfo": ["blob": .string(String(repeating: "z", count: 16 * 1024))]]
        let tooBig = Routes.refusal("an activity over 16 KiB") { try Routes.open(daemon, activity: big) }
        #expect(tooBig?.name == "LimitExceeded" && tooBig?.parameters["limit"]?.stringValue == "MaxActivitySize",
                "\(String(describing: tooBig))")
        let notObject = Routes.refusal("userInfo not an object") {
            try Routes.open(daemon, activity: ["activityType": .string(OpenSceneTests.editType), "userInfo": "text"])
        }
        #expect(notObject != nil)

        // Only the accepted Open left events, and the app saw only it.
        let events = try StopSupport.events(daemon, since: before).filter { $0.app == Self.notes }
        #expect(events.map(\.event) == ["openURLContexts"], "\(events)")
        #expect(try app.drain().map(\.event) == ["openURLContexts"])
        try daemon.assertServing("after refused Opens")
        #expect(try Routes.open(daemon, url: "notes:fine")["session"]?.stringValue == session)
    }

    @Test("an app not running: at most MaxPendingOpens stored (LimitExceeded naming it), all delivered in order at its launch",
          .timeLimit(.minutes(2)))
    func pendingOpensLimit() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s", routing: ["MaxPendingOpens=3"]))
        try Routes.appFile(workspace, Self.notes, schemes: ["notes"])
        let daemon = try DaemonProcess(workspace)
        defer { try? daemon.stop() }
        var ids: [String] = []
        for i in 1...3 {
            ids.append(try #require(try Routes.open(daemon, url: "notes:\(i)", activate: false)["open"]?.stringValue))
        }
        #expect(Set(ids).count == 3)
        let fourth = Routes.refusal("a fourth stored Open") { try Routes.open(daemon, url: "notes:4") }
        #expect(fourth?.name == "LimitExceeded" && fourth?.parameters["limit"]?.stringValue == "MaxPendingOpens"
                && fourth?.parameters["maximum"]?.intValue == 3, "\(String(describing: fourth))")
        #expect(try Routes.pending(daemon, Self.notes) == 3)

        let app = try AttachedApp(daemon, app: Self.notes)
        let seen = try app.drain(quiet: 1)
        let urls = seen.flatMap(Routes.urls)
        #expect(urls == ["notes:1", "notes:2", "notes:3"], "in order, once each: \(seen)")
        #expect(seen.first?.event == "didFinishLaunching", "\(seen)")
        #expect(try Routes.pending(daemon, Self.notes) == 0)
    }

    @Test("two apps claiming one scheme (in different case): scened refuses to start, naming both files; a Reload that adds the second is ConfigurationError naming both and routing stays",
          .timeLimit(.minutes(2)))
    func twoAppsClaimingAScheme() throws {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s"))
        try Routes.appFile(workspace, "com.example.maps", schemes: ["maps", "geo"])
        try Routes.appFile(workspace, "com.example.atlas", schemes: ["Maps"])
        let child = try ChildProcess([Binaries.scened, "--socket", workspace.socketPath, "--state-dir", workspace.stateDirectory,
                                      "--config", workspace.configPath], directory: workspace.path, label: "conflict")
        #expect(child.wait(seconds: 20), "scened did not refuse to start")
        if child.isRunning { child.killNow() }
        #expect(child.exitStatus != nil && child.exitStatus != 0, "\(child.outcome)")
        let stderr = child.stderr
        #expect(stderr.contains("apps.d/com.example.maps.conf") && stderr.contains("apps.d/com.example.atlas.conf"),
                "names both files: \(stderr.suffix(2000))")
        #expect(stderr.lowercased().contains("maps"), "names the scheme: \(stderr.suffix(2000))")

        // One file: starts; the second added and reloaded: refused, the first still routes.
        unlink(workspace.directory.file("apps.d/com.example.atlas.conf"))
        let daemon = try DaemonProcess(workspace)
        defer { try? daemon.stop() }
        let routes = try daemon.call("ListRoutes")["routes"]?.arrayValue ?? []
        #expect(routes.contains { $0["name"]?.stringValue == "maps" && $0["app"]?.stringValue == "com.example.maps"
                                  && $0["file"]?.stringValue?.hasSuffix("com.example.maps.conf") == true },
                "\(routes)")
        try Routes.appFile(workspace, "com.example.atlas", schemes: ["geo"])
        let reload = Routes.refusal("a Reload with two apps claiming geo") { try daemon.call("Reload") }
        let message = reload?.parameters["message"]?.stringValue ?? ""
        #expect(reload?.name == "ConfigurationError" && message.contains("com.example.maps.conf") && message.contains("com.example.atlas.conf"),
                "\(String(describing: reload))")
        let reply = try Routes.open(daemon, url: "geo:52.52,13.40")
        #expect(reply["app"]?.stringValue == "com.example.maps", "the configuration in force stays: \(reply)")
    }
}
