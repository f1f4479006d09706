// MARK: - Engine-state checks

extension ConformanceChecker {
    /// Compares the model built from the events with the engine: every scene state, session
    /// condition and process state the engine holds must have been announced by an event.
    public func disagreements(with engine: LifecycleEngine) -> [ConformanceViolation] {
        var found: [ConformanceViolation] = []
        func flag(_ rule: ConformanceRule, _ app: AppID?, _ session: SessionID?, _ message: String) {
            found.append(ConformanceViolation(rule: rule, app: app, session: session, message: message))
        }
        var matched = 0
        for (id, s) in engine.sessions {
            guard let m = sessions[id], !m.announced else {
                flag(.agreement, s.app, id, "the engine holds session \(id) (\(s.condition)), which no event connected")
                continue
            }
            matched += 1
            if m.live != (s.condition == .live) {
                flag(.agreement, s.app, id, "events say \(m.live ? "live" : "archived"), the engine says \(s.condition)")
            }
            if s.condition == .live && m.state != s.sceneState {
                flag(.agreement, s.app, id, "events say \(m.state), the engine says \(s.sceneState)")
            }
            if s.condition == .live && m.instance != s.sceneInstance {
                flag(.agreement, s.app, id, "events say scene instance \(m.instance), the engine says \(s.sceneInstance)")
            }
        }
        // Sessions the events still know and the engine no longer holds: only discards queued
        // for an app that is not running (they are announced at its next launch, R14).
        var queued = 0
        for (id, a) in engine.apps {
            if (apps[id]?.process ?? .notRunning) != a.process {
                flag(.agreement, id, nil, "events say \(apps[id]?.process ?? .notRunning), the engine says \(a.process)")
            }
            for p in a.pendingDiscards where sessions[p]?.live == false { queued += 1 }
        }
        if matched + queued != sessions.count {
            for (id, m) in sessions where engine.sessions.index(forKey: id) == nil && !m.announced {
                if engine.apps[m.app]?.pendingDiscards.contains(id) == true && !m.live { continue }
                flag(m.live ? .agreement : .R16, m.app, id,
                     "events say session \(id) is \(m.live ? "live" : "archived"), but the engine no longer has it")
            }
        }
        // A discarded session the engine still held would have been flagged above (no model
        // entry); what is left is that the identifier was really allocated. Checked by the
        // highest one only, so that the cost does not grow with the history.
        if let highest = highestDiscarded, !engine.wasDiscarded(highest) {
            flag(.agreement, nil, highest, "events discarded \(highest), the engine does not know it as discarded")
        }
        if apps.count > engine.apps.count {
            for (id, a) in apps where engine.apps[id] == nil && a.process != .notRunning {
                flag(.agreement, id, nil, "events say \(a.process), the engine does not know the app")
            }
        }
        if let t = lastTime, engine.clock < t { flag(.agreement, nil, nil, "the engine's clock \(engine.clock) is behind the last event \(t)") }
        if let s = lastSeq, engine.nextSequence <= s {
            flag(.agreement, nil, nil, "the engine's next sequence number \(engine.nextSequence) was already used")
        }
        return found
    }

    /// The engine's own bookkeeping: derived counts and sets match the sessions and tasks, each
    /// process state allows what the app holds, identifiers stay below their high-water marks,
    /// and no timer is overdue (everything due at or before the clock has fired, and every
    /// deadline is queued).
    public static func consistencyViolations(of engine: LifecycleEngine) -> [ConformanceViolation] {
        var found = EngineFindings()
        var listedSessions = 0, listedTasks = 0, foregroundActive = 0, connected = 0
        var listedSchedules = 0, listedNotifications = 0
        // Walk each app's own lists; then the totals prove that nothing is held outside them.
        for (id, a) in engine.apps {
            if a.id != id { found.flag(id, nil, "stored under \(id) but names itself \(a.id)") }
            checkSessions(of: a, id, engine, &found)
            listedSessions += a.sessions.count
            foregroundActive += Int(a.activeScenes)
            connected += Int(a.connectedScenes)
            var due = checkTasks(of: a, id, engine, &found)
            if let t = checkBackgroundWork(of: a, id, engine, &found) { due = due.map { min($0, t) } ?? t }
            listedTasks += a.tasks.count
            listedSchedules += a.scheduled.count
            listedNotifications += a.pendingNotifications.count
            if let t = checkProcess(of: a, id, engine, &found) { due = due.map { min($0, t) } ?? t }
            // Every deadline is queued: the next wake-up is never late.
            if let first = due, engine.nextDeadline.map({ $0 > first }) ?? true {
                found.flag(id, nil, "deadline \(first) is not queued (next wake-up \(engine.nextDeadline.map(\.description) ?? "none"))")
            }
        }
        if listedSessions != engine.sessions.count {
            for (sid, s) in engine.sessions where engine.apps[s.app]?.sessions.contains(sid) != true {
                found.flag(s.app, sid, "held by the engine but not listed by its app \(s.app)")
            }
        }
        if listedTasks != engine.tasks.count {
            for (token, t) in engine.tasks where engine.apps[t.app]?.tasks.contains(token) != true {
                found.flag(t.app, t.session, "task \(token) held by the engine but not listed by its app")
            }
        }
        if listedSchedules != engine.schedules.count || listedNotifications != engine.notifications.count {
            found.flag(nil, nil, "the apps list \(listedSchedules) scheduled tasks and \(listedNotifications) notifications, the engine holds \(engine.schedules.count) and \(engine.notifications.count)")
        }
        let earliest = engine.schedules.values.lazy.map(\.earliestBegin).min()
        if engine.nextScheduleDue != earliest {
            found.flag(nil, nil, "nextScheduleDue \(engine.nextScheduleDue.map(\.description) ?? "nil"), the schedules say \(earliest.map(\.description) ?? "nil")")
        }
        if engine.foregroundActiveSceneCount != foregroundActive || engine.liveSessionCount != connected {
            found.flag(nil, nil, "engine-wide scene counts disagree with the apps")
        }
        if engine.nextSequence == 0 { found.flag(nil, nil, "sequence numbers start at 1") }
        checkRouting(of: engine, &found)
        return found.list
    }

