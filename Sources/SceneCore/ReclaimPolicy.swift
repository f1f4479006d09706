/// What the reclaim policy asks the engine to do, each with its reason.
public enum ReclaimAction: Sendable, Equatable {
    /// didReceiveMemoryWarning to these running apps (once per episode).
    case memoryWarning([AppID])
    /// Suspend an idle background app now rather than after its delay.
    case suspend(AppID)
    /// Release a background scene; the session is kept (R12).
    case disconnect(SessionID)
    /// Terminate a suspended app (critical only); its sessions stay archived.
    case terminate(AppID)
    /// A cap (MaxSessions, archived maximum age) discards an archived session. Never pressure.
    case discard(SessionID)
}

public struct ReclaimStep: Sendable, Equatable {
    public var action: ReclaimAction
    public var note: ReclaimNote
}

/// One pressure episode: from leaving normal to returning to it.
public struct ReclaimEpisode: Sendable, Equatable {
    public var number: Int
    public var startedAt: Timestamp
    public var endedAt: Timestamp?
    public var peakLevel: PressureLevel
    public var usageAtStart: UInt64
    /// First time usage was back at or below the low watermark.
    public var relievedAt: Timestamp?
    public var warned = false
    public var unrelievable = false
    public var disconnects = 0
    public var terminations = 0
    public var suspensions = 0
    public var bytesFreed: UInt64 = 0
}

public struct ReclaimPlan: Sendable, Equatable {
    public var steps: [ReclaimStep] = []
    /// Only foreground and protected scenes are left and usage is still over the target.
    public var unrelievable = false
    public var episodeStarted = false
    public var episodeEnded = false
    /// Decide again no later than this (end of the settle time), if pressure persists.
    public var nextDecision: Timestamp?
}

/// The reclaim policy: a pure function of the engine's sessions and apps, the pressure level,
/// the usage against the budget and the time, plus the little it remembers between decisions
/// (the episode, the last batch, regrets).
///
/// The ladder (reclaim-policy.md §3.3, with the order): on entering warning, one memory
/// warning to running apps; suspend idle background apps early; disconnect background scenes,
/// best victims first, until the projected usage is at the low watermark (a byte target, one
/// batch per settle time); at critical also younger and protected background scenes and the
/// termination of suspended apps. Never a foreground scene, never a discard because of pressure.
public struct ReclaimPolicy: Sendable {
    public var configuration: ReclaimConfiguration
    public var order: VictimOrder
    public private(set) var episode: ReclaimEpisode?
    public private(set) var lastEpisode: ReclaimEpisode?
    private var episodeCount = 0
    private var lastBatchAt: Timestamp?
    /// When the policy last disconnected each session (for regrets), and how often a session
    /// reclaimed was wanted back within the regret window.
    private var reclaimedAt: [SessionID: Timestamp] = [:]
    private var regrets: [SessionID: UInt8] = [:]

    public init(configuration: ReclaimConfiguration = ReclaimConfiguration(), order: VictimOrder = .ours) {
        self.configuration = configuration
        self.order = order
    }

    /// Tells the policy a session was activated: a recent victim coming back is a regret.
    public mutating func noteActivation(_ id: SessionID, now: Timestamp) {
        guard let at = reclaimedAt.removeValue(forKey: id) else { return }
        if now - at <= configuration.regretWindow {
            regrets[id] = min((regrets[id] ?? 0) + 1, 3)
        }
    }

    public func regretCount(_ id: SessionID) -> Int { Int(regrets[id] ?? 0) }

    /// Forgets sessions that are gone.
    public mutating func noteDiscarded(_ id: SessionID) {
        reclaimedAt[id] = nil
        regrets[id] = nil
    }

