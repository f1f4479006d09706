import Foundation
import SceneClient

/// What a notes scene keeps across disconnects and process deaths: its restoration data.
struct NotesState: Codable, Equatable {
    var counter = 0
    var note = ""
    /// How many background refreshes ran while the scene was connected.
    var refreshes = 0
    /// The note's text, from a notes:new URL.
    var text = ""

    init() {}

    /// State saved before refreshes were counted decodes with none.
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        counter = try c.decodeIfPresent(Int.self, forKey: .counter) ?? 0
        note = try c.decodeIfPresent(String.self, forKey: .note) ?? ""
        refreshes = try c.decodeIfPresent(Int.self, forKey: .refreshes) ?? 0
        text = try c.decodeIfPresent(String.self, forKey: .text) ?? ""
    }
}

/// Unbuffered, so that the lines of the app and of the demo interleave as they happen.
func out(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// On a terminal (or beside the demo's lines) each line names the process; elsewhere, e.g. in
/// the journal when scened starts the app, which records the PID itself, the text alone.
let namesLines = isatty(STDOUT_FILENO) == 1 || ProcessInfo.processInfo.environment["SCENE_NOTES_DEMO"] != nil

func say(_ text: String) {
    out(namesLines ? "[scene-notes \(getpid())] \(text)" : text)
}

/// Memory a scene holds while it is connected (--hold-mib): every page written, so that it is
/// resident. A block this large is mmap'd by malloc and goes back to the system on free.
final class Ballast {
    let bytes: Int
    private let block: UnsafeMutableRawPointer

    init?(mebibytes: Int) {
        guard mebibytes > 0, let block = malloc(mebibytes << 20) else { return nil }
        bytes = mebibytes << 20
        self.block = block
        // Non-zero bytes: nothing may leave a page untouched (or shared with the zero page).
        memset(block, 0xA5, bytes)
    }

    deinit { free(block) }
}

@MainActor
final class NotesAppDelegate: ApplicationDelegate {
    /// How long after one background refresh the next is asked for (--refresh-sec); nil: none
    /// is asked for (one scheduled from outside still runs).
    let refreshInterval: TimeInterval?
    /// How long handling a notification takes (--notification-delay-sec): an app too slow to
    /// answer within its budget.
    let notificationDelay: TimeInterval

    init(refreshInterval: TimeInterval?, notificationDelay: TimeInterval) {
        self.refreshInterval = refreshInterval
        self.notificationDelay = notificationDelay
    }

    func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool {
        say("application(_:didFinishLaunchingWithOptions:) cause=\(launchOptions?.cause ?? "-")")
        // As with BGTaskScheduler, launch handlers are registered before launching finishes.
        application.taskScheduler.register(forTaskWithIdentifier: Self.refreshTask) { [unowned self, unowned application] task in
            await refresh(application, task)
        }
        if refreshInterval != nil { await scheduleRefresh(application) }
        // Like UIKit bringing back the scenes of the last run: reconnect an archived session
        // (its saved state comes back in willConnectTo), else ask for a first scene.
        do {
            let sessions = try await application.openSessions()
            if let archived = sessions.first(where: \.isArchived) {
                say("reconnecting archived session \(archived.session.persistentIdentifier)")
                try await application.requestSceneSessionActivation(archived.session)
            } else if sessions.isEmpty {
                let id = try await application.requestSceneSessionActivation(role: .windowApplication, configuration: "Notes",
                                                                              userInfo: ["purpose": "notes"])
                say("requested a new scene: session \(id)")
            }
        } catch {
            say("request failed: \(error)")
        }
        return true
    }

    func application(_ application: SceneApplication, configurationForConnecting connectingSceneSession: SceneSession,
                     options: SceneConnectionOptions) async -> SceneConfiguration {
        say("application(_:configurationForConnecting:) \(connectingSceneSession) role=\(connectingSceneSession.role.rawValue)")
        return SceneConfiguration(name: connectingSceneSession.configuration, role: connectingSceneSession.role)
    }

    func application(_ application: SceneApplication, didDiscardSceneSessions sceneSessions: Set<SceneSession>) async {
        say("application(_:didDiscardSceneSessions:) \(sceneSessions.map(\.persistentIdentifier).sorted())")
    }

    func applicationDidReceiveMemoryWarning(_ application: SceneApplication) async {
        say("applicationDidReceiveMemoryWarning")
    }

    func applicationWillTerminate(_ application: SceneApplication) async {
        // SceneClient asks each connected scene's stateRestorationActivity(for:) next and
        // sends it with the answer: the count is saved on the way down.
        say("applicationWillTerminate cause=\(cause(application))")
    }

    func application(_ application: SceneApplication, didOverrunDeadline overrun: DeadlineOverrun) async {
        say("overran: \(overrun)")
    }

    static let refreshTask = "notes.refresh"

    /// The next refresh, refreshInterval from now (submitting again replaces the one waiting).
    func scheduleRefresh(_ application: SceneApplication) async {
        guard let refreshInterval else { return }
        do {
            let request = AppRefreshTaskRequest(identifier: Self.refreshTask,
                                                earliestBeginDate: Date().addingTimeInterval(refreshInterval))
            try await application.taskScheduler.submit(request)
            say("scheduled \(Self.refreshTask) in \(Int(refreshInterval))s")
        } catch {
            say("scheduling \(Self.refreshTask) failed: \(error)")
        }
    }

    /// notes.refresh: each connected scene counts the refresh in its saved state, the next
    /// refresh is scheduled, and the task completes.
    func refresh(_ application: SceneApplication, _ task: BackgroundTask) async {
        say("performBackgroundTask \(task.identifier) kind=\(task.kind.rawValue)")
        task.expirationHandler = { [unowned task] in
            say("backgroundTaskWillExpire \(task.identifier): giving up")
            task.setTaskCompleted(success: false)
        }
        var saved = true
        for scene in application.connectedScenes {
            guard let notes = scene.delegate as? NotesSceneDelegate else { continue }
            notes.state.refreshes += 1
            saved = await notes.save(scene) && saved
            say("refreshed \(scene.session): refreshes=\(notes.state.refreshes)")
        }
        await scheduleRefresh(application)
        task.setTaskCompleted(success: saved)
        say("setTaskCompleted(success: \(saved))")
    }

    /// A notification: its text becomes each connected scene's note, saved at once. SceneClient
    /// acknowledges it when this returns.
    func application(_ application: SceneApplication, didReceiveNotification notification: RemoteNotification) async {
        let text = notification.payload["text"]?.stringValue ?? JSONValue.object(notification.payload).serializedString()
        say("didReceiveNotification \(notification.identifier): \(text)")
        if notificationDelay > 0 {
            say("handling it takes \(notificationDelay)s")
            try? await Task.sleep(for: .seconds(notificationDelay))
        }
        for scene in application.connectedScenes {
            guard let notes = scene.delegate as? NotesSceneDelegate else { continue }
            notes.state.note = text
            _ = await notes.save(scene)
        }
    }
}

@MainActor
final class NotesSceneDelegate: SceneDelegate {
    var state = NotesState()
    let holdMiB: Int
    var ballast: Ballast?

    init(holdMiB: Int) { self.holdMiB = holdMiB }

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: SceneConnectionOptions) async {
        if let saved = try? session.stateRestorationActivity?.decode(NotesState.self) {
            state = saved
            say("scene(_:willConnectTo:options:) \(session) scene #\(scene.instance) reconnect=\(connectionOptions.isReconnect): restored counter=\(state.counter) note=\"\(state.note)\"")
        } else {
            say("scene(_:willConnectTo:options:) \(session) scene #\(scene.instance) reconnect=\(connectionOptions.isReconnect): fresh state")
        }
        if holdMiB > 0 {
            ballast = Ballast(mebibytes: holdMiB)
            say(ballast == nil ? "cannot allocate \(holdMiB) MiB" : "holding \(holdMiB) MiB")
        }
        // Waited for, so that an Open sent after this line is printed finds them in force.
        do {
            try await scene.application.setActivationConditions(NotesURL.conditions(for: session), for: scene)
            say("\(session) takes notes:open?id=\(session)")
        } catch {
            say("activation conditions of \(session) not set: \(error)")
        }
        for context in Self.sorted(connectionOptions.urlContexts) {
            say("opened with \(context.url) from \(context.options.sourceApplication ?? "-")")
            await open(context, in: scene, isNew: true)
        }
    }

    func scene(_ scene: Scene, openURLContexts urlContexts: Set<OpenURLContext>) async {
        for context in Self.sorted(urlContexts) {
            say("scene(_:openURLContexts:) \(scene.session) \(context.url) from \(context.options.sourceApplication ?? "-")")
            await open(context, in: scene, isNew: false)
        }
    }

    func sceneWillEnterForeground(_ scene: Scene) async { say("sceneWillEnterForeground \(scene.session)") }

    func sceneDidBecomeActive(_ scene: Scene) async {
        state.counter += 1
        state.note = "activated \(state.counter) time\(state.counter == 1 ? "" : "s")"
        say("sceneDidBecomeActive \(scene.session): counter=\(state.counter)")
    }

    func sceneWillResignActive(_ scene: Scene) async {
        say("sceneWillResignActive \(scene.session) cause=\(cause(scene.application))")
    }

    func sceneDidEnterBackground(_ scene: Scene) async {
        say("sceneDidEnterBackground \(scene.session) cause=\(cause(scene.application))")
    }

    func stateRestorationActivity(for scene: Scene) async -> RestorationData? {
        say("stateRestorationActivity(for:) \(scene.session): saving counter=\(state.counter) note=\"\(state.note)\" refreshes=\(state.refreshes)")
        return try? RestorationData(encoding: state)
    }

    /// Saves the state now (SaveState), apart from a didEnterBackground answer.
    func save(_ scene: Scene) async -> Bool {
        do {
            try await scene.application.saveState(try RestorationData(encoding: state), for: scene.session)
            return true
        } catch {
            say("saving \(scene.session) failed: \(error)")
            return false
        }
    }

    func sceneDidDisconnect(_ scene: Scene) async {
        let held = ballast?.bytes ?? 0
        ballast = nil
        say("sceneDidDisconnect \(scene.session)\(held > 0 ? ": released \(held >> 20) MiB" : "")")
    }
}

