import Foundation
import SceneClient
import ScenedTestSupport
import Testing
import Varlink

/// SceneClient's side of URLs and activities (issue 37), fed by the scripted stand-in for
/// scened: the wire's fields reach the delegates as UIKit's values, in the events' order, and
/// the app's requests carry what the interface says. The waits are long, as in
/// SceneClientTests: other suites can keep the main actor busy.
@Suite("SceneClient URLs and activities, scripted", .serialized)
@MainActor
struct RoutingScriptTests {
    nonisolated static func e(_ seq: Int64, _ name: String, _ session: String?, _ state: String, bounded: Bool = false,
                  extra: JSONObject = [:]) -> JSONObject {
        FakeAppDaemon.event(seq, name, session, state: state, cause: "request", bounded: bounded, extra: extra)
    }

    nonisolated static func urls(_ pairs: [(String, String?)]) -> JSONValue {
        .array(pairs.map { url, source in
            var o: JSONObject = ["url": .string(url)]
            if let source { o["sourceApplication"] = .string(source) }
            return .object(o)
        })
    }

    nonisolated static let edit: JSONValue = ["activityType": "org.example.fake.edit", "title": "Edit", "userInfo": ["line": 3],
                                  "targetContentIdentifier": "doc-1", "webpageURL": "https://example.org/doc-1"]
    nonisolated static let view: JSONValue = ["activityType": "org.example.fake.view"]

    /// A scene opened with a URL and an activity, sent home, opened again with two URLs (brought
    /// forward: between willEnterForeground and didBecomeActive), then two activities, an event
    /// from the future, an openURLContexts without URLs, and the end.
    static let script: [JSONObject] = [
        e(1, "didFinishLaunching", nil, "running"),
        e(2, "configurationForConnecting", "s1", "unattached",
          extra: ["urlContexts": urls([("fake:new?text=hi", "org.example.mail")])]),
        e(3, "willConnectTo", "s1", "foregroundInactive",
          extra: ["urlContexts": urls([("fake:new?text=hi", "org.example.mail")]), "userActivities": [edit]]),
        e(4, "willEnterForeground", "s1", "foregroundInactive"),
        e(5, "didBecomeActive", "s1", "foregroundActive"),
        e(6, "willResignActive", "s1", "foregroundInactive"),
        e(7, "didEnterBackground", "s1", "background", bounded: true),
        e(8, "willEnterForeground", "s1", "foregroundInactive"),
        e(9, "openURLContexts", "s1", "foregroundInactive",
          extra: ["urlContexts": urls([("fake:open?id=s1", nil), ("FAKE:weird path", "org.example.other")])]),
        e(10, "didBecomeActive", "s1", "foregroundActive"),
        e(11, "continueUserActivity", "s1", "foregroundActive", extra: ["userActivities": [view, edit]]),
        e(12, "sceneDidDream", "s1", "foregroundActive", extra: ["dream": ["of": "sheep"], "urlContexts": "not an array"]),
        e(13, "openURLContexts", "s1", "foregroundActive"),
        e(14, "willTerminate", nil, "running", bounded: true),
        e(15, "terminated", nil, "notRunning", extra: ["reason": "requested", "sessions": ["s1"]]),
    ]

