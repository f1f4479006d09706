/// Scene and session commands: connect, activate, deactivate, background, disconnect, discard.
///
/// A scene changes state only through its own command, its app's termination or the reclaim
/// policy; activating one scene never moves another (side-by-side windows, §2.4).
/// A command whose target is the scene's current state succeeds and emits nothing.
extension LifecycleEngine {
    public static let maxConfigurationNameBytes = 255

    static func checkFootprint(_ bytes: UInt64) throws(LifecycleError) {
        guard bytes <= SceneSession.maxFootprint else {
            throw .invalidArgument(name: "footprint", reason: "must be at most 1T (\(SceneSession.maxFootprint) bytes)")
        }
    }

    /// What a command needs to know of a session, read with one lookup.
    struct SessionHead {
        var condition: SessionCondition
        var sceneState: SceneActivationState
        var appSlot: Int
    }

    /// Looks up an open session, telling a discarded one from one that never existed.
    func head(_ id: SessionID) throws(LifecycleError) -> SessionHead {
        guard let index = sessions.index(forKey: id) else {
            throw wasDiscarded(id) ? .sessionDiscarded(id) : .noSuchSession(id)
        }
        let s = sessions.values[index]
        return SessionHead(condition: s.condition, sceneState: s.sceneState, appSlot: Int(s.appSlot))
    }

    mutating func connect(_ request: ConnectRequest, effects: inout [Effect]) throws(LifecycleError) -> SessionID {
        guard !request.configurationName.isEmpty, request.configurationName.utf8.count <= Self.maxConfigurationNameBytes else {
            throw .invalidArgument(name: "configuration", reason: "must be 1 to \(Self.maxConfigurationNameBytes) bytes")
        }
        try Self.checkFootprint(request.footprint)
        let slot = ensureApp(request.app, effects: &effects)
        return connectChecked(request, slot, effects: &effects)
    }

    /// A new session for a checked request (an Open's new scene is checked when accepted).
    mutating func connectChecked(_ request: ConnectRequest, _ slot: Int, effects: inout [Effect]) -> SessionID {
        ensureRunning(slot, cause: .request, effects: &effects)

        let id = SessionID(nextSessionNumber)
        nextSessionNumber += 1
        var session = SceneSession(
            id: id, app: apps.records[slot].id, role: request.role, configurationName: intern(request.configurationName),
            userInfo: request.userInfo, restoration: nil, footprint: request.footprint,
            condition: .live, sceneState: .unattached, sceneInstance: 1,
            createdAt: clock, lastActiveAt: clock, backgroundSince: clock,
            activations: 0, restores: 0, restoreCostMs: request.restoreCostMs, isProtected: request.isProtected)
        session.appSlot = Int32(slot)
        session.details = shared(session.details)
        sessions[id] = session
        apps.records[slot].sessions.insert(id)

        // R10: only a new session asks the app for its configuration.
        emit(.configurationForConnecting, app: slot, session: id, sceneInstance: 1,
             state: .scene(.unattached), cause: .request, effects: &effects)
        emit(.willConnectTo, app: slot, session: id, sceneInstance: 1, state: .scene(.unattached),
             cause: .request, detail: .connect(restoration: nil, reconnect: false, open: request.open), effects: &effects)
        if request.background {
            enterBackgroundFromUnattached(id, cause: .request, effects: &effects)
        } else {
            enterForeground(id, cause: .request, effects: &effects)
            becomeActiveUnlessHeld(id, slot, cause: .request, effects: &effects)
        }
        refreshActivity(slot, effects: &effects)
        effects.append(.sessionChanged(id))
        effects.append(.appChanged(apps.records[slot].id))
        return id
    }

    mutating func activate(_ id: SessionID, effects: inout [Effect]) throws(LifecycleError) {
        let session = try head(id)
        let slot = session.appSlot
        if session.condition == .archived {
            if sessions[id]!.savedRestoration.isStored {
                throw .savedDataUnavailable(id, reason: "its state-restoration data was not read from the store")
            }
            reconnect(id, effects: &effects)
        } else {
            if session.sceneState == .foregroundActive { return }
            bringToFront(id, slot, open: nil, effects: &effects)
        }
        refreshActivity(slot, effects: &effects)
        effects.append(.sessionChanged(id))
        effects.append(.appChanged(apps.records[slot].id))
    }

    /// A connected scene to foregroundActive (unless held), as Activate does; what it is opened
    /// with goes after willEnterForeground and before didBecomeActive.
    mutating func bringToFront(_ id: SessionID, _ slot: Int, open: OpenPayload?, effects: inout [Effect]) {
        switch sessions[id]!.sceneState {
        case .foregroundActive:
            if let open { emitOpen(id, slot, open, effects: &effects) }
        case .foregroundInactive:
            // R4: back from an interruption: didBecomeActive only.
            if let open { emitOpen(id, slot, open, effects: &effects) }
            becomeActiveUnlessHeld(id, slot, cause: .request, effects: &effects)
        case .background, .unattached:
            ensureRunning(slot, cause: .request, effects: &effects)
            enterForeground(id, cause: .request, effects: &effects)
            if let open { emitOpen(id, slot, open, effects: &effects) }
            becomeActiveUnlessHeld(id, slot, cause: .request, effects: &effects)
        }
    }