/// Why scened sent the current callback (a lock, an interruption, a shutdown, a request).
@MainActor
func cause(_ application: SceneApplication) -> String {
    application.lastEventCause?.rawValue ?? "-"
}

/// SIGINT or SIGTERM from outside scened (scened's own stop sends willTerminate first): each
/// connected scene's state is saved, as willTerminate would save it, then the app detaches.
@MainActor
func saveAndDetach(_ application: SceneApplication) async {
    for scene in application.connectedScenes {
        guard let data = await scene.delegate.stateRestorationActivity(for: scene) else { continue }
        do {
            try await application.saveState(data, for: scene.session)
        } catch {
            // Terminated already (its willTerminate answer carried the state), or scened is gone.
            say("saving \(scene.session) on the way out failed: \(error)")
        }
    }
    try? await application.detach()
}

/// Runs the app until scened terminates it (or SIGINT/SIGTERM: save and detach).
@MainActor
func runApp(app: String, socket: String?, holdMiB: Int, delegate: NotesAppDelegate) async -> Int32 {
    let application = SceneApplication(app: app, options: .init(socketPath: socket, log: { say("scene-client: \($0)") }))
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    var sources: [any DispatchSourceSignal] = []
    for signo in [SIGINT, SIGTERM] {
        let source = DispatchSource.makeSignalSource(signal: signo, queue: .main)
        source.setEventHandler {
            Task { @MainActor in
                say("signal \(signo): saving and detaching")
                await saveAndDetach(application)
            }
        }
        source.resume()
        sources.append(source)
    }
    say("attaching as \(app) on \(application.socketPath)")
    do {
        let ending = try await application.run(delegate: delegate) { _ in NotesSceneDelegate(holdMiB: holdMiB) }
        say("ended: \(ending)")
        return 0
    } catch {
        say("error: \(error)")
        return 1
    }
}