    @Test("connection options, openURLContexts and continue reach the delegate in the events' order", .timeLimit(.minutes(10)))
    func deliveredInOrder() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-routing")
        defer { directory.remove() }
        let daemon = try FakeAppDaemon(directory: directory.path, events: Self.script)
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, requestSceneAtLaunch: false)
        #expect(try await running.ending() == .terminated(reason: "requested"))

        #expect(running.recorder.callbacks == [
            "didFinishLaunching", "configurationForConnecting s1", "willConnectTo s1",
            "willEnterForeground s1", "didBecomeActive s1", "willResignActive s1",
            "didEnterBackground s1", "stateRestorationActivity s1",
            "willEnterForeground s1", "openURLContexts s1", "didBecomeActive s1",
            "willContinueUserActivity s1 org.example.fake.view", "continue s1 org.example.fake.view",
            "willContinueUserActivity s1 org.example.fake.edit", "continue s1 org.example.fake.edit",
            "willTerminate", "stateRestorationActivity s1",
        ])
        #expect(running.recorder.opened == [
            "s1 fake:new?text=hi from org.example.mail", "s1 activity org.example.fake.edit doc-1",
            "s1 FAKE:weird path from org.example.other", "s1 fake:open?id=s1 from -",
            "s1 activity org.example.fake.view -", "s1 activity org.example.fake.edit doc-1",
        ])
        // Every event handled once, the unknown one and the empty one included.
        #expect(running.recorder.seqs == Array(1...15))
        let log = running.logLines.withLock { $0 }
        #expect(log.contains { $0.contains("openURLContexts 13 carries no URL") }, "\(log)")
    }

    @Test("an activity's fields arrive whole; a URL keeps its text as sent", .timeLimit(.minutes(10)))
    func valuesWhole() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-routing")
        defer { directory.remove() }
        let daemon = try FakeAppDaemon(directory: directory.path, events: Array(Self.script.prefix(3)) + [
            Self.e(4, "willTerminate", nil, "running", bounded: true),
            Self.e(5, "terminated", nil, "notRunning", extra: ["reason": "requested"]),
        ])
        defer { daemon.stop() }
        let delegate = CapturingSceneDelegate()
        let application = SceneApplication(app: "org.example.fake", options: .init(socketPath: daemon.path, log: { _ in }))
        #expect(try await application.run(delegate: QuietAppDelegate()) { _ in delegate } == .terminated(reason: "requested"))
        let options = try #require(delegate.options)
        #expect(options.urlContexts == [OpenURLContext(url: "fake:new?text=hi", options: OpenURLOptions(sourceApplication: "org.example.mail"))])
        let activity = try #require(options.userActivities.first)
        #expect(activity == UserActivity(activityType: "org.example.fake.edit", title: "Edit", userInfo: ["line": 3],
                                         targetContentIdentifier: "doc-1", webpageURL: "https://example.org/doc-1"))
        #expect(options.urlContexts.first?.components?.queryItems?.first?.value == "hi")
        let weird = OpenURLContext(url: "FAKE:weird path%zz")
        #expect(weird.url == "FAKE:weird path%zz" && weird.foundationURL?.absoluteString != weird.url,
                "Foundation rewrites it, SceneClient keeps the text: \(String(describing: weird.foundationURL))")
    }

    @Test("open, requestSceneSessionActivation and activation conditions send what the interface says", .timeLimit(.minutes(10)))
    func requestsOnTheWire() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-routing")
        defer { directory.remove() }
        let daemon = try FakeAppDaemon(directory: directory.path, events: Array(Self.script.prefix(5)), replies: [
            "Open": ["target": "org.example.maps", "open": "o7"],
            "RequestSceneSessionActivation": ["session": "s2"],
        ])
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, requestSceneAtLaunch: false)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        let application = running.application
        let result = try await application.open("maps:?q=harbour", activate: false)
        #expect(result == OpenResult(app: "org.example.maps", session: nil, pendingOpen: "o7"))
        _ = try await application.open(userActivity: UserActivity(activityType: "org.example.maps.route", targetContentIdentifier: "r1"))
        #expect(try await application.requestSceneSessionActivation(url: "fake:new?text=x") == "s2")
        _ = try await application.requestSceneSessionActivation(persistentIdentifier: "s1",
                                                                 userActivity: UserActivity(activityType: "org.example.fake.view"))
        let scene = try #require(application.connectedScenes.first)
        scene.activationConditions = SceneActivationConditions(canActivateFor: ["fake:open?id=s1"], prefersToActivateFor: ["fake:open?id=s1"])
        scene.activationConditions.canActivateFor = nil
        try await application.setActivationConditions(.default, for: scene)
        #expect(scene.activationConditions == .default)

        let sent = daemon.calls.map { call -> String in
            var p = call.parameters
            p["app"] = nil
            return "\(call.method.split(separator: ".").last ?? "") \(JSONValue.object(p).serializedString())"
        }
        #expect(sent == [
            #"Open {"url":"maps:?q=harbour","activate":false}"#,
            #"Open {"activity":{"activityType":"org.example.maps.route","targetContentIdentifier":"r1"},"activate":true}"#,
            #"RequestSceneSessionActivation {"url":"fake:new?text=x"}"#,
            #"RequestSceneSessionActivation {"session":"s1","activity":{"activityType":"org.example.fake.view"}}"#,
            // The two settings go in order, each whole; the default sends neither list.
            #"SetActivationConditions {"session":"s1","canActivateFor":["fake:open?id=s1"],"prefersToActivateFor":["fake:open?id=s1"]}"#,
            #"SetActivationConditions {"session":"s1","prefersToActivateFor":["fake:open?id=s1"]}"#,
            #"SetActivationConditions {"session":"s1"}"#,
        ], "\(sent)")
        try await application.detach()
        _ = try await running.ending()
    }

    @Test("a refused Open is the daemon's error; a refused setting goes to the log", .timeLimit(.minutes(10)))
    func refusals() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-routing")
        defer { directory.remove() }
        let daemon = try FakeAppDaemon(directory: directory.path, events: Array(Self.script.prefix(5)), replies: [
            "Open": ["error": "io.scened.Manager.NoHandler", "parameters": ["scheme": "nope", "message": "no app handles nope:"]],
            "SetActivationConditions": ["error": "io.scened.Manager.LimitExceeded",
                                        "parameters": ["limit": "patterns", "maximum": 32, "message": "too many"]],
        ])
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, requestSceneAtLaunch: false)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        let error = await #expect(throws: VarlinkError.self) { try await running.application.open("nope:x") }
        #expect(error?.name == "io.scened.Manager.NoHandler" && error?.parameters["scheme"]?.stringValue == "nope")
        let scene = try #require(running.application.connectedScenes.first)
        scene.activationConditions = SceneActivationConditions(canActivateFor: Array(repeating: "x", count: 33))
        try await eventually("the refusal in the log", seconds: 60) {
            running.logLines.withLock { $0 }.contains { $0.contains("activation conditions of s1 not set") && $0.contains("LimitExceeded") }
        }
        await #expect(throws: VarlinkError.self) { try await running.application.setActivationConditions(.default, for: scene) }
        try await running.application.detach()
        _ = try await running.ending()
    }
}

