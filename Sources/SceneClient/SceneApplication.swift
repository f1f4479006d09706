import Foundation
import Locking
import SceneInterface
import Varlink

/// UIApplication for a scened app: attaches to scened as the app, turns the app's io.scened.App
/// events into delegate callbacks (strictly in order, one at a time, on the main actor),
/// answers the bounded ones when their handler returns, makes the app's requests, and
/// reattaches by itself when scened restarts.
///
///     let app = SceneApplication(app: "org.example.notes")
///     let ending = try await app.run(delegate: AppDelegate()) { _ in NotesScene() }
@MainActor
public final class SceneApplication {
    public struct Options: Sendable {
        /// The socket; nil: `$SCENED_SOCKET`, then scenectl's defaults (`SceneSocket.resolve`).
        public var socketPath: String?
        /// How long to keep trying to attach the first time (scened may still be starting).
        public var connectTimeout: Duration
        /// How long to keep trying to reattach after the attach connection dropped.
        public var reattachTimeout: Duration
        /// Each request's and answer's reply timeout.
        public var requestTimeout: Duration
        /// Every event as it comes, before its callbacks (for logging).
        public var onEvent: (@MainActor @Sendable (AppEvent) -> Void)?
        /// SceneClient's own messages (reattaching, overruns); default: standard error.
        public var log: (@Sendable (String) -> Void)?

        public init(socketPath: String? = nil, connectTimeout: Duration = .seconds(10), reattachTimeout: Duration = .seconds(300),
                    requestTimeout: Duration = .seconds(30), onEvent: (@MainActor @Sendable (AppEvent) -> Void)? = nil,
                    log: (@Sendable (String) -> Void)? = nil) {
            self.socketPath = socketPath
            self.connectTimeout = connectTimeout
            self.reattachTimeout = reattachTimeout
            self.requestTimeout = requestTimeout
            self.onEvent = onEvent
            self.log = log
        }
    }

    /// The app id (bundle identifier) this process is attached as.
    public nonisolated let appIdentifier: String
    public nonisolated let options: Options
    public private(set) var delegate: (any ApplicationDelegate)?
    public private(set) var applicationState: ApplicationState = .background
    /// The scenes connected now, by session id.
    public private(set) var scenesBySession: [String: Scene] = [:]
    /// The sequence number of the last event whose callbacks returned (and which was answered).
    public private(set) var lastHandledSeq: UInt64?
    /// Why scened sent the event whose callbacks run now (or ran last): UIKit does not say, but
    /// a scene delegate may want to tell a screen lock from an interruption or a shutdown in
    /// sceneWillResignActive (`scene.application.lastEventCause`). Set before the callbacks.
    public private(set) var lastEventCause: EventCause?
    /// Whether the attach connection is up.
    public var isAttached: Bool { shared.withLock { $0.attached } }
    /// How many times the client reattached (scened restarted).
    public var reattachCount: Int { shared.withLock { $0.reattaches } }

    /// BGTaskScheduler: register launch handlers (before launching finishes), submit and
    /// cancel scheduled background tasks.
    public private(set) lazy var taskScheduler = BackgroundTaskScheduler { [unowned self] method, parameters in
        var p = self.base
        for (key, value) in parameters { p[key] = value }
        _ = try await self.call(method, p)
    }
    /// The background modes whose activity this process began and has not ended.
    public internal(set) var activeBackgroundModes: Set<BackgroundMode> = []

    public var connectedScenes: [Scene] {
        scenesBySession.values.sorted { $0.session.persistentIdentifier < $1.session.persistentIdentifier }
    }

    let shared = Locked(AttachState())
    let requests: RequestChannel
    private var sceneDelegateFactory: (@MainActor @Sendable (SceneSession) -> any SceneDelegate)?
    private var factories: [String: @MainActor @Sendable (SceneSession) -> any SceneDelegate] = [:]
    var sessions: [String: SceneSession] = [:]
    var expirationHandlers: [String: @MainActor () -> Void] = [:]
    /// Activation conditions that did not reach scened (it was away): scene instance by session.
    let unsentConditions = Locked<[String: Int64]>([:])
    private var running = false
    private var ending: SceneApplicationEnding?

