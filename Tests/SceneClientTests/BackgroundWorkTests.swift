import Foundation
import SceneClient
import ScenedTestSupport
import Testing
import Varlink

/// An app delegate that registers three launch handlers as it launches and records what
/// background work reaches it.
@MainActor
final class BackgroundDelegate: ApplicationDelegate {
    var lines: [String] = []
    var notifications: [RemoteNotification] = []
    /// Tasks a handler left running (their expiration is the test).
    var kept: [BackgroundTask] = []
    var registrations: [String: Bool] = [:]
    var submitError: String?

    func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool {
        lines.append("didFinishLaunching \(launchOptions?.cause ?? "-")")
        let scheduler = application.taskScheduler
        registrations["notes.refresh"] = scheduler.register(forTaskWithIdentifier: "notes.refresh") { [unowned self, unowned application] task in
            lines.append("refresh \(task.kind.rawValue) seq \(task.seq) deadline \(task.deadline != nil)")
            // Registration closed with the launch; the next refresh is submitted, then done.
            registrations["late"] = application.taskScheduler.register(forTaskWithIdentifier: "late") { _ in }
            do {
                try await application.taskScheduler.submit(AppRefreshTaskRequest(
                    identifier: "notes.refresh", earliestBeginDate: Date(timeIntervalSince1970: 2_000_000_000.5)))
                try await application.taskScheduler.submit(ProcessingTaskRequest(identifier: "unregistered"))
            } catch {
                submitError = "\(error)"
            }
            task.setTaskCompleted(success: true)
            task.setTaskCompleted(success: false)
        }
        registrations["notes.cleanup"] = scheduler.register(forTaskWithIdentifier: "notes.cleanup") { [unowned self] task in
            lines.append("cleanup \(task.kind.rawValue)")
            kept.append(task)
            task.expirationHandler = { [unowned self, unowned task] in
                lines.append("cleanup expired")
                task.setTaskCompleted(success: false)
            }
        }
        registrations["notes.silent"] = scheduler.register(forTaskWithIdentifier: "notes.silent") { [unowned self] task in
            lines.append("silent")
            kept.append(task)
        }
        registrations["again"] = scheduler.register(forTaskWithIdentifier: "notes.refresh") { _ in }
        registrations["empty"] = scheduler.register(forTaskWithIdentifier: "") { _ in }
        registrations["long"] = scheduler.register(forTaskWithIdentifier: String(repeating: "x", count: 256)) { _ in }
        return true
    }

    func application(_ application: SceneApplication, didReceiveNotification notification: RemoteNotification) async {
        notifications.append(notification)
        lines.append("notification \(notification.identifier) \(notification.payload["text"]?.stringValue ?? "-")")
    }
}

/// SceneClient's side of background work (issue 36), fed by the scripted stand-in for scened:
/// launch handlers, completion, expiration, notifications answered, and bad or many events.
@Suite("SceneClient background work", .serialized)
@MainActor
struct BackgroundWorkTests {
    static func e(_ seq: Int64, _ name: String, bounded: Bool = true, _ extra: JSONObject = [:]) -> JSONObject {
        FakeAppDaemon.event(seq, name, nil, state: "running", cause: "background", bounded: bounded, extra: extra)
    }

    static func calls(_ daemon: FakeAppDaemon, _ method: String) -> [JSONObject] {
        daemon.calls.filter { $0.method == "io.scened.App." + method }.map(\.parameters)
    }

