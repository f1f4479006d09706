import Foundation
import SceneClient

/// What a notes scene keeps across disconnects and process deaths: its restoration data.
struct NotesState: Codable, Equatable {
    var counter = 0
    var note = ""
}

/// Unbuffered, so that the lines of the app and of the demo interleave as they happen.
func out(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func say(_ text: String) {
    out("[scene-notes \(getpid())] \(text)")
}

@MainActor
final class NotesAppDelegate: ApplicationDelegate {
    func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool {
        say("application(_:didFinishLaunchingWithOptions:) cause=\(launchOptions?.cause ?? "-")")
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
        say("applicationWillTerminate")
    }

    func application(_ application: SceneApplication, didOverrunDeadline overrun: DeadlineOverrun) async {
        say("overran: \(overrun)")
    }
}

@MainActor
final class NotesSceneDelegate: SceneDelegate {
    var state = NotesState()

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: SceneConnectionOptions) async {
        if let saved = try? session.stateRestorationActivity?.decode(NotesState.self) {
            state = saved
            say("scene(_:willConnectTo:options:) \(session) scene #\(scene.instance) reconnect=\(connectionOptions.isReconnect): restored counter=\(state.counter) note=\"\(state.note)\"")
        } else {
            say("scene(_:willConnectTo:options:) \(session) scene #\(scene.instance) reconnect=\(connectionOptions.isReconnect): fresh state")
        }
    }

    func sceneWillEnterForeground(_ scene: Scene) async { say("sceneWillEnterForeground \(scene.session)") }

    func sceneDidBecomeActive(_ scene: Scene) async {
        state.counter += 1
        state.note = "activated \(state.counter) time\(state.counter == 1 ? "" : "s")"
        say("sceneDidBecomeActive \(scene.session): counter=\(state.counter)")
    }

    func sceneWillResignActive(_ scene: Scene) async { say("sceneWillResignActive \(scene.session)") }

    func sceneDidEnterBackground(_ scene: Scene) async { say("sceneDidEnterBackground \(scene.session)") }

    func stateRestorationActivity(for scene: Scene) async -> RestorationData? {
        say("stateRestorationActivity(for:) \(scene.session): saving counter=\(state.counter) note=\"\(state.note)\"")
        return try? RestorationData(encoding: state)
    }

    func sceneDidDisconnect(_ scene: Scene) async { say("sceneDidDisconnect \(scene.session)") }
}

/// Runs the app until scened terminates it (or SIGINT/SIGTERM: detach).
@MainActor
func runApp(app: String, socket: String?) async -> Int32 {
    let application = SceneApplication(app: app, options: .init(socketPath: socket, log: { say("scene-client: \($0)") }))
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    var sources: [any DispatchSourceSignal] = []
    for signo in [SIGINT, SIGTERM] {
        let source = DispatchSource.makeSignalSource(signal: signo, queue: .main)
        source.setEventHandler {
            Task { @MainActor in
                say("signal \(signo): detaching")
                try? await application.detach()
            }
        }
        source.resume()
        sources.append(source)
    }
    say("attaching as \(app) on \(application.socketPath)")
    do {
        let ending = try await application.run(delegate: NotesAppDelegate()) { _ in NotesSceneDelegate() }
        say("ended: \(ending)")
        return 0
    } catch {
        say("error: \(error)")
        return 1
    }
}
