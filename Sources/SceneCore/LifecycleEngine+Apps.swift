/// App-level commands: launch, resume, suspend, terminate, memory warnings. Internally an app is
/// named by its slot in `apps` (see AppTable).
extension LifecycleEngine {
    /// Finds the app's slot, creating its record (not running) on first use.
    mutating func ensureApp(_ id: AppID, effects: inout [Effect]) -> Int {
        if let slot = apps.slot(of: id) { return slot }
        effects.append(.appChanged(id))
        return apps.insert(AppRecord(id: id))
    }

    mutating func launch(_ id: AppID, cause: EventCause = .request, effects: inout [Effect]) throws(LifecycleError) {
        if let app = apps[id], app.process != .notRunning {
            let reason = app.process == .suspended
                ? "the app is already launched (suspended); activate one of its sessions to resume it"
                : "the app is already running"
            throw .invalidTransition(InvalidTransition(command: "launch", app: id, session: nil,
                                                       state: app.process.name, reason: reason))
        }
        let slot = ensureApp(id, effects: &effects)
        startProcess(slot, cause: cause, effects: &effects)
    }

    /// A cold launch (R27): didFinishLaunching, then any discards queued while the app was not
    /// running (R14). A scene-based app launches into the background state (§1.2).
    mutating func startProcess(_ slot: Int, cause: EventCause = .request, effects: inout [Effect]) {
        apps.records[slot].process = .running
        apps.records[slot].launches += 1
        apps.records[slot].launchedAt = clock
        residentBytes &+= apps.records[slot].baseFootprint
        emit(.didFinishLaunching, app: slot, state: .process(.running), cause: cause, effects: &effects)
        let pending = apps.records[slot].pendingDiscards
        if !pending.isEmpty {
            apps.records[slot].pendingDiscards = []
            // U4 (undocumented): delivered right after didFinishLaunching, before any scene of
            // this launch connects, as Xcode's template describes ("shortly after").
            emit(.didDiscardSceneSessions, app: slot, session: pending.count == 1 ? pending[0] : nil,
                 state: .process(.running), cause: cause, detail: .discarded(pending), effects: &effects)
        }
        deliverPendingOpens(slot, effects: &effects)
        refreshActivity(slot, effects: &effects)
        effects.append(.appChanged(apps.records[slot].id))
    }

    /// A suspended process must run again before it can receive any callback.
    mutating func resumeIfSuspended(_ slot: Int, cause: EventCause, effects: inout [Effect]) {
        guard apps.records[slot].process == .suspended else { return }
        apps.records[slot].process = .running
        // Sleep suspends an app with its tasks (R31), ending its stay in the background: the
        // resumed app starts a new one, whose budget and warning (R24) its tasks get anew,
        // rather than being killed at once for a grace it spent frozen.
        for token in apps.records[slot].tasks where tasks[token]!.expirationSentAt != nil {
            tasks[token]!.expirationSentAt = nil
            effects.append(.taskChanged(token))
        }
        emit(.resumed, app: slot, state: .process(.running), cause: cause, effects: &effects)
        refreshActivity(slot, effects: &effects)
        effects.append(.appChanged(apps.records[slot].id))
    }

    /// Brings the app's process up, from not running or suspended, before a callback is delivered.
    mutating func ensureRunning(_ slot: Int, cause: EventCause, effects: inout [Effect]) {
        switch apps.records[slot].process {
        case .notRunning: startProcess(slot, cause: cause, effects: &effects)
        case .suspended: resumeIfSuspended(slot, cause: cause, effects: &effects)
        case .running: break
        }
    }

    /// Suspension (R21): no callback, an observable state change.
    mutating func suspend(_ slot: Int, cause: EventCause, effects: inout [Effect]) {
        apps.records[slot].process = .suspended
        // Sleep suspends a woken app too: its open items close unanswered (R31, R34).
        if !apps.records[slot].wakes.isEmpty { apps.records[slot].wakes = [] }
        apps.records[slot].idleSince = nil
        apps.records[slot].backgroundEnteredAt = nil
        emit(.suspended, app: slot, state: .process(.suspended), cause: cause, effects: &effects)
        effects.append(.appChanged(apps.records[slot].id))
    }

    mutating func suspendEarly(_ id: AppID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        guard let slot = apps.slot(of: id) else { throw .noSuchApp(id) }
        let app = apps.records[slot]
        func refuse(_ reason: String) -> LifecycleError {
            .invalidTransition(InvalidTransition(command: "suspend", app: id, session: nil,
                                                 state: app.process.name, reason: reason))
        }
        guard app.process == .running else { throw refuse("only a running app can be suspended") }
        guard !app.hasForegroundScene else { throw refuse("the app has a scene in the foreground") }
        if cause != .sleep {
            guard app.tasks.isEmpty else { throw refuse("the app holds a background task") }
            guard app.wakes.isEmpty else { throw refuse("the app is handling a background wake") }
            guard app.activeModes.isEmpty else { throw refuse("the app declares a background mode (\(app.activeModes))") }
        }
        suspend(slot, cause: cause, effects: &effects)
    }