    public init(app: String, options: Options = Options()) {
        appIdentifier = app
        self.options = options
        let explicit = options.socketPath
        let environment = ProcessInfo.processInfo.environment
        requests = RequestChannel(path: { SceneSocket.resolve(explicit: explicit, environment: environment) },
                                  timeout: options.requestTimeout)
    }

    /// The socket path used now.
    public nonisolated var socketPath: String { SceneSocket.resolve(explicit: options.socketPath) }

    nonisolated func log(_ message: String) {
        if let log = options.log {
            log(message)
        } else {
            FileHandle.standardError.write(Data("scene-client[\(appIdentifier)]: \(message)\n".utf8))
        }
    }

    /// Attaches and delivers callbacks until the app detaches or is terminated (UIApplicationMain).
    /// `sceneDelegate` makes each scene's delegate unless the configuration returned by
    /// application(_:configurationForConnecting:options:) has its own factory.
    /// Throws `SceneClientError` when scened cannot be reached or refuses the attach.
    @discardableResult
    public func run(delegate: any ApplicationDelegate,
                    sceneDelegate: @escaping @MainActor @Sendable (SceneSession) -> any SceneDelegate) async throws -> SceneApplicationEnding {
        guard !running else { throw SceneClientError.alreadyRunning }
        running = true
        self.delegate = delegate
        sceneDelegateFactory = sceneDelegate
        let (stream, continuation) = AsyncStream.makeStream(of: Inbound.self, bufferingPolicy: .unbounded)
        let explicit = options.socketPath
        let environment = ProcessInfo.processInfo.environment
        let app = appIdentifier
        let reader = AttachReader(app: app, path: { SceneSocket.resolve(explicit: explicit, environment: environment) },
                                  state: shared, requests: requests, continuation: continuation,
                                  connectTimeout: options.connectTimeout, reattachTimeout: options.reattachTimeout,
                                  log: { [weak self] in self?.log($0) })
        reader.start()
        defer {
            running = false
            scenesBySession = [:]
        }
        for await item in stream {
            switch item {
            case .attached(_, _, let reattach):
                if reattach { resendActivationConditions() }
            case .event(let event):
                await handle(event)
                lastHandledSeq = event.seq
                shared.withLock { $0.resumeFrom = event.seq + 1 }
                if ending != nil, !shared.withLock({ $0.detaching }) {
                    // terminated: the process is over for scened; end the attachment.
                    await detachQuietly()
                }
            case .notice(let notice):
                await answer(notice)
            case .ended(let how):
                let result = ending ?? how
                ending = nil
                return result
            case .failed(let error):
                throw error
            }
        }
        return ending ?? .detached
    }

    private func detachQuietly() async {
        do {
            try await detach()
        } catch {
            log("detach after termination: \(error)")
        }
    }

    var base: JSONObject { ["app": .string(appIdentifier)] }

    func call(_ method: String, _ parameters: JSONObject) async throws -> JSONObject {
        try await requests.call(AppInterface.name + "." + method, parameters)
    }

    // MARK: Events to callbacks

