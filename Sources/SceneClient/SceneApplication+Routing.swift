import Foundation
import SceneInterface
import Varlink

// URLs and activities (issue 37): the two scene callbacks that hand them over, the app's own
// Open of another app's URL, and a scene's activation conditions.

extension SceneApplication {
    /// openURLContexts: the event's URLs, all at once, as UIKit hands a Set.
    func openURLContexts(_ e: AppEvent, in scene: Scene) async {
        let contexts = e.urlContexts
        guard !contexts.isEmpty else {
            log("openURLContexts \(e.seq) carries no URL: ignored")
            return
        }
        await scene.delegate.scene(scene, openURLContexts: Set(contexts))
    }

    /// continueUserActivity: for each activity, willContinueUserActivityWithType and then
    /// continue, in the order scened sent them.
    func continueUserActivities(_ e: AppEvent, in scene: Scene) async {
        let activities = e.userActivities
        if activities.isEmpty { log("continueUserActivity \(e.seq) carries no activity: ignored") }
        for activity in activities {
            await scene.delegate.scene(scene, willContinueUserActivityWithType: activity.activityType)
            await scene.delegate.scene(scene, continue: activity)
        }
    }

    /// UIApplication.open(_:): the app whose `[App] URLSchemes=` has the URL's scheme opens it
    /// (io.scened.App Open, with this app's owner's rights), with this app as its
    /// sourceApplication. activate (the default) brings the scene that takes it to the
    /// foreground. Throws the daemon's errors: NoHandler for a scheme no app handles,
    /// InvalidArgument for a malformed URL, LimitExceeded, PermissionDenied.
    @discardableResult
    public func open(_ url: String, activate: Bool = true) async throws -> OpenResult {
        var p = base
        p["url"] = .string(url)
        p["activate"] = .bool(activate)
        return try await open(p)
    }

    @discardableResult
    public func open(_ url: URL, activate: Bool = true) async throws -> OpenResult {
        try await open(url.absoluteString, activate: activate)
    }

    /// Continues an activity in the app whose `[App] ActivityTypes=` has its type.
    @discardableResult
    public func open(userActivity: UserActivity, activate: Bool = true) async throws -> OpenResult {
        var p = base
        p["activity"] = userActivity.wire
        p["activate"] = .bool(activate)
        return try await open(p)
    }

    private func open(_ parameters: JSONObject) async throws -> OpenResult {
        let reply = try await call("Open", parameters)
        return OpenResult(app: reply["target"]?.stringValue ?? "", session: reply["session"]?.stringValue,
                          pendingOpen: reply["open"]?.stringValue)
    }

    // MARK: Activation conditions

    /// Sets a scene's activation conditions and waits for scened to take them (its errors:
    /// LimitExceeded for too many or too long patterns, InvalidTransition once the scene is
    /// gone). `scene.activationConditions = …` does the same without waiting.
    public func setActivationConditions(_ conditions: SceneActivationConditions, for scene: Scene) async throws {
        scene.conditions = conditions
        _ = try await call("SetActivationConditions", conditionsParameters(scene))
    }

    /// Queued behind the requests made before; a refusal only goes to the log, a transport
    /// failure (scened is restarting) leaves it to be sent again after the reattach.
    func sendActivationConditions(of scene: Scene) {
        let session = scene.session.persistentIdentifier
        let instance = scene.instance
        unsentConditions.withLock { $0[session] = nil }
        requests.send(AppInterface.name + ".SetActivationConditions", conditionsParameters(scene)) { [weak self, unsentConditions] result in
            guard case .failure(let error) = result else { return }
            if !(error is VarlinkError) { unsentConditions.withLock { $0[session] = instance } }
            self?.log("activation conditions of \(session) not set: \(error)")
        }
    }

    /// After a reattach: the settings that never reached scened, for scenes still connected.
    func resendActivationConditions() {
        let unsent = unsentConditions.withLock { pending -> [String: Int64] in
            defer { pending = [:] }
            return pending
        }
        for (session, instance) in unsent.sorted(by: { $0.key < $1.key }) {
            guard let scene = scenesBySession[session], scene.instance == instance else { continue }
            sendActivationConditions(of: scene)
        }
    }

    private func conditionsParameters(_ scene: Scene) -> JSONObject {
        var p = base
        p["session"] = .string(scene.session.persistentIdentifier)
        let conditions = scene.conditions
        if let can = conditions.canActivateFor { p["canActivateFor"] = .array(can.map { .string($0) }) }
        if !conditions.prefersToActivateFor.isEmpty {
            p["prefersToActivateFor"] = .array(conditions.prefersToActivateFor.map { .string($0) })
        }
        return p
    }
}