    /// §2.7: a new scene instance for the same session; no configurationForConnecting (R10), the
    /// saved state-restoration data in willConnectTo (R11, R26), then the foreground chain (or,
    /// for an Open without activation, the background).
    mutating func reconnect(_ id: SessionID, open: OpenPayload? = nil, background: Bool = false,
                            effects: inout [Effect]) {
        let slot = Int(sessions[id]!.appSlot)
        ensureRunning(slot, cause: .request, effects: &effects)
        if sessions[id]!.condition == .live {
            // The launch just now delivered a stored Open that reconnected this very session.
            if let open { emitOpen(id, slot, open, effects: &effects) }
            if !background { bringToFront(id, slot, open: nil, effects: &effects) }
            return
        }
        let (instance, restoration): (UInt32, RestorationData?) = withSession(id) { s in
            s.condition = .live
            s.sceneInstance += 1
            s.restores += 1
            return (s.sceneInstance, s.restoration)
        }
        emit(.willConnectTo, app: slot, session: id, sceneInstance: instance, state: .scene(.unattached),
             cause: .request, detail: .connect(restoration: restoration, reconnect: true, open: open), effects: &effects)
        if background {
            enterBackgroundFromUnattached(id, cause: .request, effects: &effects)
        } else {
            enterForeground(id, cause: .request, effects: &effects)
            becomeActiveUnlessHeld(id, slot, cause: .request, effects: &effects)
        }
    }

    mutating func deactivate(_ id: SessionID, effects: inout [Effect]) throws(LifecycleError) {
        let session = try head(id)
        guard session.condition == .live else {
            throw refusal("deactivate", id, session, "the session has no connected scene")
        }
        switch session.sceneState {
        case .foregroundInactive:
            // Held down by the system, it now stays inactive when the hold ends.
            forgetHeld(id)
            return
        case .foregroundActive:
            resignActive(id, cause: .request, effects: &effects)
        case .background, .unattached:
            throw refusal("deactivate", id, session, "only a scene in the foreground can be deactivated")
        }
        refreshActivity(session.appSlot, effects: &effects)
        effects.append(.sessionChanged(id))
        effects.append(.appChanged(apps.records[session.appSlot].id))
    }

    mutating func background(_ id: SessionID, effects: inout [Effect]) throws(LifecycleError) {
        let session = try head(id)
        guard session.condition == .live else {
            throw refusal("background", id, session, "the session has no connected scene; activate it to reconnect")
        }
        // Sent to the background on purpose: a hold that ends does not bring it back.
        forgetHeld(id)
        switch session.sceneState {
        case .background, .unattached:
            return
        case .foregroundActive:
            resignActive(id, cause: .request, effects: &effects)
            enterBackground(id, cause: .request, effects: &effects)
        case .foregroundInactive:
            enterBackground(id, cause: .request, effects: &effects)
        }
        refreshActivity(session.appSlot, effects: &effects)
        effects.append(.sessionChanged(id))
        effects.append(.appChanged(apps.records[session.appSlot].id))
    }

    mutating func disconnect(_ id: SessionID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        let session = try head(id)
        guard session.condition == .live else { return }
        if case .reclaim = cause, session.sceneState != .background {
            // R6: system-initiated disconnection only ever takes a background scene.
            throw refusal("disconnect", id, session, "reclaim only disconnects background scenes")
        }
        releaseScene(id, cause: cause, effects: &effects)
        refreshActivity(session.appSlot, effects: &effects)
        effects.append(.sessionChanged(id))
        effects.append(.appChanged(apps.records[session.appSlot].id))
    }

    /// Runs the scene down to unattached: resign and background chain if needed (R3), then
    /// didDisconnect (R2). The session is kept, archived (R12, R16).
    mutating func releaseScene(_ id: SessionID, cause: EventCause, effects: inout [Effect]) {
        let slot = Int(sessions[id]!.appSlot)
        // A suspended process must run to receive sceneDidDisconnect (§2.6 step 1, mechanism
        // undocumented): it is resumed first and, idle again, re-suspends after the delay.
        resumeIfSuspended(slot, cause: cause, effects: &effects)
        if sessions[id]!.sceneState == .foregroundActive { resignActive(id, cause: cause, effects: &effects) }
        if sessions[id]!.sceneState == .foregroundInactive { enterBackground(id, cause: cause, effects: &effects) }
        setSceneState(id, .unattached)
        let instance: UInt32 = withSession(id) { s in
            s.condition = .archived
            return s.sceneInstance
        }
        forgetConditions(id, effects: &effects)
        emit(.didDisconnect, app: slot, session: id, sceneInstance: instance,
             state: .scene(.unattached), cause: cause, effects: &effects)
    }

