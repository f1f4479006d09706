import Foundation
import SceneClient

/// What a `notes:` URL asks for (the app's `[App] URLSchemes=notes`):
///   notes:new?text=TEXT   a new note, in a new scene
///   notes:open?id=SESSION the note of that session, in its scene
enum NotesURL: Equatable {
    case new(text: String)
    case open(id: String)
    case unknown

    init(_ url: String) {
        guard let parts = URLComponents(string: url), parts.scheme?.lowercased() == "notes" else {
            self = .unknown
            return
        }
        // notes:new and notes://new both name the verb.
        let verb = parts.host ?? parts.path
        let query = parts.queryItems ?? []
        func value(_ name: String) -> String? { query.first(where: { $0.name == name })?.value }
        switch verb {
        case "new": self = .new(text: value("text") ?? "")
        case "open": self = value("id").map { .open(id: $0) } ?? .unknown
        default: self = .unknown
        }
    }

    /// UIKit's usual conditions: a scene takes anything (so scenectl open of any notes: URL
    /// reaches the foremost scene) and prefers the Opens of its own note.
    static func conditions(for session: SceneSession) -> SceneActivationConditions {
        let own = ["notes:open?id=\(session.persistentIdentifier)", "notes:open?id=\(session.persistentIdentifier)&*"]
        return SceneActivationConditions(canActivateFor: nil, prefersToActivateFor: own)
    }
}

extension NotesSceneDelegate {
    /// A URL this scene was opened with (willConnectTo, `isNew`) or got while connected.
    func open(_ context: OpenURLContext, in scene: Scene, isNew: Bool) async {
        let session = scene.session
        switch NotesURL(context.url) {
        case .new(let text) where isNew:
            state.text = text
            say("note \(session): \"\(text)\"")
            _ = await save(scene)
        case .new:
            // A connected scene keeps its note: the new one gets a scene of its own, which is
            // opened with the URL (as a UIKit app asks for a new window).
            do {
                let id = try await scene.application.requestSceneSessionActivation(url: context.url, configuration: "Notes")
                say("asked for a new scene for \(context.url): session \(id)")
            } catch {
                say("cannot make a new note: \(error)")
            }
        case .open(let id) where id == session.persistentIdentifier:
            say("showing note \(session): \"\(state.text)\"")
        case .open(let id):
            // The note's scene is not connected: bring its session back (its saved note comes
            // with it); a scene made only for this URL has nothing else to show and goes.
            say("note \(id) is not connected: reconnecting it")
            do {
                try await scene.application.requestSceneSessionActivation(persistentIdentifier: id)
                if isNew { try await scene.application.requestSceneSessionDestruction(session) }
            } catch {
                say("cannot open note \(id): \(error)")
            }
        case .unknown:
            say("cannot open \(context.url): not a notes:new or notes:open URL")
        }
    }

    /// An activity of the app's ActivityTypes= (the apps.d example's org.example.notes.edit):
    /// editing goes on here, with userInfo's "text", if it has one, as the note.
    func scene(_ scene: Scene, continue userActivity: UserActivity) async {
        say("scene(_:continue:) \(scene.session) \(userActivity.activityType) target=\(userActivity.targetContentIdentifier ?? "-")")
        guard let text = userActivity.userInfo?["text"]?.stringValue else { return }
        state.text = text
        say("note \(scene.session): \"\(text)\"")
        _ = await save(scene)
    }

    /// The URLs of one callback in a stable order (UIKit hands a Set).
    static func sorted(_ contexts: Set<OpenURLContext>) -> [OpenURLContext] {
        contexts.sorted { $0.url < $1.url }
    }
}