extension RoutingScriptTests {
    @Test("a setting that could not reach scened is sent again after the reattach; one that did is not", .timeLimit(.minutes(10)))
    func conditionsAfterReattach() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-routing")
        defer { directory.remove() }
        let launch = Array(Self.script.prefix(5))
        let first = try FakeAppDaemon(directory: directory.path, events: launch)
        let running = RunningApp(app: "org.example.fake", socketPath: first.path, requestSceneAtLaunch: false)
        try await eventually("s1 active") { running.recorder.callbacks.contains("didBecomeActive s1") }
        let scene = try #require(running.application.connectedScenes.first)
        let taken = SceneActivationConditions(canActivateFor: ["fake:a"])
        try await running.application.setActivationConditions(taken, for: scene)

        // scened goes away; the next setting finds no daemon.
        first.stop()
        try await eventually("the attach lost") { !running.application.isAttached }
        let unsent = SceneActivationConditions(canActivateFor: ["fake:b"], prefersToActivateFor: ["fake:b"])
        scene.activationConditions = unsent
        try await eventually("the failure logged", seconds: 60) {
            running.logLines.withLock { $0 }.contains { $0.contains("activation conditions of s1 not set") }
        }
        unlink(first.path)
        let second = try FakeAppDaemon(directory: directory.path, events: launch)
        defer { second.stop() }
        try await eventually("reattached", seconds: 120) { running.application.reattachCount == 1 && running.application.isAttached }
        let resent = { second.calls.filter { $0.method.hasSuffix(".SetActivationConditions") } }
        try await eventually("the setting sent again", seconds: 60) { !resent().isEmpty }
        await mainSleep(.milliseconds(300))
        #expect(resent().count == 1, "only the setting that was lost: \(resent().map(\.parameters))")
        #expect(resent().first?.parameters["canActivateFor"] == ["fake:b"])
        #expect(resent().first?.parameters["prefersToActivateFor"] == ["fake:b"])
        #expect(first.calls.filter { $0.method.hasSuffix(".SetActivationConditions") }.count == 1)
        #expect(running.recorder.seqs == Array(1...5), "the replayed launch is not handled twice")
        try await running.application.detach()
        _ = try await running.ending()
    }
}

/// Hostile: a scene whose openURLContexts handler hangs. SceneClient keeps UIKit's contract of
/// one callback at a time, in order: every later callback waits for it (none skipped, none
/// reordered, none lost), and a bounded callback stuck behind it overruns its deadline, which
/// scened answers by terminating the app as hung (R23), as UIKit's watchdog would.
@Suite("SceneClient with a hanging openURLContexts", .serialized)
@MainActor
struct RoutingHangTests {
    @Test("the callbacks queued behind a hanging handler come after it, in order; a deadline behind it overruns", .timeLimit(.minutes(10)))
    func laterEventsWait() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-hang")
        defer { directory.remove() }
        let e = RoutingScriptTests.e
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let daemon = try FakeAppDaemon(directory: directory.path, events: Array(RoutingScriptTests.script.prefix(5)) + [
            e(6, "openURLContexts", "s1", "foregroundActive", false, ["urlContexts": RoutingScriptTests.urls([("fake:slow", nil)])]),
            e(7, "continueUserActivity", "s1", "foregroundActive", false, ["userActivities": [RoutingScriptTests.view]]),
            e(8, "willResignActive", "s1", "foregroundInactive", false, [:]),
            // Due one second after the script was sent: the handler before it takes three.
            e(9, "didEnterBackground", "s1", "background", true, ["deadline": .int(now + 1_000_000)]),
            e(10, "openURLContexts", "s1", "background", false, ["urlContexts": RoutingScriptTests.urls([("fake:after", nil)])]),
        ])
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, requestSceneAtLaunch: false,
                                 hold: ["openURLContexts": .seconds(3)])
        try await eventually("the last URL") { running.recorder.opened.contains("s1 fake:after from -") }
        #expect(Array(running.recorder.callbacks.dropFirst(5)) == [
            "openURLContexts s1", "willContinueUserActivity s1 org.example.fake.view", "continue s1 org.example.fake.view",
            "willResignActive s1", "didEnterBackground s1", "stateRestorationActivity s1", "openURLContexts s1",
        ])
        // Nothing started while the first handler was held up.
        let spans = running.recorder.spans
        let held = try #require(spans.firstIndex { $0.name == "openURLContexts" })
        #expect(spans[held].end - spans[held].start >= .seconds(3))
        #expect(spans[(held + 1)...].allSatisfy { $0.start >= spans[held].end }, "a callback ran while openURLContexts hung")
        #expect(running.recorder.seqs == Array(1...10))
        // The answer went late: reported, and (the stand-in accepting it) not refused.
        try await eventually("the overrun") { !running.recorder.overruns.isEmpty }
        #expect(running.recorder.overruns.map(\.event) == ["didEnterBackground"])
        #expect(running.recorder.overruns.first.map { $0.overrun > .zero && !$0.refusedByDaemon } == true)
        #expect(daemon.calls.filter { $0.method.hasSuffix(".Acknowledge") }.map { $0.parameters["seq"]?.intValue } == [9])
        try await running.application.detach()
        _ = try await running.ending()
    }
}

