import Dispatch
import Foundation
import Locking
import SceneClient
import ScenedTestSupport
import Varlink

/// What the delegates saw, one line per callback ("willConnectTo s1"), and the sequence numbers
/// of the events SceneClient handled.
@MainActor
final class Recorder {
    var callbacks: [String] = []
    var seqs: [UInt64] = []
    var overruns: [DeadlineOverrun] = []
    /// What willConnectTo restored, by session.
    var restored: [String: RestorationData] = [:]
    var reconnects: [String: Bool] = [:]
    var sessionIDs: [String] = []
    /// Each scene callback with the cause SceneClient gave for it ("willResignActive s1 lock").
    var causes: [String] = []
    /// What each scene was opened with: "s1 URL from SOURCE" (willConnectTo's options and
    /// openURLContexts, sorted within one callback) and "s1 activity TYPE TARGET".
    var opened: [String] = []
    /// When each callback started and ended (monotonic), to tell a held-up callback from a late one.
    var spans: [(name: String, start: ContinuousClock.Instant, end: ContinuousClock.Instant)] = []

    func add(_ line: String) { callbacks.append(line) }
}

/// An app delegate that records every callback; it asks for one new scene when it launches.
@MainActor
final class RecordingAppDelegate: ApplicationDelegate {
    let recorder: Recorder
    var requestSceneAtLaunch: Bool

    init(_ recorder: Recorder, requestSceneAtLaunch: Bool = true) {
        self.recorder = recorder
        self.requestSceneAtLaunch = requestSceneAtLaunch
    }

    func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool {
        recorder.add("didFinishLaunching")
        if requestSceneAtLaunch {
            if let id = try? await application.requestSceneSessionActivation(role: .windowApplication, configuration: "Main",
                                                                              userInfo: ["document": "a"]) {
                recorder.sessionIDs.append(id)
            }
        }
        return true
    }

    func application(_ application: SceneApplication, configurationForConnecting connectingSceneSession: SceneSession,
                     options: SceneConnectionOptions) async -> SceneConfiguration {
        recorder.add("configurationForConnecting \(connectingSceneSession.persistentIdentifier)")
        return SceneConfiguration(name: connectingSceneSession.configuration, role: connectingSceneSession.role)
    }

    func application(_ application: SceneApplication, didDiscardSceneSessions sceneSessions: Set<SceneSession>) async {
        recorder.add("didDiscardSceneSessions \(sceneSessions.map(\.persistentIdentifier).sorted().joined(separator: ","))")
    }

    func applicationDidReceiveMemoryWarning(_ application: SceneApplication) async { recorder.add("didReceiveMemoryWarning") }

    func applicationWillTerminate(_ application: SceneApplication) async { recorder.add("willTerminate") }

    func application(_ application: SceneApplication, didOverrunDeadline overrun: DeadlineOverrun) async {
        recorder.overruns.append(overrun)
    }
}

/// A scene delegate with a counter it saves in its restoration data and restores from it.
@MainActor
final class RecordingSceneDelegate: SceneDelegate {
    let recorder: Recorder
    var counter = 0
    /// Suspends each callback a little, so that events queue up behind a slow handler.
    let delay: Duration?
    /// How long one callback (by its name in the Recorder's notation) is held up instead.
    let hold: [String: Duration]

    init(_ recorder: Recorder, delay: Duration? = nil, hold: [String: Duration] = [:]) {
        self.recorder = recorder
        self.delay = delay
        self.hold = hold
    }

    private func note(_ name: String, _ scene: Scene, _ detail: String? = nil) async {
        let start = ContinuousClock.now
        recorder.add("\(name) \(scene.session.persistentIdentifier)" + (detail.map { " " + $0 } ?? ""))
        recorder.causes.append("\(name) \(scene.session.persistentIdentifier) \(scene.application.lastEventCause?.rawValue ?? "-")")
        if let delay = hold[name] ?? delay { await mainSleep(delay) }
        recorder.spans.append((name, start, ContinuousClock.now))
    }

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: SceneConnectionOptions) async {
        if let data = session.stateRestorationActivity {
            recorder.restored[session.persistentIdentifier] = data
            if case .json(let object) = data, let saved = object["counter"]?.intValue { counter = Int(saved) }
        }
        recorder.reconnects[session.persistentIdentifier] = connectionOptions.isReconnect
        record(scene, connectionOptions.urlContexts, connectionOptions.userActivities)
        await note("willConnectTo", scene)
    }
    func scene(_ scene: Scene, openURLContexts urlContexts: Set<OpenURLContext>) async {
        record(scene, urlContexts, [])
        await note("openURLContexts", scene)
    }
    func scene(_ scene: Scene, willContinueUserActivityWithType userActivityType: String) async {
        await note("willContinueUserActivity", scene, userActivityType)
    }
    func scene(_ scene: Scene, continue userActivity: UserActivity) async {
        record(scene, [], [userActivity])
        await note("continue", scene, userActivity.activityType)
    }
    private func record(_ scene: Scene, _ urls: Set<OpenURLContext>, _ activities: Set<UserActivity>) {
        let id = scene.session.persistentIdentifier
        recorder.opened += urls.sorted { $0.url < $1.url }.map { "\(id) \($0.url) from \($0.options.sourceApplication ?? "-")" }
        recorder.opened += activities.sorted { $0.activityType < $1.activityType }.map {
            "\(id) activity \($0.activityType) \($0.targetContentIdentifier ?? "-")"
        }
    }
    func sceneWillEnterForeground(_ scene: Scene) async { await note("willEnterForeground", scene) }
    func sceneDidBecomeActive(_ scene: Scene) async {
        counter += 1
        await note("didBecomeActive", scene)
    }
    func sceneWillResignActive(_ scene: Scene) async { await note("willResignActive", scene) }
    func sceneDidEnterBackground(_ scene: Scene) async { await note("didEnterBackground", scene) }
    func sceneDidDisconnect(_ scene: Scene) async { await note("didDisconnect", scene) }
    func stateRestorationActivity(for scene: Scene) async -> RestorationData? {
        recorder.add("stateRestorationActivity \(scene.session.persistentIdentifier)")
        return .json(["counter": .int(Int64(counter)), "session": .string(scene.session.persistentIdentifier)])
    }
}

