@testable import SceneCore

/// The oracle's routing: what an Open emits (delivered now, or stored for a not-running app),
/// what a launch emits delivering the stored ones, and which activation conditions are
/// accepted. Which scene the conditions choose is SceneSelection's (unit-tested on its own);
/// the order of the events and what a new or reconnected scene gets are stated here.
enum RoutingOracle {
    typealias P = CommandOracle.Predicted

    /// The app's scenes as the deliveries of one command leave them.
    struct Scenes {
        var state: [SessionID: SceneActivationState] = [:]
        var lastActive: [SessionID: Timestamp] = [:]
        var conditions: [SessionID: ActivationConditions] = [:]
        var nextSession: UInt64
        var created = 0
    }

    /// The live scenes of `app` now.
    static func scenes(of app: AppID, in e: LifecycleEngine) -> Scenes {
        var out = Scenes(nextSession: e.nextSessionNumber)
        for s in e.sessions.values where s.app == app && s.condition == .live {
            out.state[s.id] = s.sceneState
            out.lastActive[s.id] = s.lastActiveAt
            out.conditions[s.id] = e.activationConditions[s.id]
        }
        return out
    }

    static func active(_ app: AppID, _ e: LifecycleEngine) -> Bool { e.holds.hold(for: app).level == .none }

    /// One delivery to a running app.
    static func deliver(_ r: OpenRequest, _ scenes: inout Scenes, in e: LifecycleEngine) -> [P] {
        let up: SceneActivationState = active(r.app, e) ? .foregroundActive : .foregroundInactive
        let tail: (SessionID) -> [P] = { id in
            r.activate ? [P(.willEnterForeground, id)] + (up == .foregroundActive ? [P(.didBecomeActive, id)] : [])
                       : [P(.didEnterBackground, id)]
        }
        func settle(_ id: SessionID) {
            scenes.state[id] = r.activate ? up : .background
            if r.activate && up == .foregroundActive { scenes.lastActive[id] = e.clock }
        }
        if let id = r.session, let s = e.sessions[id], s.app == r.app {
            if let state = scenes.state[id] { return connected(id, state, r, &scenes, e) }
            scenes.lastActive[id] = s.lastActiveAt
            settle(id)
            return [P(.willConnectTo, id)] + tail(id)
        }
        let candidates = scenes.state.map { id, state in
            SceneSelection.Candidate(id: id, state: state, lastActiveAt: scenes.lastActive[id]!,
                                     conditions: scenes.conditions[id] ?? .default)
        }
        if let id = SceneSelection.choose(candidates, target: r.payload.targetContentIdentifier) {
            return connected(id, scenes.state[id]!, r, &scenes, e)
        }
        let id = SessionID(scenes.nextSession)
        scenes.nextSession += 1
        scenes.created += 1
        scenes.lastActive[id] = e.clock
        settle(id)
        return [P(.configurationForConnecting, id), P(.willConnectTo, id)] + tail(id)
    }

    /// URLs first, then activities; with activate, between willEnterForeground and didBecomeActive.
    static func connected(_ id: SessionID, _ state: SceneActivationState, _ r: OpenRequest,
                          _ scenes: inout Scenes, _ e: LifecycleEngine) -> [P] {
        var opened: [P] = []
        if !r.payload.urlContexts.isEmpty { opened.append(P(.openURLContexts, id)) }
        if !r.payload.userActivities.isEmpty { opened.append(P(.continueUserActivity, id)) }
        guard r.activate else { return opened }
        let becomes = active(r.app, e)
        let activation = becomes ? [P(.didBecomeActive, id)] : []
        if becomes { scenes.lastActive[id] = e.clock }
        switch state {
        case .foregroundActive:
            return opened
        case .foregroundInactive:
            scenes.state[id] = becomes ? .foregroundActive : .foregroundInactive
            return opened + activation
        case .background, .unattached:
            scenes.state[id] = becomes ? .foregroundActive : .foregroundInactive
            return [P(.willEnterForeground, id)] + opened + activation
        }
    }

    /// What a launch delivers, right after didFinishLaunching and its discards: every stored
    /// Open of the app in order. No scene is connected before them.
    static func launchDeliveries(_ app: AppID, in e: LifecycleEngine) -> (events: [P], scenes: Scenes) {
        var scenes = Scenes(nextSession: e.nextSessionNumber)
        var out: [P] = []
        for p in e.pendingOpens(of: app) { out += deliver(p.request, &scenes, in: e) }
        return (out, scenes)
    }

    static func predictOpen(_ r: OpenRequest, in e: LifecycleEngine) -> CommandOracle.Prediction {
        let n = r.configurationName.utf8.count
        if r.payload.isEmpty || n == 0 || n > 255 || r.payload.urlContexts.contains(where: { $0.scheme == nil })
            || r.payload.userActivities.contains(where: { $0.activityType.isEmpty }) {
            return .refused(.invalidArgument)
        }
        if let id = r.session {
            guard let s = e.sessions[id] else {
                return .refused(.exactly(e.wasDiscarded(id) ? .sessionDiscarded(id) : .noSuchSession(id)))
            }
            if s.app != r.app { return .refused(.invalidArgument) }
        }
        guard let a = e.apps[r.app], a.process != .notRunning else {
            let waiting = e.apps[r.app]?.pendingOpens.count ?? 0
            return waiting >= e.configuration.maxPendingOpens ? .refused(.limit("MaxPendingOpens")) : .events([])
        }
        var scenes = scenes(of: r.app, in: e)
        return .events((a.process == .suspended ? [P(.resumed)] : []) + deliver(r, &scenes, in: e))
    }

    static func predictConditions(_ id: SessionID, _ c: ActivationConditions?, in e: LifecycleEngine) -> CommandOracle.Prediction {
        guard let s = e.sessions[id] else {
            return .refused(.exactly(e.wasDiscarded(id) ? .sessionDiscarded(id) : .noSuchSession(id)))
        }
        if s.condition != .live { return .refused(.invalidTransition) }
        let lists = [c?.canActivateFor ?? [], c?.prefersToActivateFor ?? []]
        if lists.contains(where: { $0.count > 32 || $0.contains { $0.isEmpty || $0.utf8.count > 1024 } }) {
            return .refused(.invalidArgument)
        }
        return .events([])
    }
}