@MainActor
final class QuietAppDelegate: ApplicationDelegate {}

/// Keeps willConnectTo's options.
@MainActor
final class CapturingSceneDelegate: SceneDelegate {
    var options: SceneConnectionOptions?
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: SceneConnectionOptions) async {
        options = connectionOptions
    }
}

/// Examples/python/scene_app.py with URLs and an activity, fed by the scripted stand-in: a
/// scene opened with a URL keeps it as its note, a connected one handed another keeps that one,
/// each saved at once.
@Suite("scene_app.py URLs", .serialized)
struct PythonRoutingTests {
    @Test("willConnectTo's urlContexts and openURLContexts become the scene's note, saved", .timeLimit(.minutes(5)))
    func urlsBecomeNotes() throws {
        let directory = TemporaryDirectory(prefix: "scene-app-py-url")
        defer { directory.remove() }
        let e = RoutingScriptTests.e
        let urls = RoutingScriptTests.urls
        let daemon = try FakeAppDaemon(directory: directory.path, events: [
            e(1, "didFinishLaunching", nil, "running", false, [:]),
            e(2, "configurationForConnecting", "s1", "unattached", false, [:]),
            e(3, "willConnectTo", "s1", "foregroundInactive", false, ["urlContexts": urls([("pynotes:draft?text=hi", nil)])]),
            e(4, "willEnterForeground", "s1", "foregroundInactive", false, [:]),
            e(5, "openURLContexts", "s1", "foregroundInactive", false, ["urlContexts": urls([("pynotes:other", "org.example.mail")])]),
            e(6, "didBecomeActive", "s1", "foregroundActive", false, [:]),
            e(7, "continueUserActivity", "s1", "foregroundActive", false, ["userActivities": [RoutingScriptTests.edit]]),
            e(8, "someFutureEvent", "s1", "foregroundActive", false, ["urlContexts": [["url": "pynotes:ignored"]]]),
            e(9, "willTerminate", nil, "running", true, [:]),
        ])
        defer { daemon.stop() }
        let result = try run(["/usr/bin/env", "python3", PythonBackgroundTests.script, "--socket", daemon.path,
                              "--app", "org.example.fake", "--no-scene"], in: directory.path, timeout: 120)
        #expect(result.status == 0, "\(result.summary)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("3 willConnectTo s1 new scene opened with pynotes:draft?text=hi"), "\(result.stdout)")
        #expect(lines.contains("5 openURLContexts s1 pynotes:other from org.example.mail"), "\(result.stdout)")
        #expect(lines.contains("7 continueUserActivity s1 activity org.example.fake.edit"), "\(result.stdout)")
        #expect(lines.contains("8 someFutureEvent s1"), "an unknown event is printed, nothing more: \(result.stdout)")
        let saved = daemon.calls.filter { $0.method.hasSuffix(".SaveState") }.map { $0.parameters["restoration"]?["json"]?["note"]?.stringValue }
        #expect(saved == ["pynotes:draft?text=hi", "pynotes:other", "Edit"], "\(daemon.calls.map(\.method))")
        let terminated = daemon.calls.last { $0.method.hasSuffix(".Acknowledge") }
        #expect(terminated?.parameters["restorations"]?["s1"]?["json"]?["note"]?.stringValue == "Edit")
    }
}