    @Test("launch handlers get their tasks; completion, expiration and notifications are answered as R34 says", .timeLimit(.minutes(10)))
    func tasksAndNotifications() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-bg")
        defer { directory.remove() }
        let script: [JSONObject] = [
            Self.e(1, "didFinishLaunching", bounded: false),
            Self.e(2, "performBackgroundTask", ["kind": "refresh", "identifier": "notes.refresh"]),
            Self.e(3, "performBackgroundTask", ["kind": "refresh", "identifier": "old.task"]),
            Self.e(4, "didReceiveNotification", ["kind": "notification", "notification": "n7", "payload": ["text": "hi"]]),
            Self.e(5, "performBackgroundTask", ["kind": "processing", "identifier": "notes.cleanup"]),
            Self.e(6, "performBackgroundTask", ["kind": "refresh", "identifier": "notes.silent"]),
            Self.e(7, "backgroundTaskWillExpire", ["kind": "processing", "identifier": "notes.cleanup"]),
            Self.e(8, "backgroundTaskWillExpire", ["kind": "refresh", "identifier": "notes.silent"]),
            // Completed already: nothing is sent again.
            Self.e(9, "backgroundTaskWillExpire", ["kind": "refresh", "identifier": "notes.refresh"]),
            FakeAppDaemon.event(10, "terminated", nil, state: "notRunning", cause: "request", extra: ["reason": "requested"]),
        ]
        let daemon = try FakeAppDaemon(directory: directory.path, events: script)
        defer { daemon.stop() }
        let delegate = BackgroundDelegate()
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, delegate: delegate)
        #expect(try await running.ending() == .terminated(reason: "requested"))

        #expect(delegate.lines == [
            "didFinishLaunching background", "refresh refresh seq 2 deadline true", "notification n7 hi",
            "cleanup processing", "silent", "cleanup expired",
        ])
        #expect(delegate.registrations == ["notes.refresh": true, "notes.cleanup": true, "notes.silent": true,
                                           "again": false, "empty": false, "long": false, "late": false])
        #expect(delegate.submitError?.contains("no launch handler is registered for unregistered") == true, "\(delegate.submitError ?? "")")
        #expect(delegate.notifications.first?.seq == 4)

        let scheduled = Self.calls(daemon, "ScheduleBackgroundTask")
        #expect(scheduled == [["app": "org.example.fake", "identifier": "notes.refresh", "kind": "refresh",
                               "earliestBegin": .int(2_000_000_000_500_000)]])
        // performBackgroundTask is answered by completion only, never by Acknowledge.
        #expect(Self.calls(daemon, "Acknowledge").compactMap { $0["seq"]?.intValue } == [4])
        let completions = Self.calls(daemon, "CompleteBackgroundTask").map {
            "\($0["identifier"]?.stringValue ?? "?") \($0["success"]?.boolValue.map(String.init) ?? "?")"
        }
        #expect(completions == ["notes.refresh true", "old.task false", "notes.cleanup false", "notes.silent false"])
        #expect(daemon.calls.last?.method == "io.scened.App.Detach")
        let log = running.logLines.withLock { $0 }
        #expect(log.contains { $0.contains("no launch handler is registered for background task old.task") }, "\(log)")
        #expect(log.contains { $0.contains("notes.silent expires and has no expiration handler") }, "\(log)")
        #expect(log.contains { $0.contains("notes.refresh expires but is not running here") }, "\(log)")
        #expect(running.recorder.overruns.isEmpty)
    }

    @Test("an event that cannot be read (a duplicate key) fails the run at once instead of reattaching for ever", .timeLimit(.minutes(10)))
    func unreadableEvent() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-bg")
        defer { directory.remove() }
        let daemon = try FakeAppDaemon(directory: directory.path, events: [Self.e(1, "didFinishLaunching", bounded: false)], rawTail: [
            #"{"parameters":{"event":{"seq":2,"time":1,"event":"backgroundTaskWillExpire","app":"org.example.fake","#
                + #""state":"running","appState":"background","cause":"timer","kind":"refresh","identifier":"a","#
                + #""deadline":1,"deadline":2}},"continues":true}"#,
        ])
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, delegate: BackgroundDelegate())
        await #expect(throws: (any Error).self) { _ = try await running.ending() }
        if case .failure(let error) = await running.task.value {
            #expect(error.text.contains("cannot read") && error.text.contains("duplicate"), "\(error)")
        }
        #expect(daemon.attaches == 1, "one attach, not a loop of them")
        #expect(running.recorder.seqs == [1], "the readable event was handled")
    }

    @Test("a flood of notifications and malformed wake events: each answered once, in order, nothing lost", .timeLimit(.minutes(10)))
    func floodAndMalformed() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-bg")
        defer { directory.remove() }
        let count = 1_000
        var script: [JSONObject] = [Self.e(1, "didFinishLaunching", bounded: false)]
        // Half-done events: a task without an identifier, a notification without payload or id.
        script.append(Self.e(2, "performBackgroundTask", ["kind": "refresh"]))
        script.append(Self.e(3, "didReceiveNotification"))
        script.append(Self.e(4, "backgroundTaskWillExpire", ["kind": "refresh"]))
        for i in 0..<count {
            script.append(Self.e(Int64(5 + i), "didReceiveNotification",
                                 ["kind": "notification", "notification": .string("n\(i)"), "payload": ["text": .string("\(i)")]]))
        }
        script.append(FakeAppDaemon.event(Int64(5 + count), "terminated", nil, state: "notRunning", cause: "request",
                                          extra: ["reason": "requested"]))
        let daemon = try FakeAppDaemon(directory: directory.path, events: script)
        defer { daemon.stop() }
        let delegate = BackgroundDelegate()
        let start = ContinuousClock.now
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, delegate: delegate)
        #expect(try await running.ending() == .terminated(reason: "requested"))
        let elapsed = ContinuousClock.now - start

        #expect(delegate.notifications.count == count + 1)
        #expect(delegate.notifications.first?.payload == [:] && delegate.notifications.first?.identifier == "")
        #expect(delegate.notifications.dropFirst().map(\.identifier) == (0..<count).map { "n\($0)" })
        let acknowledged = Self.calls(daemon, "Acknowledge").compactMap { $0["seq"]?.intValue }
        #expect(acknowledged == [3] + (0..<count).map { Int64(5 + $0) })
        #expect(Self.calls(daemon, "CompleteBackgroundTask").isEmpty)
        #expect(running.logLines.withLock { $0 }.contains { $0.contains("performBackgroundTask 2 names no task") })
        // Bounded, not a benchmark: one answer per notification over a Unix socket.
        #expect(elapsed < .seconds(300), "\(count) notifications took \(elapsed)")
        print("BackgroundWorkTests: \(count) notifications handled and acknowledged in \(elapsed)")
    }
}