    /// Decides what to do now.
    /// - Parameters:
    ///   - level: the combined pressure level.
    ///   - usage: resident bytes by the engine's accounting (apps' base footprints and live
    ///     scenes' footprints).
    ///   - external: the level comes from a source other than that accounting (PSI, operator):
    ///     then a batch frees a tenth of the usage even when the accounting is under the target.
    ///   - nextUse: for `VictimOrder.opt` only, when each session will next be activated.
    public mutating func decide(engine: LifecycleEngine, level: PressureLevel, usage: UInt64, now: Timestamp,
                                external: Bool = false, nextUse: ((SessionID) -> Timestamp?)? = nil) -> ReclaimPlan {
        var plan = ReclaimPlan()
        let lowTarget = configuration.lowTarget
        appendCapDiscards(engine: engine, now: now, level: level, usage: usage, into: &plan)

        guard level > .normal else {
            if var ended = episode {
                ended.endedAt = now
                if ended.relievedAt == nil && usage <= lowTarget { ended.relievedAt = now }
                lastEpisode = ended
                episode = nil
                plan.episodeEnded = true
            }
            return plan
        }

        if episode == nil {
            episodeCount += 1
            episode = ReclaimEpisode(number: episodeCount, startedAt: now, peakLevel: level, usageAtStart: usage)
            plan.episodeStarted = true
        }
        episode!.peakLevel = max(episode!.peakLevel, level)
        if usage <= lowTarget && episode!.relievedAt == nil && !external { episode!.relievedAt = now }

        func note(_ reason: String, after: UInt64, score: Double? = nil) -> ReclaimNote {
            ReclaimNote(level: level.name, usageBefore: usage, usageAfter: after, budget: configuration.budget,
                        score: score, reason: reason)
        }

        // Rung 1: one warning per episode to every running app (R25: only running processes).
        if !episode!.warned {
            episode!.warned = true
            let running = engine.apps.values.filter { $0.process == .running }.map(\.id).sorted()
            if !running.isEmpty {
                plan.steps.append(ReclaimStep(action: .memoryWarning(running),
                                              note: note("entered \(level.name)", after: usage)))
            }
        }

        // One batch per settle time: freed memory takes a moment to show.
        if let last = lastBatchAt, now < last + configuration.settle {
            plan.nextDecision = last + configuration.settle
            return plan
        }

        // Rung 3 (and 4 at critical): free bytes down to the low watermark.
        var need: UInt64 = usage > lowTarget ? usage - lowTarget : 0
        if external && need == 0 { need = usage / 10 }
        guard need > 0 else {
            appendEarlySuspensions(engine: engine, except: [], note: note("idle in the background", after: usage), into: &plan)
            return plan
        }

        let (candidates, withheld) = rankedVictims(engine: engine, level: level, now: now, nextUse: nextUse)
        var projected = usage
        var freed: UInt64 = 0
        var victims = 0
        var terminatedApps = Set<AppID>()
        var chosenScenes = Set<SessionID>()
        for candidate in candidates {
            if freed >= need || victims >= configuration.maxVictimsPerBatch { break }
            var bytes = candidate.bytes
            switch candidate.kind {
            case .scene(let id, let app):
                // Its app may already be terminated in this batch, taking the scene with it.
                if terminatedApps.contains(app) { continue }
                chosenScenes.insert(id)
                projected -= min(projected, bytes)
                plan.steps.append(ReclaimStep(action: .disconnect(id),
                                              note: note(candidate.reason, after: projected, score: candidate.score)))
                reclaimedAt[id] = now
                episode!.disconnects += 1
            case .app(let app, let scenes):
                // Scenes disconnected earlier in this batch were already counted; a process
                // that would free nothing more is left alone.
                for id in scenes where chosenScenes.contains(id) { bytes -= min(bytes, engine.sessions[id]?.footprint ?? 0) }
                if bytes == 0 { continue }
                terminatedApps.insert(app)
                projected -= min(projected, bytes)
                plan.steps.append(ReclaimStep(action: .terminate(app),
                                              note: note(candidate.reason, after: projected, score: candidate.score)))
                for id in scenes { reclaimedAt[id] = now }
                episode!.terminations += 1
            }
            freed += bytes
            victims += 1
        }
        // Rung 2, after the victims so that an app is not suspended only to be woken for its
        // scene's didDisconnect: idle background apps would be suspended shortly anyway.
        appendEarlySuspensions(engine: engine, except: terminatedApps, note: note("idle in the background", after: projected),
                               into: &plan)
        episode!.bytesFreed += freed
        if victims > 0 {
            lastBatchAt = now
            plan.nextDecision = now + configuration.settle
        }
        if freed < need && victims < configuration.maxVictimsPerBatch && withheld == 0 {
            // Nothing else may be touched: only foreground and protected scenes remain (young
            // ones withheld at warning will age into eligibility, so they don't count here).
            plan.unrelievable = true
            episode!.unrelievable = true
        }
        return plan
    }