/// The callbacks SceneClient owes for the Monitor's events, in order. At willTerminate, after
/// applicationWillTerminate, each scene still connected is asked for its state, by session id.
func expectedCallbacks(for events: [JSONValue]) -> [String] {
    var connected: Set<String> = []
    var out: [String] = []
    for e in events {
        let session = e["session"]?.stringValue ?? ""
        switch e["event"]?.stringValue ?? "" {
        case "willConnectTo": connected.insert(session)
        case "didDisconnect": connected.remove(session)
        case "terminated": connected = []
        default: break
        }
        out += expectedCallbacks(e)
        if e["event"]?.stringValue == "willTerminate" { out += connected.sorted().map { "stateRestorationActivity \($0)" } }
    }
    return out
}

/// The callbacks SceneClient owes for one Monitor event, in the Recorder's notation.
func expectedCallbacks(_ event: JSONValue) -> [String] {
    let session = event["session"]?.stringValue ?? ""
    switch event["event"]?.stringValue ?? "" {
    case "didFinishLaunching": return ["didFinishLaunching"]
    case "configurationForConnecting": return ["configurationForConnecting \(session)"]
    case "willConnectTo", "willEnterForeground", "didBecomeActive", "willResignActive", "didDisconnect", "openURLContexts":
        return ["\(event["event"]!.stringValue!) \(session)"]
    case "continueUserActivity":
        return (event["userActivities"]?.arrayValue ?? []).flatMap { a -> [String] in
            let type = a["activityType"]?.stringValue ?? ""
            return ["willContinueUserActivity \(session) \(type)", "continue \(session) \(type)"]
        }
    case "didEnterBackground": return ["didEnterBackground \(session)", "stateRestorationActivity \(session)"]
    case "didDiscardSceneSessions":
        return ["didDiscardSceneSessions " + (event["sessions"]?.arrayValue ?? []).compactMap(\.stringValue).sorted().joined(separator: ",")]
    case "didReceiveMemoryWarning": return ["didReceiveMemoryWarning"]
    case "willTerminate": return ["willTerminate"]
    default: return []
    }
}

/// A value handed to one other thread and used only there from then on.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A Monitor subscription read on its own thread.
final class MonitorFeed: @unchecked Sendable {
    private let events = Locked<[JSONValue]>([])
    private let stopped = Locked(false)
    private let confirmed = Locked(false)
    private let failure = Locked<String?>(nil)

    init(socketPath: String, app: String, since: UInt64? = nil) throws {
        let client = UncheckedBox(try VarlinkClient(path: socketPath, timeout: .milliseconds(100)))
        var parameters: JSONObject = ["app": .string(app)]
        if let since { parameters["since"] = .int(Int64(since)) }
        try client.value.sendRaw(VarlinkCall(method: "io.scened.Manager.Monitor", parameters: parameters, more: true).encoded())
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                do {
                    let reply = try VarlinkReply(from: try client.value.receiveMessage())
                    if let error = reply.error { failure.withLock { $0 = "Monitor failed: \(error)" }; return }
                    if let event = reply.parameters["event"] {
                        events.withLock { $0.append(event) }
                    } else {
                        confirmed.withLock { $0 = true }
                    }
                } catch VarlinkClientError.timedOut {
                    continue
                } catch {
                    failure.withLock { $0 = "Monitor ended: \(error)" }
                    return
                }
            }
            client.value.close()
        }
        thread.start()
        guard waitUntil(seconds: 10, { confirmed.withLock { $0 } }) else {
            stop()
            throw TestFailure("Monitor did not confirm its subscription within 10 s")
        }
    }

    var all: [JSONValue] { events.withLock { $0 } }
    var error: String? { failure.withLock { $0 } }

    func stop() { stopped.withLock { $0 = true } }
    deinit { stop() }

    /// Waits until an event satisfies `condition`; the events up to it.
    func wait(seconds: Double = 300, _ what: String, for condition: (JSONValue) -> Bool) throws -> [JSONValue] {
        var found: [JSONValue]?
        _ = waitUntil(seconds: seconds) {
            let now = all
            if let i = now.firstIndex(where: condition) { found = Array(now[...i]) }
            return found != nil
        }
        guard let found else { throw TestFailure("no \(what) on the Monitor within \(seconds) s; saw \(all.map(describe)); \(error ?? "")") }
        return found
    }
}