    mutating func discard(_ id: SessionID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        let session = try head(id)
        if case .reclaim = cause {
            // R12: memory pressure never destroys a session.
            throw refusal("discard", id, session, "memory pressure never discards a session")
        }
        let slot = session.appSlot
        if apps.records[slot].process == .notRunning {
            // R14: nothing can be told now; the app hears of it after its next launch.
            apps.records[slot].pendingDiscards.append(id)
        } else {
            // R13: the scene disconnects first (the full resign and background chain, as for any
            // disconnect from the foreground; the observed shortcut S10 is not reproduced).
            if session.condition == .live {
                releaseScene(id, cause: cause, effects: &effects)
            } else {
                resumeIfSuspended(slot, cause: cause, effects: &effects)
            }
            emit(.didDiscardSceneSessions, app: slot, session: id, state: .process(.running), cause: cause,
                 detail: .discarded([id]), effects: &effects)
        }
        sessions[id] = nil
        apps.records[slot].sessions.remove(id)
        // A task begun for this session keeps its app running, but must not name a discarded
        // session in a later backgroundTaskWillExpire (R15).
        for token in apps.records[slot].tasks where tasks[token]!.session == id {
            tasks[token]!.session = nil
            effects.append(.taskChanged(token))
        }
        refreshActivity(slot, effects: &effects)
        effects.append(.sessionRemoved(id))
        effects.append(.appChanged(apps.records[slot].id))
    }

    // MARK: - Single transitions, each one callback

    /// S3/S8: unattached or background → foregroundInactive.
    mutating func enterForeground(_ id: SessionID, cause: EventCause, effects: inout [Effect]) {
        let slot = setSceneState(id, .foregroundInactive)
        emit(.willEnterForeground, app: slot, session: id, sceneInstance: sessions[id]!.sceneInstance,
             state: .scene(.foregroundInactive), cause: cause, effects: &effects)
    }

    /// S5: foregroundInactive → foregroundActive.
    mutating func becomeActive(_ id: SessionID, cause: EventCause, effects: inout [Effect]) {
        let slot = setSceneState(id, .foregroundActive)
        let now = clock
        let instance: UInt32 = withSession(id) { s in
            s.activations &+= 1
            s.activationScore = s.activationScore(at: now) + 1
            s.lastActiveAt = now
            return s.sceneInstance
        }
        emit(.didBecomeActive, app: slot, session: id, sceneInstance: instance,
             state: .scene(.foregroundActive), cause: cause, effects: &effects)
    }

    /// S6: foregroundActive → foregroundInactive.
    mutating func resignActive(_ id: SessionID, cause: EventCause, effects: inout [Effect]) {
        let slot = setSceneState(id, .foregroundInactive)
        let now = clock
        let instance: UInt32 = withSession(id) { s in
            // The score is kept "as of lastActiveAt": decay it to the new reference time.
            s.activationScore = s.activationScore(at: now)
            s.lastActiveAt = now
            return s.sceneInstance
        }
        emit(.willResignActive, app: slot, session: id, sceneInstance: instance,
             state: .scene(.foregroundInactive), cause: cause, effects: &effects)
    }

    /// S7: foregroundInactive → background.
    mutating func enterBackground(_ id: SessionID, cause: EventCause, effects: inout [Effect]) {
        let slot = setSceneState(id, .background)
        let now = clock
        let instance: UInt32 = withSession(id) { s in
            s.backgroundSince = now
            return s.sceneInstance
        }
        emit(.didEnterBackground, app: slot, session: id, sceneInstance: instance,
             state: .scene(.background), cause: cause, effects: &effects)
    }

    /// S4: a scene connected straight into the background. Which callback UIKit sends is
    /// undocumented (U7); we send didEnterBackground, as an app-based app launched into the
    /// background receives applicationDidEnterBackground (§2.13), so that every state change has
    /// its callback.
    /// The app then gets the whole suspension delay to handle it, as after any didEnterBackground
    /// (§2.2: suspended "shortly after" the callback returns) and as a resumed app does: an app
    /// already idle in the background restarts its suspension clock (its task budget still runs
    /// from when the app entered the background).
    mutating func enterBackgroundFromUnattached(_ id: SessionID, cause: EventCause, effects: inout [Effect]) {
        enterBackground(id, cause: cause, effects: &effects)
        let slot = Int(sessions[id]!.appSlot)
        if apps.records[slot].idleSince != nil { apps.records[slot].idleSince = nil }
    }

    func refusal(_ command: String, _ id: SessionID, _ session: SessionHead, _ reason: String) -> LifecycleError {
        let state = session.condition == .live ? session.sceneState.name : session.condition.name
        return .invalidTransition(InvalidTransition(command: command, app: apps.records[session.appSlot].id, session: id,
                                                    state: state, reason: reason))
    }
}
