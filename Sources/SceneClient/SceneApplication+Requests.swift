import Foundation
import Locking
import SceneInterface
import Varlink

// The app's requests, as UIApplication offers them, on its own sessions only.

extension SceneApplication {
    /// UIApplication.requestSceneSessionActivation: an existing session (activated, reconnected
    /// if archived), or without one a new session with this role, configuration and userInfo.
    /// Returns the session id. The callbacks it causes come as events, after the current one.
    /// userActivity or url (at most one; any scheme, this app is its sourceApplication): a new
    /// or reconnected scene gets it in willConnectTo's options, a connected one by
    /// scene(_:continue:) or scene(_:openURLContexts:) once active.
    @discardableResult
    public func requestSceneSessionActivation(_ session: SceneSession? = nil, userActivity: UserActivity? = nil, url: String? = nil,
                                              role: SessionRole? = nil, configuration: String? = nil,
                                              userInfo: JSONObject? = nil) async throws -> String {
        try await requestSceneSessionActivation(persistentIdentifier: session?.persistentIdentifier, userActivity: userActivity, url: url,
                                                role: role, configuration: configuration, userInfo: userInfo)
    }

    @discardableResult
    public func requestSceneSessionActivation(persistentIdentifier: String?, userActivity: UserActivity? = nil, url: String? = nil,
                                              role: SessionRole? = nil, configuration: String? = nil,
                                              userInfo: JSONObject? = nil) async throws -> String {
        var p = base
        if let persistentIdentifier { p["session"] = .string(persistentIdentifier) }
        if let userActivity { p["activity"] = userActivity.wire }
        if let url { p["url"] = .string(url) }
        if let role { p["role"] = .string(role.rawValue) }
        if let configuration { p["configuration"] = .string(configuration) }
        if let userInfo { p["userInfo"] = .object(userInfo) }
        let reply = try await call("RequestSceneSessionActivation", p)
        return reply["session"]?.stringValue ?? persistentIdentifier ?? ""
    }

    /// UIApplication.requestSceneSessionDestruction: the session is discarded.
    public func requestSceneSessionDestruction(_ session: SceneSession) async throws {
        try await requestSceneSessionDestruction(persistentIdentifier: session.persistentIdentifier)
    }

    public func requestSceneSessionDestruction(persistentIdentifier: String) async throws {
        var p = base
        p["session"] = .string(persistentIdentifier)
        _ = try await call("RequestSceneSessionDestruction", p)
    }

    /// beginBackgroundTask(withName:expirationHandler:). The handler runs when scened sends
    /// backgroundTaskWillExpire; end the task in it (without a handler SceneClient ends it).
    public func beginBackgroundTask(withName name: String? = nil, for session: SceneSession? = nil,
                                    expirationHandler: (@MainActor () -> Void)? = nil) async throws -> BackgroundTaskIdentifier {
        var p = base
        if let name { p["name"] = .string(name) }
        if let session { p["session"] = .string(session.persistentIdentifier) }
        let reply = try await call("BeginBackgroundTask", p)
        let id = BackgroundTaskIdentifier(rawValue: reply["task"]?.stringValue ?? "")
        if let expirationHandler { expirationHandlers[id.rawValue] = expirationHandler }
        return id
    }

    public func endBackgroundTask(_ task: BackgroundTaskIdentifier) async throws {
        expirationHandlers[task.rawValue] = nil
        var p = base
        p["task"] = .string(task.rawValue)
        _ = try await call("EndBackgroundTask", p)
    }

    /// Saves a session's state-restoration data now (nil clears it), apart from the
    /// didEnterBackground answer.
    public func saveState(_ restoration: RestorationData?, for session: SceneSession) async throws {
        var p = base
        p["session"] = .string(session.persistentIdentifier)
        if let restoration { p["restoration"] = restoration.wire }
        _ = try await call("SaveState", p)
    }

    public func saveUserInfo(_ userInfo: JSONObject, for session: SceneSession) async throws {
        var p = base
        p["session"] = .string(session.persistentIdentifier)
        p["userInfo"] = .object(userInfo)
        _ = try await call("SaveUserInfo", p)
        if var known = sessions[session.persistentIdentifier] {
            known.userInfo = userInfo
            sessions[session.persistentIdentifier] = known
            scenesBySession[session.persistentIdentifier]?.update { $0.userInfo = userInfo }
        }
    }

    /// What the process holds in bytes: for a session's scene, or without one apart from its scenes.
    public func setFootprint(_ bytes: Int, for session: SceneSession? = nil) async throws {
        var p = base
        if let session { p["session"] = .string(session.persistentIdentifier) }
        p["footprint"] = .int(Int64(bytes))
        _ = try await call("SetFootprint", p)
    }

    /// UIApplication.openSessions: the app's sessions, live and archived (io.scened.Manager's
    /// ListSessions, open to anyone; userInfo and restoration data are not in it).
    public func openSessions() async throws -> [SessionSummary] {
        let reply = try await requests.call(ManagerInterface.name + ".ListSessions", base)
        return (reply["sessions"]?.arrayValue ?? []).compactMap { s -> SessionSummary? in
            guard let id = s["id"]?.stringValue else { return nil }
            let session = SceneSession(persistentIdentifier: id,
                                       role: s["role"]?.stringValue.flatMap(SessionRole.init(rawValue:)) ?? .windowApplication,
                                       configuration: s["configuration"]?.stringValue ?? "Default Configuration")
            return SessionSummary(session: session, isArchived: s["condition"]?.stringValue == "archived",
                                  state: s["state"]?.stringValue.flatMap(SceneActivationState.init(rawValue:)) ?? .unattached)
        }
    }

    /// Ends the attachment (a running app is terminated without callbacks); run() then returns
    /// `.detached`. Callbacks already queued are not delivered.
    public func detach() async throws {
        shared.withLock { $0.detaching = true }
        do {
            _ = try await call("Detach", base)
        } catch {
            // Not attached any more (or scened is gone): stop reading all the same.
            shared.withLock { $0.stopped = true }
            throw error
        }
    }
}
