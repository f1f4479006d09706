/// Routing: Open delivers a URL or an activity to a scene of the app the daemon chose, and
/// scenes declare which ones they take (UISceneActivationConditions). An app that is not
/// running keeps its Opens stored until its next launch delivers them.
extension LifecycleEngine {
    /// Patterns per list, and bytes per pattern: conditions are stored and matched at every Open.
    public static let maxActivationPatterns = 32
    public static let maxActivationPatternBytes = 1024

    mutating func applyRouting(_ command: Command, effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        switch command {
        case .open(let request):
            return try open(request, effects: &effects)
        case .setActivationConditions(let id, let conditions):
            try setActivationConditions(id, conditions, effects: &effects)
            return .done
        default:
            throw .invalidArgument(name: "command", reason: "not a routing command")
        }
    }

    /// Everything is checked before anything changes: a stored Open must be deliverable at the
    /// launch, where nothing can be refused any more.
    mutating func open(_ request: OpenRequest, effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        try Self.checkOpen(request)
        let existing = apps.slot(of: request.app)
        if let id = request.session {
            let s = try head(id)
            guard let existing, s.appSlot == existing else {
                throw .invalidArgument(name: "session", reason: "\(id) belongs to \(apps.records[s.appSlot].id), not \(request.app)")
            }
            if s.condition == .archived && apps.records[existing].process != .notRunning
                && sessions[id]!.savedRestoration.isStored {
                throw .savedDataUnavailable(id, reason: "its state-restoration data was not read from the store")
            }
        }
        if let existing, apps.records[existing].process == .notRunning {
            let count = apps.records[existing].pendingOpens.count
            guard count < configuration.maxPendingOpens else {
                throw .limitExceeded(limit: "MaxPendingOpens", maximum: configuration.maxPendingOpens,
                                     reason: "\(request.app) already has \(count) opens waiting for its launch")
            }
        }
        let slot = ensureApp(request.app, effects: &effects)
        if apps.records[slot].process == .notRunning {
            return .open(storeOpen(request, slot, effects: &effects))
        }
        resumeIfSuspended(slot, cause: .request, effects: &effects)
        return .session(deliver(request, slot, effects: &effects))
    }

    static func checkOpen(_ request: OpenRequest) throws(LifecycleError) {
        guard !request.payload.isEmpty else {
            throw .invalidArgument(name: "payload", reason: "an Open needs a URL or an activity")
        }
        for c in request.payload.urlContexts where c.scheme == nil {
            throw .invalidArgument(name: "url", reason: "\(c.url.prefix(64)) has no scheme (RFC 3986)")
        }
        for a in request.payload.userActivities where a.activityType.isEmpty {
            throw .invalidArgument(name: "activity", reason: "an activity needs its activityType")
        }
        guard !request.configurationName.isEmpty, request.configurationName.utf8.count <= maxConfigurationNameBytes else {
            throw .invalidArgument(name: "configuration", reason: "must be 1 to \(maxConfigurationNameBytes) bytes")
        }
    }

    private mutating func storeOpen(_ request: OpenRequest, _ slot: Int, effects: inout [Effect]) -> OpenID {
        let id = OpenID(nextOpenNumber)
        nextOpenNumber += 1
        var stored = request
        stored.app = apps.records[slot].id
        pendingOpens[id] = PendingOpen(id: id, request: stored, queuedAt: clock)
        apps.records[slot].pendingOpens.append(id)
        effects.append(.openChanged(id))
        effects.append(.appChanged(apps.records[slot].id))
        return id
    }

    /// At a launch, right after didFinishLaunching and its discards: the stored Opens in the
    /// order they were accepted, each removed in the same batch that delivers it.
    mutating func deliverPendingOpens(_ slot: Int, effects: inout [Effect]) {
        let queued = apps.records[slot].pendingOpens
        guard !queued.isEmpty else { return }
        apps.records[slot].pendingOpens = []
        for id in queued {
            guard let pending = pendingOpens.removeValue(forKey: id) else { continue }
            effects.append(.openRemoved(id))
            _ = deliver(pending.request, slot, effects: &effects)
        }
    }

    /// The app runs: the given session (reconnected if archived), else the connected scene the
    /// conditions choose, else a new scene. A stored Open whose session has since been
    /// discarded, or whose saved data is not at hand, is chosen for like one without a session.
    private mutating func deliver(_ request: OpenRequest, _ slot: Int, effects: inout [Effect]) -> SessionID {
        if let id = request.session, let index = sessions.index(forKey: id), Int(sessions.values[index].appSlot) == slot {
            if sessions.values[index].condition == .live {
                deliverToConnected(id, request, slot, effects: &effects)
                return id
            }
            if !sessions.values[index].savedRestoration.isStored {
                reconnect(id, open: request.payload, background: !request.activate, effects: &effects)
                finishOpen(id, slot, effects: &effects)
                return id
            }
        }
        if let id = SceneSelection.choose(candidates(slot), target: request.payload.targetContentIdentifier) {
            deliverToConnected(id, request, slot, effects: &effects)
            return id
        }
        let connect = ConnectRequest(app: apps.records[slot].id, role: request.role,
                                     configurationName: request.configurationName,
                                     background: !request.activate, open: request.payload)
        return connectChecked(connect, slot, effects: &effects)
    }