/// Records each task it is handed; completes `e2e.refresh` at once and leaves `e2e.slow` to
/// its expiration (with a handler) and `e2e.silent` without one.
@MainActor
final class LiveBackgroundDelegate: ApplicationDelegate {
    var lines: [String] = []

    func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool {
        let scheduler = application.taskScheduler
        scheduler.register(forTaskWithIdentifier: "e2e.refresh") { [unowned self] task in
            lines.append("perform \(task.identifier)")
            task.setTaskCompleted(success: true)
        }
        scheduler.register(forTaskWithIdentifier: "e2e.slow") { [unowned self] task in
            lines.append("perform \(task.identifier)")
            task.expirationHandler = { [unowned self, unowned task] in
                lines.append("expired \(task.identifier)")
                task.setTaskCompleted(success: false)
            }
        }
        scheduler.register(forTaskWithIdentifier: "e2e.silent") { [unowned self] task in lines.append("perform \(task.identifier)") }
        return true
    }

    func application(_ application: SceneApplication, didReceiveNotification notification: RemoteNotification) async {
        lines.append("notification \(notification.identifier) \(notification.payload["text"]?.stringValue ?? "-")")
    }
}

/// The same against the real scened (R34): a suspended app is resumed for a task or a
/// notification and suspended again by the answer, or by the expiration when it gives none.
@Suite("SceneClient background work with the real daemon", .serialized)
@MainActor
struct LiveBackgroundWorkTests {
    /// Suspended soon after its last scene went; answers long; budgets short where examined.
    static let configuration = makeConfiguration(refreshBudget: "2s")
    /// For the tests whose tasks are completed at once: a budget no busy main actor can
    /// outlast (under the whole suite, a 2 s one expired before the handler ran).
    static let patientConfiguration = makeConfiguration(refreshBudget: "10min")

