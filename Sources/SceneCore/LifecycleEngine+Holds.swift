/// What the system does to scenes: interruptions, locked or inactive login sessions, sleep and
/// a stop hold an app's scenes down (R28–R32), and the scenes a hold moved come back when it
/// ends. Which holds are in force is the shell's to decide (`HoldPolicy`); the engine moves the
/// scenes and remembers, for each scene it holds down, where it returns to (`heldScenes`).
extension LifecycleEngine {
    /// The hold on the app in `slot`, or nil when nothing holds it.
    @inline(__always)
    func activeHold(_ slot: Int) -> Hold? {
        guard holding else { return nil }
        let hold = holds.hold(for: apps.records[slot].id)
        return hold.level == .none ? nil : hold
    }

    /// A new set of holds: every app whose level changes has its scenes moved, with the cause
    /// of the hold that moved them (a hold that ends gives its cause to the return).
    mutating func setHolds(_ policy: HoldPolicy, effects: inout [Effect]) {
        let old = holds
        holds = policy
        holding = policy.holdsAny
        for slot in apps.records.indices {
            let id = apps.records[slot].id
            let before = old.hold(for: id), after = policy.hold(for: id)
            guard before.level != after.level else { continue }
            moveHeld(slot, to: after, from: before, effects: &effects)
        }
    }

    private mutating func moveHeld(_ slot: Int, to hold: Hold, from old: Hold, effects: inout [Effect]) {
        var changed = false
        for id in apps.records[slot].sessions {
            guard let index = sessions.index(forKey: id), sessions.values[index].condition == .live else { continue }
            if moveHeldScene(id, sessions.values[index].sceneState, slot, to: hold, from: old, effects: &effects) {
                changed = true
                effects.append(.sessionChanged(id))
            }
        }
        guard changed else { return }
        refreshActivity(slot, effects: &effects)
        effects.append(.appChanged(apps.records[slot].id))
    }

    /// One scene under a hold that changed; whether it moved.
    private mutating func moveHeldScene(_ id: SessionID, _ state: SceneActivationState, _ slot: Int,
                                        to hold: Hold, from old: Hold, effects: inout [Effect]) -> Bool {
        switch (hold.level, state) {
        case (.background, .foregroundActive):
            heldScenes[id] = .foregroundActive
            resignActive(id, cause: hold.cause, effects: &effects)
            enterBackground(id, cause: hold.cause, effects: &effects)
        case (.background, .foregroundInactive):
            if heldScenes[id] == nil { heldScenes[id] = .foregroundInactive }
            enterBackground(id, cause: hold.cause, effects: &effects)
        case (.inactive, .foregroundActive):
            heldScenes[id] = .foregroundActive
            resignActive(id, cause: hold.cause, effects: &effects)
        case (.inactive, .background) where heldScenes[id] != nil:
            // Less held than before (unlocked, still interrupted): back to the foreground.
            ensureRunning(slot, cause: old.cause, effects: &effects)
            enterForeground(id, cause: old.cause, effects: &effects)
        case (.none, _):
            guard let target = heldScenes.removeValue(forKey: id) else { return false }
            if state == .background {
                ensureRunning(slot, cause: old.cause, effects: &effects)
                enterForeground(id, cause: old.cause, effects: &effects)
            }
            guard target == .foregroundActive else { return state == .background }
            becomeActive(id, cause: old.cause, effects: &effects)
        default:
            return false
        }
        return true
    }

    /// foregroundInactive → foregroundActive, unless a hold keeps the scene down: then it
    /// stays inactive and becomes active when the hold ends (R28, R29).
    mutating func becomeActiveUnlessHeld(_ id: SessionID, _ slot: Int, cause: EventCause, effects: inout [Effect]) {
        if activeHold(slot) != nil {
            heldScenes[id] = .foregroundActive
        } else {
            becomeActive(id, cause: cause, effects: &effects)
        }
    }

    /// A scene asked to be where it is now (deactivated, sent to the background, released) no
    /// longer returns anywhere when a hold ends.
    @inline(__always)
    mutating func forgetHeld(_ id: SessionID) {
        if !heldScenes.isEmpty { heldScenes[id] = nil }
    }

    /// The background chain for every foreground scene of a running app (R32, R33): state is
    /// saved from the didEnterBackground answers before willTerminate.
    mutating func sendForegroundScenesToBackground(_ slot: Int, cause: EventCause, effects: inout [Effect]) {
        guard apps.records[slot].hasForegroundScene else { return }
        for id in apps.records[slot].sessions {
            guard let index = sessions.index(forKey: id), sessions.values[index].condition == .live else { continue }
            let state = sessions.values[index].sceneState
            guard state == .foregroundActive || state == .foregroundInactive else { continue }
            if state == .foregroundActive { resignActive(id, cause: cause, effects: &effects) }
            enterBackground(id, cause: cause, effects: &effects)
            effects.append(.sessionChanged(id))
        }
    }

    /// A suspended app runs again with no callback (R21): after the machine resumes from
    /// sleep (R31), or to be woken.
    mutating func resume(_ id: AppID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        guard let slot = apps.slot(of: id) else { throw .noSuchApp(id) }
        guard apps.records[slot].process == .suspended else {
            throw .invalidTransition(InvalidTransition(command: "resume", app: id, session: nil,
                                                       state: apps.records[slot].process.name,
                                                       reason: "only a suspended app can be resumed"))
        }
        resumeIfSuspended(slot, cause: cause, effects: &effects)
    }
}