    private func candidates(_ slot: Int) -> [SceneSelection.Candidate] {
        var list: [SceneSelection.Candidate] = []
        list.reserveCapacity(Int(apps.records[slot].connectedScenes))
        for id in apps.records[slot].sessions {
            guard let index = sessions.index(forKey: id), sessions.values[index].condition == .live else { continue }
            let s = sessions.values[index]
            list.append(SceneSelection.Candidate(id: id, state: s.sceneState, lastActiveAt: s.lastActiveAt,
                                                 conditions: activationConditions[id] ?? .default))
        }
        return list
    }

    private mutating func deliverToConnected(_ id: SessionID, _ request: OpenRequest, _ slot: Int,
                                             effects: inout [Effect]) {
        if request.activate {
            bringToFront(id, slot, open: request.payload, effects: &effects)
        } else {
            emitOpen(id, slot, request.payload, effects: &effects)
        }
        finishOpen(id, slot, effects: &effects)
    }

    private mutating func finishOpen(_ id: SessionID, _ slot: Int, effects: inout [Effect]) {
        refreshActivity(slot, effects: &effects)
        effects.append(.sessionChanged(id))
        effects.append(.appChanged(apps.records[slot].id))
    }

    /// openURLContexts with the URLs, then continueUserActivity with the activities, in the
    /// scene's current state.
    mutating func emitOpen(_ id: SessionID, _ slot: Int, _ payload: OpenPayload, effects: inout [Effect]) {
        let s = sessions[id]!
        if !payload.urlContexts.isEmpty {
            emit(.openURLContexts, app: slot, session: id, sceneInstance: s.sceneInstance, state: .scene(s.sceneState),
                 cause: .request, detail: .open(OpenPayload(urlContexts: payload.urlContexts)), effects: &effects)
        }
        if !payload.userActivities.isEmpty {
            emit(.continueUserActivity, app: slot, session: id, sceneInstance: s.sceneInstance,
                 state: .scene(s.sceneState), cause: .request,
                 detail: .open(OpenPayload(userActivities: payload.userActivities)), effects: &effects)
        }
    }

    // MARK: - Activation conditions

    mutating func setActivationConditions(_ id: SessionID, _ conditions: ActivationConditions?,
                                          effects: inout [Effect]) throws(LifecycleError) {
        let s = try head(id)
        guard s.condition == .live else {
            throw refusal("setActivationConditions", id, s, "the session has no connected scene")
        }
        let new = conditions ?? .default
        try Self.checkPatterns(new.canActivateFor ?? [], name: "canActivateFor")
        try Self.checkPatterns(new.prefersToActivateFor, name: "prefersToActivateFor")
        if new == .default {
            guard activationConditions.removeValue(forKey: id) != nil else { return }
        } else {
            guard activationConditions[id] != new else { return }
            activationConditions[id] = new
        }
        effects.append(.conditionsChanged(id))
    }

    static func checkPatterns(_ patterns: [String], name: String) throws(LifecycleError) {
        guard patterns.count <= maxActivationPatterns else {
            throw .invalidArgument(name: name, reason: "at most \(maxActivationPatterns) patterns")
        }
        for p in patterns where p.isEmpty || p.utf8.count > maxActivationPatternBytes {
            throw .invalidArgument(name: name, reason: "each pattern must be 1 to \(maxActivationPatternBytes) bytes")
        }
    }

    /// A scene that goes takes its conditions with it (disconnect, discard, process death).
    mutating func forgetConditions(_ id: SessionID, effects: inout [Effect]) {
        guard !activationConditions.isEmpty, activationConditions.removeValue(forKey: id) != nil else { return }
        effects.append(.conditionsChanged(id))
    }

    // MARK: - Restore and views

    /// Adopts stored Opens and conditions: Opens of unknown apps and duplicates are refused;
    /// conditions of a scene no longer connected are dropped (they went with it).
    mutating func restoreRouting(_ opens: [PendingOpen], nextOpen: UInt64,
                                 conditions: [SessionID: ActivationConditions]) throws(LifecycleError) {
        var highest: UInt64 = 0
        for p in opens.sorted(by: { $0.id < $1.id }) {
            guard let slot = apps.slot(of: p.request.app) else {
                throw .invalidArgument(name: "snapshot", reason: "open \(p.id) belongs to unknown app \(p.request.app)")
            }
            guard pendingOpens[p.id] == nil else {
                throw .invalidArgument(name: "snapshot", reason: "open \(p.id) appears twice")
            }
            pendingOpens[p.id] = p
            apps.records[slot].pendingOpens.append(p.id)
            highest = max(highest, p.id.number)
        }
        nextOpenNumber = max(nextOpen, highest &+ 1, 1)
        for (id, c) in conditions where c != .default && sessions[id]?.condition == .live {
            activationConditions[id] = c
        }
    }

    /// The app's stored Opens, oldest first.
    public func pendingOpens(of app: AppID) -> [PendingOpen] {
        guard let record = apps[app] else { return [] }
        return record.pendingOpens.compactMap { pendingOpens[$0] }
    }

    /// A scene's activation conditions (UIKit's defaults unless it set others).
    public func activationConditions(of id: SessionID) -> ActivationConditions {
        activationConditions[id] ?? .default
    }
}