    static func makeConfiguration(refreshBudget: String) -> String {
        Workspace.calmConfiguration + """

        [Lifecycle]
        SuspendDelaySec=200ms
        ExpirationGraceSec=500ms
        DidEnterBackgroundTimeoutSec=10min
        WillTerminateTimeoutSec=10min
        [Background]
        CoalesceSec=0
        RefreshBudgetSec=\(refreshBudget)
        NotificationBudgetSec=10min
        """
    }

    /// The Monitor's event names after the first `index`.
    static func names(_ events: [JSONValue], from index: Int) -> [String] {
        events.dropFirst(index).compactMap { $0["event"]?.stringValue }
    }

    /// didFinishLaunching handled: the launch handlers are registered (scened may have
    /// suspended the app before the main actor, busy with other suites, got to it).
    static func launched(_ running: RunningApp) async throws {
        try await eventually("the launch handlers") { running.application.taskScheduler.registeredIdentifiers.count == 3 }
    }

    /// The Monitor's events up to the first `suspended` after the first `index`, waited for
    /// without blocking the main actor (the app's callbacks run on it).
    static func untilSuspended(_ feed: MonitorFeed, after index: Int, _ what: String) async throws -> [JSONValue] {
        var found: [JSONValue]?
        var ended = false
        let seen = { (all: [JSONValue]) in
            all.prefix(index + 20).map { "\(describe($0)) \($0["cause"]?.stringValue ?? "") \($0["reason"]?.stringValue ?? "")" }
        }
        do {
            try await eventually(what) {
                let all = feed.all
                let end = all.indices.dropFirst(index).first { ["suspended", "terminated"].contains(all[$0]["event"]?.stringValue ?? "") }
                if let end { found = Array(all[...end]) }
                ended = end.map { all[$0]["event"]?.stringValue == "terminated" } ?? false
                return found != nil || feed.error != nil
            }
        } catch {
            throw TestFailure("\(error); the Monitor saw \(seen(feed.all))")
        }
        guard let found, !ended else { throw TestFailure("\(what): \(feed.error ?? "terminated instead"); \(seen(feed.all))") }
        return found
    }

    @Test("a task and a notification wake the suspended app; each answer suspends it again", .timeLimit(.minutes(10)))
    func wakeAnswerSuspend() async throws {
        let workspace = try Workspace(configuration: Self.patientConfiguration)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.bgclient"
        let feed = try MonitorFeed(socketPath: socket, app: app)
        defer { feed.stop() }
        let delegate = LiveBackgroundDelegate()
        let running = RunningApp(app: app, socketPath: socket, requestSceneAtLaunch: false, delegate: delegate)
        var seen = try await Self.untilSuspended(feed, after: 0, "suspended after the launch").count
        try await Self.launched(running)

        try await running.application.taskScheduler.submit(AppRefreshTaskRequest(identifier: "e2e.refresh"))
        let afterTask = try await Self.untilSuspended(feed, after: seen, "suspended after the task")
        #expect(Self.names(afterTask, from: seen) == ["resumed", "performBackgroundTask", "suspended"], "\(afterTask.map(describe))")
        let perform = afterTask.first { $0["event"]?.stringValue == "performBackgroundTask" }
        #expect(perform?["identifier"]?.stringValue == "e2e.refresh" && perform?["kind"]?.stringValue == "refresh")
        #expect(perform?["cause"]?.stringValue == "background" && perform?["deadline"]?.intValue != nil)
        seen = afterTask.count

        let reply = try await manager(socket, "Notify", ["app": .string(app), "payload": ["text": "hi"]])
        let id = try #require(reply["notification"]?.stringValue)
        let afterNote = try await Self.untilSuspended(feed, after: seen, "suspended after the notification")
        #expect(Self.names(afterNote, from: seen) == ["resumed", "didReceiveNotification", "suspended"], "\(afterNote.map(describe))")
        #expect(delegate.lines == ["perform e2e.refresh", "notification \(id) hi"])
        let work = try await manager(socket, "ListBackgroundWork", ["app": .string(app)])
        #expect(work["tasks"]?.arrayValue?.isEmpty == true && work["notifications"]?.arrayValue?.isEmpty == true
                && work["wakes"]?.arrayValue?.isEmpty == true, "\(work)")
        #expect(running.recorder.overruns.isEmpty)