    /// Violations of the engine's bookkeeping, all under `ConformanceRule.engine`.
    struct EngineFindings {
        var list: [ConformanceViolation] = []

        mutating func flag(_ app: AppID?, _ session: SessionID?, _ message: String) {
            list.append(ConformanceViolation(rule: .engine, app: app, session: session, message: message))
        }
    }

    /// The sessions an app lists: held by the engine, its own, within the high-water mark, and
    /// counted by scene state as the app counts them.
    private static func checkSessions(of a: AppRecord, _ id: AppID, _ engine: LifecycleEngine,
                                      _ found: inout EngineFindings) {
        var active: Int32 = 0, inactive: Int32 = 0, background: Int32 = 0
        for sid in a.sessions {
            guard let s = engine.sessions[sid] else {
                found.flag(id, sid, "the app lists session \(sid), which the engine does not hold")
                continue
            }
            if s.id != sid { found.flag(id, sid, "stored under \(sid) but names itself \(s.id)") }
            if s.app != id { found.flag(id, sid, "listed by \(id) but belongs to \(s.app)") }
            if sid.rawValue == 0 || sid.rawValue >= engine.nextSessionNumber {
                found.flag(id, sid, "identifier beyond the high-water mark \(engine.nextSessionNumber)")
            }
            if s.createdAt > engine.clock { found.flag(id, sid, "created after the clock") }
            switch s.condition {
            case .discarded:
                found.flag(id, sid, "a discarded session is still held")
            case .archived:
                if s.sceneState != .unattached { found.flag(id, sid, "archived but its scene is \(s.sceneState)") }
            case .live:
                if s.sceneInstance == 0 { found.flag(id, sid, "live with no scene instance") }
                switch s.sceneState {
                case .foregroundActive: active += 1
                case .foregroundInactive: inactive += 1
                case .background: background += 1
                case .unattached: found.flag(id, sid, "live but unattached between commands")
                }
            }
        }
        if a.activeScenes != active || a.inactiveScenes != inactive || a.backgroundScenes != background {
            found.flag(id, nil, "scene counts \(a.activeScenes)/\(a.inactiveScenes)/\(a.backgroundScenes), sessions say \(active)/\(inactive)/\(background)")
        }
    }

    /// The tasks an app lists, in token order, held by the engine and none of them overdue.
    /// Returns the earliest deadline they set.
    private static func checkTasks(of a: AppRecord, _ id: AppID, _ engine: LifecycleEngine,
                                   _ found: inout EngineFindings) -> Timestamp? {
        let grace = engine.configuration.expirationGrace
        var due: Timestamp?
        var previous: TaskToken?
        for token in a.tasks {
            if let p = previous, p >= token { found.flag(id, nil, "app.tasks \(a.tasks) is not in token order") }
            previous = token
            guard let t = engine.tasks[token] else {
                found.flag(id, nil, "the app lists task \(token), which the engine does not hold")
                continue
            }
            if t.token != token { found.flag(id, nil, "task stored under \(token) names itself \(t.token)") }
            if t.app != id { found.flag(id, nil, "task \(token) listed by \(id) but belongs to \(t.app)") }
            if token.rawValue == 0 || token.rawValue >= engine.nextTaskNumber {
                found.flag(id, nil, "task \(token) beyond the high-water mark \(engine.nextTaskNumber)")
            }
            if let s = t.session, engine.sessions.index(forKey: s) == nil {
                found.flag(id, s, "task \(token) refers to session \(s), which is no longer open")
            }
            var deadline: Timestamp?
            // A suspended process runs no timer (sleep suspends it with its tasks, R31).
            if a.process != .running {
                continue
            } else if let sent = t.expirationSentAt {
                if a.hasForegroundScene { found.flag(id, nil, "task \(token) has an expiration pending in the foreground") }
                if sent + grace <= engine.clock {
                    found.flag(id, nil, "task \(token) outlived its expiration grace and its app still runs")
                }
                deadline = sent + grace
            } else if let expiry = engine.expiry(of: t) {
                if expiry < engine.clock { found.flag(id, nil, "task \(token) expired at \(expiry) without backgroundTaskWillExpire") }
                deadline = expiry
            }
            if let d = deadline, due.map({ d < $0 }) ?? true { due = d }
        }
        return due
    }