func describe(_ e: JSONValue) -> String {
    "#\(e["seq"]?.intValue ?? -1) \(e["event"]?.stringValue ?? "?") \(e["session"]?.stringValue ?? "")"
}

/// A blocking Manager call, off the main actor (whose callbacks it would otherwise hold up).
@discardableResult
func manager(_ socketPath: String, _ method: String, _ parameters: JSONObject = [:]) async throws -> JSONObject {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONObject, any Error>) in
        managerCalls.async {
            do {
                let client = try VarlinkClient(path: socketPath, timeout: .seconds(20))
                continuation.resume(returning: try client.call("io.scened.Manager." + method, parameters))
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// A queue of its own: the global queues' threads (which also run the cooperative pool, two on
/// this machine) can all be held by other suites' blocking tests for minutes.
let managerCalls = DispatchQueue(label: "scene-client-tests.manager")

/// Sleeps on the main queue's timer, not Task.sleep: its wake-up goes through a global queue,
/// which the blocking tests of other suites running in parallel can keep busy for minutes (the
/// deadlines here then pass with nothing having been given a chance to run).
@MainActor
func mainSleep(_ duration: Duration) async {
    let (seconds, attoseconds) = duration.components
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.main.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { continuation.resume() }
    }
}

/// Polls `condition` on the main actor every 10 ms for up to `seconds`.
@MainActor
func eventually(_ what: String, seconds: Double = 300, _ condition: @MainActor () -> Bool) async throws {
    let deadline = Deadline(seconds: seconds)
    while !condition() {
        if deadline.hasPassed { throw TestFailure("timed out after \(seconds) s waiting for \(what)") }
        await mainSleep(.milliseconds(10))
    }
}

struct RunError: Error, Sendable, CustomStringConvertible {
    let text: String
    var description: String { text }
}

/// A SceneApplication running in a task, with its recorder.
@MainActor
final class RunningApp {
    let application: SceneApplication
    let recorder = Recorder()
    let task: Task<Result<SceneApplicationEnding, RunError>, Never>
    let logLines = Locked<[String]>([])

    init(app: String, socketPath: String, requestSceneAtLaunch: Bool = true, sceneDelay: Duration? = nil,
         hold: [String: Duration] = [:], delegate custom: (any ApplicationDelegate)? = nil) {
        let lines = logLines
        let recorder = recorder
        application = SceneApplication(app: app, options: .init(
            socketPath: socketPath, connectTimeout: .seconds(10), reattachTimeout: .seconds(30), requestTimeout: .seconds(10),
            onEvent: { event in recorder.seqs.append(event.seq) },
            log: { line in lines.withLock { $0.append(line) } }))
        let application = application
        let delegate = custom ?? RecordingAppDelegate(recorder, requestSceneAtLaunch: requestSceneAtLaunch)
        task = Task { @MainActor in
            do {
                return .success(try await application.run(delegate: delegate) { _ in RecordingSceneDelegate(recorder, delay: sceneDelay, hold: hold) })
            } catch {
                return .failure(RunError(text: "\(error)"))
            }
        }
    }

    /// Waits for run() to return, at most `seconds`.
    func ending(seconds: Double = 300) async throws -> SceneApplicationEnding {
        let deadline = Deadline(seconds: seconds)
        let box = Locked<Result<SceneApplicationEnding, RunError>?>(nil)
        let task = task
        Task {
            let result = await task.value
            box.withLock { $0 = result }
        }
        while box.withLock({ $0 }) == nil {
            if deadline.hasPassed { throw TestFailure("run() did not return within \(seconds) s; log: \(logLines.withLock { $0 })") }
            await mainSleep(.milliseconds(10))
        }
        return try box.withLock { $0! }.get()
    }
}

/// SIGTERM, then the exit awaited without blocking the main actor: the stop waits for the
/// in-process app to answer its didEnterBackground (R32), which it does on the main actor.
func stopAnswering(_ daemon: DaemonProcess) async throws {
    let child = daemon.child
    child.signal(SIGTERM)
    let deadline = Deadline(seconds: 30)
    while child.isRunning {
        if deadline.hasPassed { throw TestFailure("scened did not exit within 30 s of SIGTERM") }
        await mainSleep(.milliseconds(10))
    }
    let status = child.finish(within: 5)
    guard status == 0 else { throw TestFailure("scened exited with \(status) after SIGTERM: \(child.outcome)") }
}