        // Cancelling what no longer waits: NoSuchBackgroundTask.
        await #expect(throws: VarlinkError.self) {
            try await running.application.taskScheduler.cancel(taskRequestWithIdentifier: "e2e.refresh")
        }
        try await running.application.detach()
        _ = try await running.ending()
        try daemon.stop()
    }

    @Test("a notification handled before a kill -9 of scened is not handed over again after the reattach; the next one is",
          .timeLimit(.minutes(10)))
    func notificationAcrossACrash() async throws {
        let workspace = try Workspace(configuration: Self.configuration)
        var daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.bgcrash"
        let feed = try MonitorFeed(socketPath: socket, app: app)
        defer { feed.stop() }
        let delegate = LiveBackgroundDelegate()
        let running = RunningApp(app: app, socketPath: socket, requestSceneAtLaunch: false, delegate: delegate)
        let seen = try await Self.untilSuspended(feed, after: 0, "suspended after the launch").count
        try await Self.launched(running)
        let first = try await manager(socket, "Notify", ["app": .string(app), "payload": ["text": "one"]])
        _ = try await Self.untilSuspended(feed, after: seen, "suspended after the first notification")

        daemon.crash()
        _ = daemon.child.wait(seconds: 5)
        daemon = try DaemonProcess(workspace)
        try await eventually("the reattach") { running.application.reattachCount == 1 && running.application.isAttached }
        let second = try await manager(socket, "Notify", ["app": .string(app), "payload": ["text": "two"]])
        let ids = [first, second].compactMap { $0["notification"]?.stringValue }
        #expect(ids.count == 2 && ids[0] != ids[1], "ids are not reused across a restart: \(ids)")
        try await eventually("the second notification") { delegate.lines.count == 2 }
        // A moment for a wrongly repeated first one to arrive behind it.
        await mainSleep(.milliseconds(500))
        #expect(delegate.lines == ids.enumerated().map { "notification \($1) \($0 == 0 ? "one" : "two")" })
        try await running.application.detach()
        _ = try await running.ending()
        try daemon.stop()
    }

    @Test("a task left running gets its expiration handler, or is completed for it, and the app is suspended", .timeLimit(.minutes(10)))
    func expiration() async throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        let socket = workspace.socketPath
        let app = "org.example.bgexpire"
        let feed = try MonitorFeed(socketPath: socket, app: app)
        defer { feed.stop() }
        let delegate = LiveBackgroundDelegate()
        let running = RunningApp(app: app, socketPath: socket, requestSceneAtLaunch: false, delegate: delegate)
        var before = try await Self.untilSuspended(feed, after: 0, "suspended after the launch").count
        try await Self.launched(running)

        for identifier in ["e2e.slow", "e2e.silent"] {
            try await running.application.taskScheduler.submit(AppRefreshTaskRequest(identifier: identifier))
            let events = try await Self.untilSuspended(feed, after: before, "suspended after \(identifier)")
            #expect(Self.names(events, from: before) == ["resumed", "performBackgroundTask", "backgroundTaskWillExpire", "suspended"],
                    "\(identifier): \(events.map(describe))")
            before = events.count
        }
        #expect(delegate.lines == ["perform e2e.slow", "expired e2e.slow", "perform e2e.silent"])
        try await eventually("the log line") {
            running.logLines.withLock { $0 }.contains { $0.contains("e2e.silent expires and has no expiration handler") }
        }
        try await running.application.detach()
        _ = try await running.ending()
        try daemon.stop()
    }
}

