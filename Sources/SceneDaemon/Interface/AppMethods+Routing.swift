import SceneCore
import SceneInterface
import Varlink

/// What an app may ask of routing: open another app's URL or activity, and say which of its
/// scenes take what (UISceneActivationConditions).
extension MethodDispatcher {
    /// io.scened.App.Open: the caller acts as `app` (as for every App request) and must also
    /// be allowed on the target (its owner's rights apply); the target sees `app` as the
    /// URL's sourceApplication.
    func appOpen(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        let input = try OpenInput.parse(c.p, source: app, settings.routing)
        let target = try routedApp(input.route)
        guard policy.mayActAs(c.caller, app: target) else {
            throw refusal(c.caller, c.call.method, "Open to \(target) is for its owner and administrators", app: target)
        }
        let request = OpenRequest(app: target, payload: input.payload, activate: c.p.bool("activate") ?? true)
        let (result, _) = try deliverOpen(request, input.route)
        reply(c) { w in
            w.field("target", target)
            Self.openResult(result, &w)
        }
    }

    func setActivationConditions(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        try checkStartedAppCaller(c, app)
        guard let id = try ownSession(c, app) else { throw .invalidParameter("session") }
        let can = try patterns(c.p, "canActivateFor")
        let prefers = try patterns(c.p, "prefersToActivateFor")
        let conditions = can == nil && prefers == nil
            ? nil : ActivationConditions(canActivateFor: can, prefersToActivateFor: prefers ?? [])
        _ = try run(.setActivationConditions(id, conditions))
        reply(c) { _ in }
    }

    /// A list of patterns within the interface's bounds: too many or too long is
    /// LimitExceeded (the engine would refuse them too, without naming a limit).
    private func patterns(_ p: CallParameters, _ name: String) throws(VarlinkError) -> [String]? {
        guard p.has(name) else { return nil }
        guard case .array(let list)? = p.object[name] else { throw .invalidParameter(name) }
        let most = LifecycleEngine.maxActivationPatterns, longest = LifecycleEngine.maxActivationPatternBytes
        guard list.count <= most else {
            throw OpenInput.limit("MaxActivationPatterns", most, "\(name) has \(list.count) patterns, the most a scene may declare is \(most)")
        }
        var out: [String] = []
        out.reserveCapacity(list.count)
        for item in list {
            guard let text = item.stringValue else { throw .invalidParameter(name) }
            guard !text.isEmpty else { throw OpenInput.invalid(name, "an empty pattern") }
            guard text.utf8.count <= longest else {
                throw OpenInput.limit("MaxActivationPatternSize", longest, "a pattern of \(name) is \(text.utf8.count) bytes, the most is \(longest)")
            }
            out.append(text)
        }
        return out
    }

    /// RequestSceneSessionActivation's `url` or `activity` (at most one), from the app itself.
    func activationPayload(_ c: MethodCall, _ app: AppID) throws(VarlinkError) -> OpenInput? {
        guard c.p.has("url") || c.p.has("activity") else { return nil }
        return try OpenInput.parse(c.p, source: app, settings.routing)
    }
}
