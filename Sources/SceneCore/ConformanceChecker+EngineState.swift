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
        var found: [ConformanceViolation] = []
        func flag(_ app: AppID?, _ session: SessionID?, _ message: String) {
            found.append(ConformanceViolation(rule: .engine, app: app, session: session, message: message))
        }
        let config = engine.configuration
        var listedSessions = 0, listedTasks = 0, foregroundActive = 0, connected = 0
        // Walk each app's own lists; then the totals prove that nothing is held outside them.
        for (id, a) in engine.apps {
            if a.id != id { flag(id, nil, "stored under \(id) but names itself \(a.id)") }
            var active: Int32 = 0, inactive: Int32 = 0, background: Int32 = 0
            for sid in a.sessions {
                guard let s = engine.sessions[sid] else {
                    flag(id, sid, "the app lists session \(sid), which the engine does not hold")
                    continue
                }
                if s.id != sid { flag(id, sid, "stored under \(sid) but names itself \(s.id)") }
                if s.app != id { flag(id, sid, "listed by \(id) but belongs to \(s.app)") }
                if sid.rawValue == 0 || sid.rawValue >= engine.nextSessionNumber {
                    flag(id, sid, "identifier beyond the high-water mark \(engine.nextSessionNumber)")
                }
                if s.createdAt > engine.clock { flag(id, sid, "created after the clock") }
                switch s.condition {
                case .discarded:
                    flag(id, sid, "a discarded session is still held")
                case .archived:
                    if s.sceneState != .unattached { flag(id, sid, "archived but its scene is \(s.sceneState)") }
                case .live:
                    if s.sceneInstance == 0 { flag(id, sid, "live with no scene instance") }
                    switch s.sceneState {
                    case .foregroundActive: active += 1
                    case .foregroundInactive: inactive += 1
                    case .background: background += 1
                    case .unattached: flag(id, sid, "live but unattached between commands")
                    }
                }
            }
            listedSessions += a.sessions.count
            if a.activeScenes != active || a.inactiveScenes != inactive || a.backgroundScenes != background {
                flag(id, nil, "scene counts \(a.activeScenes)/\(a.inactiveScenes)/\(a.backgroundScenes), sessions say \(active)/\(inactive)/\(background)")
            }
            foregroundActive += Int(a.activeScenes)
            connected += Int(a.connectedScenes)

            var due: Timestamp?
            func consider(_ t: Timestamp) { if due.map({ t < $0 }) ?? true { due = t } }
            var previous: TaskToken?
            for token in a.tasks {
                if let p = previous, p >= token { flag(id, nil, "app.tasks \(a.tasks) is not in token order") }
                previous = token
                guard let t = engine.tasks[token] else {
                    flag(id, nil, "the app lists task \(token), which the engine does not hold")
                    continue
                }
                if t.token != token { flag(id, nil, "task stored under \(token) names itself \(t.token)") }
                if t.app != id { flag(id, nil, "task \(token) listed by \(id) but belongs to \(t.app)") }
                if token.rawValue == 0 || token.rawValue >= engine.nextTaskNumber {
                    flag(id, nil, "task \(token) beyond the high-water mark \(engine.nextTaskNumber)")
                }
                if let s = t.session, engine.sessions.index(forKey: s) == nil {
                    flag(id, s, "task \(token) refers to session \(s), which is no longer open")
                }
                if let sent = t.expirationSentAt {
                    if a.hasForegroundScene { flag(id, nil, "task \(token) has an expiration pending in the foreground") }
                    if sent + config.expirationGrace <= engine.clock {
                        flag(id, nil, "task \(token) outlived its expiration grace and its app still runs")
                    }
                    consider(sent + config.expirationGrace)
                } else if let expiry = engine.expiry(of: t) {
                    if expiry < engine.clock { flag(id, nil, "task \(token) expired at \(expiry) without backgroundTaskWillExpire") }
                    consider(expiry)
                }
            }
            listedTasks += a.tasks.count

            if Set(a.pendingDiscards).count != a.pendingDiscards.count { flag(id, nil, "a pending discard is queued twice") }
            for p in a.pendingDiscards where !engine.wasDiscarded(p) {
                flag(id, p, "pending discard of \(p), which is not a discarded identifier")
            }
            switch a.process {
            case .notRunning:
                if a.connectedScenes > 0 { flag(id, nil, "not running but has connected scenes") }
                if !a.tasks.isEmpty { flag(id, nil, "not running but holds tasks") }
                if a.idleSince != nil || a.backgroundEnteredAt != nil { flag(id, nil, "not running but has a running clock") }
            case .suspended:
                if a.hasForegroundScene { flag(id, nil, "suspended with a scene in the foreground") }
                if !a.tasks.isEmpty { flag(id, nil, "suspended while holding tasks") }
                if !a.pendingDiscards.isEmpty { flag(id, nil, "pending discards queued for a process in memory") }
                if a.idleSince != nil || a.backgroundEnteredAt != nil { flag(id, nil, "suspended but has a running clock") }
            case .running:
                if !a.pendingDiscards.isEmpty { flag(id, nil, "pending discards not delivered to a running process") }
                let inBackground = !a.hasForegroundScene
                if (a.backgroundEnteredAt != nil) != inBackground {
                    flag(id, nil, "backgroundEnteredAt \(a.backgroundEnteredAt.map(\.description) ?? "nil") while \(a.applicationState)")
                }
                if (a.idleSince != nil) != (inBackground && a.tasks.isEmpty) {
                    flag(id, nil, "idleSince \(a.idleSince.map(\.description) ?? "nil") with \(a.tasks.count) tasks while \(a.applicationState)")
                }
                if let idle = a.idleSince, let entered = a.backgroundEnteredAt, idle < entered {
                    flag(id, nil, "idle since before it entered the background")
                }
                if let t = engine.suspensionTime(of: a) {
                    if t <= engine.clock && config.suspendDelay > .zero {
                        flag(id, nil, "suspension was due at \(t) and has not happened (clock \(engine.clock))")
                    }
                    consider(t)
                }
            }
            // Every deadline is queued: the next wake-up is never late.
            if let first = due, engine.nextDeadline.map({ $0 > first }) ?? true {
                flag(id, nil, "deadline \(first) is not queued (next wake-up \(engine.nextDeadline.map(\.description) ?? "none"))")
            }
        }
        if listedSessions != engine.sessions.count {
            for (sid, s) in engine.sessions where engine.apps[s.app]?.sessions.contains(sid) != true {
                flag(s.app, sid, "held by the engine but not listed by its app \(s.app)")
            }
        }
        if listedTasks != engine.tasks.count {
            for (token, t) in engine.tasks where engine.apps[t.app]?.tasks.contains(token) != true {
                flag(t.app, t.session, "task \(token) held by the engine but not listed by its app")
            }
        }
        if engine.foregroundActiveSceneCount != foregroundActive || engine.liveSessionCount != connected {
            flag(nil, nil, "engine-wide scene counts disagree with the apps")
        }
        if engine.nextSequence == 0 { flag(nil, nil, "sequence numbers start at 1") }
        return found
    }
}