/// Examples/python/scene_app.py's background work, fed by the scripted stand-in for scened:
/// what it sends for a refresh, a notification, an unknown task and an expiration.
@Suite("scene_app.py background work", .serialized)
struct PythonBackgroundTests {
    static let script = FakeAppDaemon.interfaceDirectory.replacingOccurrences(of: "/interfaces", with: "/Examples/python/scene_app.py")

    @Test("a refresh is completed and scheduled again, a notification answered, the rest completed unsuccessfully", .timeLimit(.minutes(5)))
    func refreshAndNotification() throws {
        let directory = TemporaryDirectory(prefix: "scene-app-py")
        defer { directory.remove() }
        let e = { (seq: Int64, name: String, extra: JSONObject) in
            FakeAppDaemon.event(seq, name, nil, state: "running", cause: "background", bounded: name != "didFinishLaunching", extra: extra)
        }
        let daemon = try FakeAppDaemon(directory: directory.path, events: [
            e(1, "didFinishLaunching", [:]),
            e(2, "performBackgroundTask", ["kind": "refresh", "identifier": "py.refresh"]),
            e(3, "didReceiveNotification", ["kind": "notification", "notification": "n4", "payload": ["text": "hi"]]),
            e(4, "performBackgroundTask", ["kind": "processing", "identifier": "other.task"]),
            e(5, "backgroundTaskWillExpire", ["kind": "refresh", "identifier": "py.refresh"]),
            e(6, "willTerminate", [:]),
        ])
        defer { daemon.stop() }
        let before = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let result = try run(["/usr/bin/env", "python3", Self.script, "--socket", daemon.path, "--app", "org.example.fake",
                              "--no-scene", "--refresh", "60"], in: directory.path, timeout: 120)
        #expect(result.status == 0, "\(result.summary)")
        let calls = daemon.calls.map { call -> String in
            let p = call.parameters
            let name = String(call.method.split(separator: ".").last ?? "")
            switch name {
            case "ScheduleBackgroundTask": return "\(name) \(p["identifier"]?.stringValue ?? "?") \(p["kind"]?.stringValue ?? "?")"
            case "CompleteBackgroundTask": return "\(name) \(p["identifier"]?.stringValue ?? "?") \(p["success"]?.boolValue == true)"
            case "Acknowledge": return "\(name) \(p["seq"]?.intValue ?? -1)"
            default: return name
            }
        }
        #expect(calls == [
            "ScheduleBackgroundTask py.refresh refresh", "ScheduleBackgroundTask py.refresh refresh",
            "CompleteBackgroundTask py.refresh true", "Acknowledge 3", "CompleteBackgroundTask other.task false",
            "CompleteBackgroundTask py.refresh false", "Acknowledge 6", "Detach",
        ], "\(result.summary)")
        // A minute ahead, in microseconds since the epoch.
        let begin = daemon.calls.first?.parameters["earliestBegin"]?.intValue ?? 0
        #expect(begin >= before + 59_000_000 && begin <= before + 180_000_000, "\(begin) vs \(before)")
        #expect(result.stdout.contains("2 performBackgroundTask py.refresh refresh completed, refreshes 1"), "\(result.stdout)")
        #expect(result.stdout.contains("3 didReceiveNotification n4 {\"text\": \"hi\"} answered"), "\(result.stdout)")
    }
}