    /// What the app's process state allows it to hold (pending discards, scenes, tasks,
    /// clocks), and its suspension not overdue. Returns when it is due to be suspended.
    private static func checkProcess(of a: AppRecord, _ id: AppID, _ engine: LifecycleEngine,
                                     _ found: inout EngineFindings) -> Timestamp? {
        if Set(a.pendingDiscards).count != a.pendingDiscards.count { found.flag(id, nil, "a pending discard is queued twice") }
        for p in a.pendingDiscards where !engine.wasDiscarded(p) {
            found.flag(id, p, "pending discard of \(p), which is not a discarded identifier")
        }
        switch a.process {
        case .notRunning:
            if a.connectedScenes > 0 { found.flag(id, nil, "not running but has connected scenes") }
            if !a.tasks.isEmpty { found.flag(id, nil, "not running but holds tasks") }
            if !a.activeModes.isEmpty { found.flag(id, nil, "not running but declares background modes") }
            if a.idleSince != nil || a.backgroundEnteredAt != nil { found.flag(id, nil, "not running but has a running clock") }
        case .suspended:
            if a.hasForegroundScene { found.flag(id, nil, "suspended with a scene in the foreground") }
            // Tasks may be held: sleep suspends every app, whatever it holds (R31).
            if !a.pendingDiscards.isEmpty { found.flag(id, nil, "pending discards queued for a process in memory") }
            if a.idleSince != nil || a.backgroundEnteredAt != nil { found.flag(id, nil, "suspended but has a running clock") }
        case .running:
            if !a.pendingDiscards.isEmpty { found.flag(id, nil, "pending discards not delivered to a running process") }
            let inBackground = !a.hasForegroundScene
            if (a.backgroundEnteredAt != nil) != inBackground {
                found.flag(id, nil, "backgroundEnteredAt \(a.backgroundEnteredAt.map(\.description) ?? "nil") while \(a.applicationState)")
            }
            if (a.idleSince != nil) != (inBackground && a.holdsNoBackgroundWork) {
                found.flag(id, nil, "idleSince \(a.idleSince.map(\.description) ?? "nil") with \(a.tasks.count) tasks, \(a.wakes.count) wake items, modes [\(a.activeModes)] while \(a.applicationState)")
            }
            if let idle = a.idleSince, let entered = a.backgroundEnteredAt, idle < entered {
                found.flag(id, nil, "idle since before it entered the background")
            }
            if let t = engine.suspensionTime(of: a) {
                if t <= engine.clock && engine.configuration.suspendDelay > .zero {
                    found.flag(id, nil, "suspension was due at \(t) and has not happened (clock \(engine.clock))")
                }
                return t
            }
        }
        return nil
    }

    /// An app's scheduled tasks and notifications (its own, held by the engine, in order) and
    /// its open wake items (only while running, none overdue). Returns the earliest item timer.
    private static func checkBackgroundWork(of a: AppRecord, _ id: AppID, _ engine: LifecycleEngine,
                                            _ found: inout EngineFindings) -> Timestamp? {
        if a.scheduled != a.scheduled.sorted() || Set(a.scheduled).count != a.scheduled.count {
            found.flag(id, nil, "scheduled identifiers \(a.scheduled) are not sorted and distinct")
        }
        for identifier in a.scheduled where engine.schedules[ScheduleKey(app: id, identifier: identifier)]?.app != id {
            found.flag(id, nil, "lists scheduled task \(identifier), which the engine does not hold for it")
        }
        if a.pendingNotifications != a.pendingNotifications.sorted() {
            found.flag(id, nil, "pending notifications \(a.pendingNotifications) are not in id order")
        }
        for n in a.pendingNotifications {
            if engine.notifications[n]?.app != id { found.flag(id, nil, "lists notification \(n), which the engine does not hold for it") }
            if n.rawValue == 0 || n.rawValue >= engine.nextNotificationNumber { found.flag(id, nil, "notification \(n) beyond the high-water mark") }
        }
        if LifecycleEngine.notificationsHeld(by: a) > engine.configuration.maxPendingNotifications {
            found.flag(id, nil, "holds more notifications than MaxPendingNotifications")
        }
        guard !a.wakes.isEmpty else { return nil }
        if a.process != .running { found.flag(id, nil, "\(a.process) with \(a.wakes.count) open wake items") }
        if Set(a.wakes.map(\.subject)).count != a.wakes.count { found.flag(id, nil, "a wake item is open twice") }
        let due = LifecycleEngine.wakeDeadline(of: a, configuration: engine.configuration)
        if let due, due <= engine.clock { found.flag(id, nil, "a wake item was due at \(due) and is still open (clock \(engine.clock))") }
        return due
    }
}