    mutating func terminate(_ id: AppID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        guard let slot = apps.slot(of: id) else { throw .noSuchApp(id) }
        let app = apps.records[slot]
        guard app.process != .notRunning else {
            throw .invalidTransition(InvalidTransition(command: "terminate", app: id, session: nil,
                                                       state: app.process.name, reason: "the app is not running"))
        }
        if case .reclaim = cause, app.hasForegroundScene {
            throw .invalidTransition(InvalidTransition(command: "terminate", app: id, session: nil,
                                                       state: app.applicationState.name,
                                                       reason: "reclaim never terminates an app with a foreground scene"))
        }
        let reason: TerminationReason
        switch cause {
        case .reclaim: reason = .memoryPressure
        case .shutdown: reason = .shutdown
        default: reason = .requested
        }
        endProcess(slot, reason: reason, cause: cause, effects: &effects)
    }

    /// A death the app did not ask for and scened did not cause by terminating it: the
    /// process exited or was killed as hung. An app that is not running has nothing to lose.
    mutating func processDied(_ id: AppID, reason: TerminationReason, effects: inout [Effect]) throws(LifecycleError) {
        guard let slot = apps.slot(of: id) else { throw .noSuchApp(id) }
        guard apps.records[slot].process != .notRunning else {
            throw .invalidTransition(InvalidTransition(command: "processDied", app: id, session: nil,
                                                       state: apps.records[slot].process.name, reason: "the app is not running"))
        }
        endProcess(slot, reason: reason, cause: .request, effects: &effects)
    }

    /// Process death. willTerminate only for a running, not suspended process and never for a
    /// background-task kill, a crash or a hung process (R22, R23, R24); the scenes go away with no callback, their sessions stay
    /// archived (§4.3). U8 (whether sceneDidDisconnect reaches the scenes before willTerminate)
    /// is undocumented: no, a termination is a process death, not a disconnection, and the
    /// sessions reconnect at the next launch without configurationForConnecting (R26).
    mutating func endProcess(_ slot: Int, reason: TerminationReason, cause: EventCause, effects: inout [Effect]) {
        if apps.records[slot].process == .running && reason.deliversWillTerminate {
            // R32, R33: what the foreground scenes hold is saved before the app is told.
            sendForegroundScenesToBackground(slot, cause: cause, effects: &effects)
            emit(.willTerminate, app: slot, state: .process(.running), cause: cause, effects: &effects)
        }
        var archived: [SessionID] = []
        for sid in apps.records[slot].sessions.sorted() where sessions[sid]!.condition == .live {
            setSceneState(sid, .unattached)
            sessions.values[sessions.index(forKey: sid)!].condition = .archived
            forgetConditions(sid, effects: &effects)
            archived.append(sid)
            effects.append(.sessionChanged(sid))
        }
        for token in apps.records[slot].tasks {
            tasks[token] = nil
            effects.append(.taskRemoved(token))
        }
        apps.records[slot].tasks = []
        apps.records[slot].wakes = []
        apps.records[slot].activeModes = []
        apps.records[slot].process = .notRunning
        apps.records[slot].idleSince = nil
        apps.records[slot].backgroundEnteredAt = nil
        residentBytes &-= apps.records[slot].baseFootprint
        emit(.terminated, app: slot, state: .process(.notRunning), cause: cause,
             detail: .terminated(reason: reason, archived: archived), effects: &effects)
        effects.append(.appChanged(apps.records[slot].id))
    }

    /// R25: warnings go to running processes only; suspended ones run no code.
    mutating func memoryWarning(_ targets: [AppID]?, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        var slots: [Int] = []
        if let targets {
            for id in targets {
                guard let slot = apps.slot(of: id) else { throw .noSuchApp(id) }
                if !slots.contains(slot) { slots.append(slot) }
            }
        } else {
            slots = Array(apps.records.indices)
        }
        slots.sort { apps.records[$0].id < apps.records[$1].id }
        for slot in slots where apps.records[slot].process == .running {
            emit(.didReceiveMemoryWarning, app: slot, state: .process(.running), cause: cause, effects: &effects)
        }
    }

    /// Recomputes the suspension clock and the task budget after anything that may change them,
    /// and queues the app's next wake-up.
    mutating func refreshActivity(_ slot: Int, effects: inout [Effect]) {
        let process = apps.records[slot].process
        let foreground = apps.records[slot].hasForegroundScene
        if process == .running && !foreground {
            if apps.records[slot].backgroundEnteredAt == nil { apps.records[slot].backgroundEnteredAt = clock }
            if apps.records[slot].holdsNoBackgroundWork {
                if apps.records[slot].idleSince == nil { apps.records[slot].idleSince = clock }
            } else if apps.records[slot].idleSince != nil {
                apps.records[slot].idleSince = nil
            }
        } else {
            if apps.records[slot].backgroundEnteredAt != nil { apps.records[slot].backgroundEnteredAt = nil }
            if apps.records[slot].idleSince != nil { apps.records[slot].idleSince = nil }
            if process == .running && foreground && !apps.records[slot].tasks.isEmpty {
                // Background time is unlimited in the foreground: an expiration already sent
                // does not carry over to the next stay in the background.
                for token in apps.records[slot].tasks where tasks[token]!.expirationSentAt != nil {
                    tasks[token]!.expirationSentAt = nil
                    effects.append(.taskChanged(token))
                }
            }
        }
        schedule(slot)
    }
}