    /// Suspends now every running app left with no foreground scene and no task once this
    /// batch's disconnects are done.
    private mutating func appendEarlySuspensions(engine: LifecycleEngine, except terminated: Set<AppID>, note: ReclaimNote,
                                                 into plan: inout ReclaimPlan) {
        guard configuration.suspendEarly else { return }
        for app in engine.apps.values.sorted(by: { $0.id < $1.id })
        where app.process == .running && !app.hasForegroundScene && app.tasks.isEmpty && !terminated.contains(app.id) {
            plan.steps.append(ReclaimStep(action: .suspend(app.id), note: note))
            episode!.suspensions += 1
        }
    }

    // MARK: - Victims

    struct Candidate {
        enum Kind {
            case scene(SessionID, app: AppID)
            case app(AppID, scenes: [SessionID])
        }
        var kind: Kind
        /// Tier: 1 aged background scenes and suspended apps, 2 young background scenes
        /// (reclaim-policy.md §3.1). Protected scenes are never candidates.
        var tier: Int
        var bytes: UInt64
        var score: Double
        var lastActive: Timestamp
        var backgroundSince: Timestamp
        var suspendedApp: Bool
        var protected: Bool
        var nextUse: Timestamp?
        var reason: String
    }

    /// Eligible victims, best first, and how many young scenes were held back at warning.
    /// Warning: aged, unprotected background scenes. Critical: young ones too, and suspended
    /// apps with no protected scene. Protected and foreground scenes are never candidates.
    func rankedVictims(engine: LifecycleEngine, level: PressureLevel, now: Timestamp,
                       nextUse: ((SessionID) -> Timestamp?)?) -> (victims: [Candidate], withheld: Int) {
        let previous = previousScene(engine)
        var out: [Candidate] = []
        var withheld = 0
        out.reserveCapacity(64)
        for s in engine.sessions.values where s.condition == .live && s.sceneState == .background && !s.isProtected {
            var agingTime = configuration.aging
            if s.id == previous { agingTime = agingTime * 2 }
            let regret = Int64(regrets[s.id] ?? 0)
            if regret > 0 { agingTime = agingTime * (Int64(1) << regret) }
            let young = now - s.backgroundSince < agingTime
            let tier = young ? 2 : 1
            if level < .critical && young {
                withheld += 1
                continue
            }
            let suspended = engine.apps[s.app]?.process == .suspended
            let reason = young ? "young background scene (critical)" : "background scene"
            out.append(Candidate(kind: .scene(s.id, app: s.app), tier: tier, bytes: s.footprint,
                                 score: valueScore(s, now: now), lastActive: s.lastActiveAt,
                                 backgroundSince: s.backgroundSince, suspendedApp: suspended,
                                 protected: s.isProtected, nextUse: nextUse?(s.id), reason: reason))
        }
        if level == .critical && configuration.terminateSuspendedAtCritical {
            for app in engine.apps.values where app.process == .suspended {
                var bytes = app.baseFootprint
                var cost = 0.0
                var lastActive = Timestamp.zero
                var since = Timestamp.zero
                var scenes: [SessionID] = []
                var nearest: Timestamp?
                var hasProtected = false
                for id in app.sessions {
                    guard let s = engine.sessions[id], s.condition == .live else { continue }
                    if s.isProtected { hasProtected = true }
                    scenes.append(id)
                    bytes &+= s.footprint
                    cost += valueScore(s, now: now) * Double(max(s.footprint, 1))
                    lastActive = max(lastActive, s.lastActiveAt)
                    since = max(since, s.backgroundSince)
                    if let n = nextUse?(id) { nearest = nearest.map { min($0, n) } ?? n }
                }
                if hasProtected || bytes == 0 { continue }
                // A suspended app's terminated process costs as much to restore as its scenes.
                out.append(Candidate(kind: .app(app.id, scenes: scenes.sorted()), tier: 1, bytes: max(bytes, 1),
                                     score: cost / Double(max(bytes, 1)), lastActive: lastActive,
                                     backgroundSince: since, suspendedApp: true, protected: false,
                                     nextUse: nearest, reason: "suspended app (critical)"))
            }
        }
        out.sort(by: ordering)
        return (out, withheld)
    }

