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