    private func handle(_ e: AppEvent) async {
        options.onEvent?(e)
        lastEventCause = e.eventCause
        if let state = e.fields["appState"]?.stringValue.flatMap(ApplicationState.init(rawValue:)) { applicationState = state }
        guard let delegate else { return }
        switch e.name {
        case "didFinishLaunching":
            _ = await delegate.application(self, didFinishLaunchingWithOptions: LaunchOptions(cause: e.cause))
            taskScheduler.launchFinished = true
        case "configurationForConnecting":
            let session = learnSession(e)
            let configuration = await delegate.application(self, configurationForConnecting: session, options: connectionOptions(e))
            if let factory = configuration.delegateFactory { factories[session.persistentIdentifier] = factory }
        case "willConnectTo":
            await connectScene(e)
        case "willEnterForeground":
            if let scene = scene(e) { await scene.delegate.sceneWillEnterForeground(scene) }
        case "didBecomeActive":
            if let scene = scene(e) { await scene.delegate.sceneDidBecomeActive(scene) }
        case "willResignActive":
            if let scene = scene(e) { await scene.delegate.sceneWillResignActive(scene) }
        case "didEnterBackground":
            var restoration: RestorationData?
            if let scene = scene(e) {
                await scene.delegate.sceneDidEnterBackground(scene)
                // UIKit asks for the restoration activity as the scene backgrounds.
                restoration = await scene.delegate.stateRestorationActivity(for: scene)
            }
            await answer(e, restoration: restoration)
        case "didDisconnect":
            if let scene = scene(e) {
                scenesBySession[scene.session.persistentIdentifier] = nil
                await scene.delegate.sceneDidDisconnect(scene)
            }
        case "didDiscardSceneSessions":
            let ids = (e.fields["sessions"]?.arrayValue ?? []).compactMap(\.stringValue)
            let discarded = Set(ids.map { sessions[$0] ?? SceneSession(persistentIdentifier: $0) })
            for id in ids {
                sessions[id] = nil
                factories[id] = nil
            }
            await delegate.application(self, didDiscardSceneSessions: discarded)
        case "didReceiveMemoryWarning":
            await delegate.applicationDidReceiveMemoryWarning(self)
        case "willTerminate":
            await delegate.applicationWillTerminate(self)
            await answer(e, restoration: nil, restorations: await terminationRestorations())
        case "backgroundTaskWillExpire":
            // A beginBackgroundTask token, or (kind and identifier) a scheduled task.
            guard let task = e.fields["task"]?.stringValue else {
                expireScheduledTask(e)
                break
            }
            await expire(BackgroundTaskIdentifier(rawValue: task))
        case "performBackgroundTask":
            await performBackgroundTask(e)
        case "didReceiveNotification":
            await receiveNotification(e)
        case "openURLContexts":
            if let scene = scene(e) { await openURLContexts(e, in: scene) }
        case "continueUserActivity":
            if let scene = scene(e) { await continueUserActivities(e, in: scene) }
        case "terminated":
            // The process is over for scened: its scenes go without callbacks (as in a crash).
            scenesBySession = [:]
            expirationHandlers = [:]
            taskScheduler.running = [:]
            activeBackgroundModes = []
            ending = .terminated(reason: e.fields["reason"]?.stringValue ?? "requested")
        default:
            // suspended, resumed: no UIKit callback (the process would be frozen, then thawed).
            break
        }
    }

    /// willConnectTo: a new Scene, its delegate made by the configuration's factory.
    private func connectScene(_ e: AppEvent) async {
        var session = learnSession(e)
        session.stateRestorationActivity = RestorationData(wire: e.fields["restoration"])
        sessions[session.persistentIdentifier] = session
        let factory = factories[session.persistentIdentifier] ?? sceneDelegateFactory!
        let scene = Scene(session: session, instance: e.scene ?? 0, delegate: factory(session), application: self)
        scene.activationState = sceneState(e)
        scenesBySession[session.persistentIdentifier] = scene
        await scene.delegate.scene(scene, willConnectTo: session, options: connectionOptions(e))
    }

    private func expire(_ task: BackgroundTaskIdentifier) async {
        if let handler = expirationHandlers.removeValue(forKey: task.rawValue) {
            handler()
        } else {
            log("background task \(task) expires and has no expiration handler: ending it")
            try? await endBackgroundTask(task)
        }
    }

    /// On the way down, as UIKit asks for state: each scene still connected, in session order.
    private func terminationRestorations() async -> JSONObject {
        var restorations = JSONObject()
        for scene in connectedScenes {
            if let data = await scene.delegate.stateRestorationActivity(for: scene) {
                restorations[scene.session.persistentIdentifier] = data.wire
            }
        }
        return restorations
    }

    private func scene(_ e: AppEvent) -> Scene? {
        guard let id = e.session, let scene = scenesBySession[id] else { return nil }
        scene.activationState = sceneState(e)
        return scene
    }

    private func sceneState(_ e: AppEvent) -> SceneActivationState {
        SceneActivationState(rawValue: e.state) ?? .unattached
    }

    private func learnSession(_ e: AppEvent) -> SceneSession {
        let id = e.session ?? ""
        var session = sessions[id] ?? SceneSession(persistentIdentifier: id)
        if let role = e.fields["role"]?.stringValue.flatMap(SessionRole.init(rawValue:)) { session.role = role }
        if let name = e.fields["configuration"]?.stringValue { session.configuration = name }
        if let info = e.fields["userInfo"]?.objectValue { session.userInfo = info }
        sessions[id] = session
        return session
    }