    /// The most recent foreground scene to go to the background: users switch back to it most
    /// often (Android's PREVIOUS_APP), so it ages twice as long.
    func previousScene(_ engine: LifecycleEngine) -> SessionID? {
        var best: SceneSession?
        for s in engine.sessions.values where s.condition == .live && s.sceneState == .background && s.activations > 0 {
            if best == nil || s.lastActiveAt > best!.lastActiveAt { best = s }
        }
        return best?.id
    }

    /// What keeping the scene is worth per byte: decayed use frequency × restore cost ÷ bytes.
    /// Lowest goes first.
    func valueScore(_ s: SceneSession, now: Timestamp) -> Double {
        let frequency = s.activationScore(at: now) + 0.01
        let cost = Double(s.restoreCostMs > 0 ? s.restoreCostMs : configuration.defaultRestoreCostMs)
        return frequency * cost / Double(max(s.footprint, 1))
    }

    func ordering(_ a: Candidate, _ b: Candidate) -> Bool {
        if a.tier != b.tier { return a.tier < b.tier }
        switch order {
        case .ours:
            if a.score != b.score { return a.score < b.score }
        case .lru:
            break
        case .largest:
            if a.bytes != b.bytes { return a.bytes > b.bytes }
        case .chrome:
            if a.protected != b.protected { return !a.protected }
            if a.backgroundSince != b.backgroundSince { return a.backgroundSince < b.backgroundSince }
        case .lmkd:
            if a.suspendedApp != b.suspendedApp { return a.suspendedApp }
        case .opt:
            switch (a.nextUse, b.nextUse) {
            case (nil, nil): break
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): if x != y { return x > y }
            }
        }
        if a.lastActive != b.lastActive { return a.lastActive < b.lastActive }
        if a.bytes != b.bytes { return a.bytes > b.bytes }
        return a.stableKey < b.stableKey
    }

    // MARK: - Caps

    /// MaxSessions and the archived maximum age discard archived sessions, oldest first.
    /// These are decisions about storage, not memory: pressure never discards (R12).
    mutating func appendCapDiscards(engine: LifecycleEngine, now: Timestamp, level: PressureLevel, usage: UInt64,
                                    into plan: inout ReclaimPlan) {
        let maxSessions = configuration.maxSessions
        let maxAge = configuration.archivedMaxAge
        let overCount = maxSessions > 0 ? engine.sessions.count - maxSessions : 0
        guard overCount > 0 || maxAge > .zero else { return }
        var archived = engine.sessions.values.filter { $0.condition == .archived }
        archived.sort { ($0.lastActiveAt, $0.id) < ($1.lastActiveAt, $1.id) }
        var chosen = 0
        for s in archived {
            if chosen >= configuration.maxDiscardsPerDecision { break }
            let tooOld = maxAge > .zero && now - s.lastActiveAt > maxAge
            let tooMany = chosen < overCount
            guard tooOld || tooMany else { break }
            let reason = tooMany ? "MaxSessions=\(maxSessions) exceeded" : "archived longer than ArchivedMaxAge"
            plan.steps.append(ReclaimStep(action: .discard(s.id),
                                          note: ReclaimNote(level: level.name, usageBefore: usage, usageAfter: usage,
                                                            budget: configuration.budget, score: nil, reason: reason)))
            chosen += 1
        }
    }
}

extension ReclaimPolicy.Candidate {
    var stableKey: UInt64 {
        switch kind {
        case .scene(let id, _): id.rawValue
        case .app(_, let scenes): scenes.first?.rawValue ?? 0
        }
    }
}
