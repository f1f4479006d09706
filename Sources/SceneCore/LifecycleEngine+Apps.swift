/// App-level commands: launch, resume, suspend, terminate, memory warnings.
extension LifecycleEngine {
    /// Finds the app's record, creating it (not running) on first use.
    mutating func ensureApp(_ id: AppID, effects: inout [Effect]) {
        if apps[id] == nil {
            apps[id] = AppRecord(id: id)
            effects.append(.appChanged(id))
        }
    }

    mutating func launch(_ id: AppID, effects: inout [Effect]) throws(LifecycleError) {
        if let app = apps[id], app.process != .notRunning {
            throw .invalidTransition(InvalidTransition(command: "launch", app: id, session: nil,
                                                       state: app.process.name, reason: app.process == .suspended ? "the app is already launched (suspended); activate one of its sessions to resume it" : "the app is already running"))
        }
        ensureApp(id, effects: &effects)
        startProcess(id, effects: &effects)
    }

    /// A cold launch (R27): didFinishLaunching, then any discards queued while the app was not
    /// running (R14). A scene-based app launches into the background state (§1.2).
    mutating func startProcess(_ id: AppID, cause: EventCause = .request, effects: inout [Effect]) {
        apps[id]!.process = .running
        apps[id]!.launches += 1
        apps[id]!.launchedAt = clock
        emit(.didFinishLaunching, app: id, state: .process(.running), cause: cause, effects: &effects)
        let pending = apps[id]!.pendingDiscards
        if !pending.isEmpty {
            apps[id]!.pendingDiscards = []
            // U4 (undocumented): delivered right after didFinishLaunching, before any scene of
            // this launch connects, as Xcode's template describes ("shortly after").
            emit(.didDiscardSceneSessions, app: id, session: pending.count == 1 ? pending[0] : nil,
                 state: .process(.running), cause: cause, detail: .discarded(pending), effects: &effects)
        }
        refreshActivity(id, effects: &effects)
        effects.append(.appChanged(id))
    }

    /// A suspended process must run again before it can receive any callback.
    mutating func resumeIfSuspended(_ id: AppID, cause: EventCause, effects: inout [Effect]) {
        guard apps[id]!.process == .suspended else { return }
        apps[id]!.process = .running
        emit(.resumed, app: id, state: .process(.running), cause: cause, effects: &effects)
        refreshActivity(id, effects: &effects)
        effects.append(.appChanged(id))
    }

    /// Brings the app's process up, from not running or suspended, before a callback is delivered.
    mutating func ensureRunning(_ id: AppID, cause: EventCause, effects: inout [Effect]) {
        switch apps[id]!.process {
        case .notRunning: startProcess(id, cause: cause, effects: &effects)
        case .suspended: resumeIfSuspended(id, cause: cause, effects: &effects)
        case .running: break
        }
    }

    /// Suspension (R21): no callback, an observable state change.
    mutating func suspend(_ id: AppID, cause: EventCause, effects: inout [Effect]) {
        apps[id]!.process = .suspended
        apps[id]!.idleSince = nil
        apps[id]!.backgroundEnteredAt = nil
        emit(.suspended, app: id, state: .process(.suspended), cause: cause, effects: &effects)
        effects.append(.appChanged(id))
    }

    mutating func suspendEarly(_ id: AppID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        guard let app = apps[id] else { throw .noSuchApp(id) }
        func refuse(_ reason: String) -> LifecycleError {
            .invalidTransition(InvalidTransition(command: "suspend", app: id, session: nil,
                                                 state: app.process.name, reason: reason))
        }
        guard app.process == .running else { throw refuse("only a running app can be suspended") }
        guard !app.hasForegroundScene else { throw refuse("the app has a scene in the foreground") }
        guard app.tasks.isEmpty else { throw refuse("the app holds a background task") }
        suspend(id, cause: cause, effects: &effects)
    }

    mutating func terminate(_ id: AppID, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        guard let app = apps[id] else { throw .noSuchApp(id) }
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
        default: reason = .requested
        }
        endProcess(id, reason: reason, cause: cause, effects: &effects)
    }

    /// Process death. willTerminate only for a running, not suspended process and never for a
    /// background-task kill (R22, R24); the scenes go away with no callback, their sessions stay
    /// archived (§4.3). U8 (whether sceneDidDisconnect reaches the scenes before willTerminate)
    /// is undocumented: no, a termination is a process death, not a disconnection, and the
    /// sessions reconnect at the next launch without configurationForConnecting (R26).
    mutating func endProcess(_ id: AppID, reason: TerminationReason, cause: EventCause, effects: inout [Effect]) {
        if apps[id]!.process == .running && reason != .backgroundTaskExpired {
            emit(.willTerminate, app: id, state: .process(.running), cause: cause, effects: &effects)
        }
        var archived: [SessionID] = []
        for sid in apps[id]!.sessions.sorted() where sessions[sid]!.condition == .live {
            setSceneState(sid, .unattached)
            sessions[sid]!.condition = .archived
            archived.append(sid)
            effects.append(.sessionChanged(sid))
        }
        for token in apps[id]!.tasks {
            tasks[token] = nil
            effects.append(.taskRemoved(token))
        }
        apps[id]!.tasks = []
        apps[id]!.process = .notRunning
        apps[id]!.idleSince = nil
        apps[id]!.backgroundEnteredAt = nil
        emit(.terminated, app: id, state: .process(.notRunning), cause: cause,
             detail: .terminated(reason: reason, archived: archived), effects: &effects)
        effects.append(.appChanged(id))
    }

    /// R25: warnings go to running processes only; suspended ones run no code.
    mutating func memoryWarning(_ targets: [AppID]?, cause: EventCause, effects: inout [Effect]) throws(LifecycleError) {
        let ids: [AppID]
        if let targets {
            for id in targets where apps[id] == nil { throw .noSuchApp(id) }
            ids = Array(Set(targets)).sorted()
        } else {
            ids = apps.keys.sorted()
        }
        for id in ids where apps[id]!.process == .running {
            emit(.didReceiveMemoryWarning, app: id, state: .process(.running), cause: cause, effects: &effects)
        }
    }

    /// Recomputes the suspension clock and the task budget after anything that may change them,
    /// and queues the app's next wake-up.
    mutating func refreshActivity(_ id: AppID, effects: inout [Effect]) {
        let app = apps[id]!
        let runningInBackground = app.process == .running && !app.hasForegroundScene
        if runningInBackground {
            if app.backgroundEnteredAt == nil { apps[id]!.backgroundEnteredAt = clock }
            if app.tasks.isEmpty {
                if app.idleSince == nil { apps[id]!.idleSince = clock }
            } else if app.idleSince != nil {
                apps[id]!.idleSince = nil
            }
        } else {
            if app.backgroundEnteredAt != nil { apps[id]!.backgroundEnteredAt = nil }
            if app.idleSince != nil { apps[id]!.idleSince = nil }
            if app.process == .running && app.hasForegroundScene {
                // Background time is unlimited in the foreground: an expiration already sent
                // does not carry over to the next stay in the background.
                for token in app.tasks where tasks[token]!.expirationSentAt != nil {
                    tasks[token]!.expirationSentAt = nil
                    effects.append(.taskChanged(token))
                }
            }
        }
        schedule(id)
    }
}