    private func connectionOptions(_ e: AppEvent) -> SceneConnectionOptions {
        SceneConnectionOptions(isReconnect: e.fields["reconnect"]?.boolValue ?? false, cause: e.cause,
                               restoration: RestorationData(wire: e.fields["restoration"]),
                               urlContexts: Set(e.urlContexts), userActivities: Set(e.userActivities))
    }

    // MARK: Answers

    /// A reclaim notice: defer if the scene asks to, otherwise save and let it go now. In order
    /// with the events, like a callback.
    private func answer(_ notice: ReclaimNotice) async {
        var p = base
        p["notice"] = .int(notice.id)
        if let scene = scenesBySession[notice.session] {
            if await scene.delegate.sceneShouldDeferDisconnect(scene, notice: notice) {
                p["defer"] = true
            } else if let restoration = await scene.delegate.stateRestorationActivity(for: scene) {
                p["restoration"] = restoration.wire
            }
        }
        do {
            _ = try await call("AnswerNotice", p)
        } catch {
            // Settled already (its deadline passed) or scened went away: it decides without us.
            log("answering reclaim notice \(notice.id) for \(notice.session) failed: \(error)")
        }
    }

    private nonisolated static func wallMicroseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// Acknowledge for a bounded event, sent now that its handler returned. If scened went away
    /// meanwhile, the answer waits for the reattach (which replays the event, since it was not
    /// handled yet) and goes to the new daemon.
    func answer(_ e: AppEvent, restoration: RestorationData?, restorations: JSONObject? = nil) async {
        guard let deadline = e.deadline else { return }
        let returned = Self.wallMicroseconds()
        var overrun: DeadlineOverrun?
        if returned > deadline {
            overrun = DeadlineOverrun(seq: e.seq, event: e.name, session: e.session,
                                      overrun: .microseconds(returned - deadline), refusedByDaemon: false)
        }
        var p = base
        p["seq"] = .int(Int64(e.seq))
        if let restoration { p["restoration"] = restoration.wire }
        if let restorations, !restorations.isEmpty { p["restorations"] = .object(restorations) }
        let giveUp = ContinuousClock.now + options.reattachTimeout
        var triedInGeneration: Int?
        // After a transport failure: wait for a newer attach (or a second, for a blip).
        var awaitNewerThan: (generation: Int, until: ContinuousClock.Instant)?
        while ContinuousClock.now < giveUp {
            // The event must have been delivered by the daemon the answer goes to.
            let (ready, finished) = shared.withLock {
                ($0.attached && ($0.highestReadInGeneration ?? 0) >= e.seq ? $0.generation : nil, $0.finished)
            }
            if finished {
                // Terminated (hung) or detached meanwhile: the answer has nowhere to go.
                break
            }
            if let waiting = awaitNewerThan, ready == waiting.generation, ContinuousClock.now < waiting.until {
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            guard let generation = ready else {
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            awaitNewerThan = nil
            do {
                _ = try await call("Acknowledge", p)
                break
            } catch let error as VarlinkError {
                let name = error.name.split(separator: ".").last.map(String.init) ?? error.name
                if name == "DeadlinePassed" {
                    let now = Self.wallMicroseconds()
                    overrun = DeadlineOverrun(seq: e.seq, event: e.name, session: e.session,
                                              overrun: .microseconds(max(now - deadline, 0)), refusedByDaemon: true)
                    break
                }
                if name == "NotAwaiting", triedInGeneration == generation {
                    log("scened does not await an answer to event \(e.seq) (\(e.name))")
                    break
                }
                guard name == "NotAwaiting" || name == "NotAttached" else {
                    log("Acknowledge of event \(e.seq) failed: \(error)")
                    // The state was refused (too large, say): the answer itself must still
                    // go, or the app is taken for hung. It goes again without the state.
                    guard p.removeValue(forKey: "restoration") != nil || p.removeValue(forKey: "restorations") != nil else { break }
                    continue
                }
                triedInGeneration = generation
                if name == "NotAttached" { awaitNewerThan = (generation, ContinuousClock.now + .seconds(1)) }
                try? await Task.sleep(for: .milliseconds(20))
            } catch {
                // Transport: scened went away; the answer waits for the reattach.
                triedInGeneration = generation
                awaitNewerThan = (generation, ContinuousClock.now + .seconds(1))
            }
        }
        if let overrun, let delegate {
            await delegate.application(self, didOverrunDeadline: overrun)
        }
    }
}
