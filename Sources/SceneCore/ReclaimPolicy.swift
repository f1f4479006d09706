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
/// batch per settle time); at critical also young background scenes and the termination of
/// suspended apps. Never a foreground or protected scene, never a discard because of pressure.
public struct ReclaimPolicy: Sendable {
    public var configuration: ReclaimConfiguration
    public var order: VictimOrder
    public private(set) var episode: ReclaimEpisode?
    public private(set) var lastEpisode: ReclaimEpisode?
    private var episodeCount = 0
    /// When the last batch of victims was chosen (the settle time runs from here).
    private(set) var lastBatchAt: Timestamp?
    /// When the policy last disconnected each session (for regrets), and how often a session
    /// reclaimed was wanted back within the regret window.
    private var reclaimedAt: [SessionID: Timestamp] = [:]
    private var regrets: [SessionID: UInt8] = [:]
    /// Per session, in how many usage sessions it was used, and when it was last activated
    /// (see `usageSessions`).
    private var uses = UsageTable()

    public init(configuration: ReclaimConfiguration = ReclaimConfiguration(), order: VictimOrder = .ours) {
        self.configuration = configuration
        self.order = order
    }

    /// Tells the policy a session was activated: it counts the usage sessions it appears in,
    /// and a recent victim coming back is a regret. The daemon calls it for every
    /// didBecomeActive.
    public mutating func noteActivation(_ id: SessionID, now: Timestamp) {
        uses.noteActivation(id, now: now, gap: Self.usageSessionGap)
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
        uses.remove(id)
    }

    /// A scene's uses: the usage sessions it appeared in (an activation at least
    /// `usageSessionGap` after its previous one starts a new one) plus its recent activations
    /// (the engine's activation count decayed with a 30 min half-life). The first is how often
    /// it is wanted across sessions, the popularity that predicts restores hours later; the
    /// second is how busy it is right now (ping-pong within a session). A session the policy
    /// has not seen activated since it started (a daemon restart) counts its lifetime
    /// activations at `activationsPerUsageSession` per usage session.
    func usageSessions(_ id: SessionID, activations: UInt32) -> Double {
        if let n = uses.sessions(id) { return n }
        return Double(activations) / Self.activationsPerUsageSession
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
            var running: [AppID] = []
            let apps = engine.apps.values
            var i = apps.startIndex
            while i != apps.endIndex {
                if apps[i].process == .running { running.append(apps[i].id) }
                apps.formIndex(after: &i)
            }
            running.sort()
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

        // Candidates come out of a heap best first: a decision costs O(n + k log n) for k
        // victims, not a sort of every candidate.
        var pool = victimPool(engine: engine, level: level, now: now, nextUse: nextUse)
        let withheld = pool.withheld
        let terminateAtCritical = level == .critical && configuration.terminateSuspendedAtCritical
        var projected = usage
        var freed: UInt64 = 0
        var victims = 0
        var terminatedApps = Set<AppID>()
        /// At critical, per suspended app, the plan positions of its scenes chosen so far: once
        /// all of its connected scenes are chosen, one termination replaces their disconnects.
        var chosenOfSuspended: [AppID: (positions: [Int], bytes: UInt64)] = [:]
        /// Drops the disconnects already planned for a suspended app's scenes: its termination
        /// takes them (and a disconnect would resume the process first, for nothing).
        func dropDisconnects(of app: AppID) {
            guard let chosen = chosenOfSuspended.removeValue(forKey: app)?.positions, !chosen.isEmpty else { return }
            let positions = Set(chosen)
            plan.steps = plan.steps.enumerated().filter { !positions.contains($0.offset) }.map(\.element)
            for (other, entry) in chosenOfSuspended {
                chosenOfSuspended[other]!.positions = entry.positions.map { p in p - chosen.filter { $0 < p }.count }
            }
            episode!.disconnects -= chosen.count
        }
        while freed < need && victims < configuration.maxVictimsPerBatch, let candidate = pool.popBest() {
            if candidate.isProcess {
                let app = pool.processes[Int(candidate.id)]
                // Scenes of it already chosen in this batch were counted with them.
                let bytes = candidate.bytes - min(candidate.bytes, chosenOfSuspended[app]?.bytes ?? 0)
                dropDisconnects(of: app)
                terminatedApps.insert(app)
                projected -= min(projected, bytes)
                plan.steps.append(ReclaimStep(action: .terminate(app),
                                              note: note(candidate.reason, after: projected, score: candidate.score)))
                for id in liveScenes(of: app, engine) { reclaimedAt[id] = now }
                episode!.terminations += 1
                freed += bytes
                victims += 1
                continue
            }
            let id = SessionID(candidate.id)
            guard let s = engine.sessions[id], !terminatedApps.contains(s.app) else { continue }
            projected -= min(projected, s.footprint)
            plan.steps.append(ReclaimStep(action: .disconnect(id),
                                          note: note(candidate.reason, after: projected, score: candidate.score)))
            reclaimedAt[id] = now
            episode!.disconnects += 1
            freed += s.footprint
            victims += 1
            if terminateAtCritical, let app = engine.apps[s.app], app.process == .suspended {
                chosenOfSuspended[s.app, default: ([], 0)].positions.append(plan.steps.count - 1)
                chosenOfSuspended[s.app]!.bytes += s.footprint
                if chosenOfSuspended[s.app]!.positions.count == Int(app.connectedScenes) {
                    // Every scene of this suspended app goes: terminate the process instead
                    // (jetsam's way: no callbacks, no resume), which frees its own memory too.
                    dropDisconnects(of: s.app)
                    episode!.terminations += 1
                    terminatedApps.insert(s.app)
                    let base = app.baseFootprint
                    projected -= min(projected, base)
                    freed += base
                    plan.steps.append(ReclaimStep(action: .terminate(s.app),
                                                  note: note("suspended app, all of its scenes reclaimed (critical)",
                                                             after: projected, score: candidate.score)))
                }
            }
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
        if freed < need, let aged = pool.earliestAging {
            // Young scenes were held back: look again as soon as the first of them has aged.
            plan.nextDecision = plan.nextDecision.map { min($0, aged) } ?? aged
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
        var idle: [AppID] = []
        // Indexing the storage reads the fields in place; a for-in loop would copy every record.
        let apps = engine.apps.values
        var i = apps.startIndex
        while i != apps.endIndex {
            if apps[i].process == .running && !apps[i].hasForegroundScene && apps[i].tasks.isEmpty
                && (terminated.isEmpty || !terminated.contains(apps[i].id)) {
                idle.append(apps[i].id)
            }
            apps.formIndex(after: &i)
        }
        for id in idle.sorted() {
            plan.steps.append(ReclaimStep(action: .suspend(id), note: note))
            episode!.suspensions += 1
        }
    }

    // MARK: - Victims

    /// One possible victim: a background scene, or (at critical) a suspended process. Plain
    /// data, so that building thousands of them costs no reference counting.
    struct Candidate {
        /// A session's raw identifier, or for a process an index into `VictimPool.processes`.
        var id: UInt64
        var isProcess: Bool
        /// Tier: 1 aged background scenes and suspended processes, 2 young background scenes
        /// (reclaim-policy.md §3.1). Protected and foreground scenes are never candidates.
        var tier: Int
        var bytes: UInt64
        /// `valueScore`: what keeping it is worth per byte (lowest goes first under `ours`).
        var score: Double
        var lastActive: Timestamp
        var backgroundSince: Timestamp
        var suspendedApp: Bool
        var nextUse: Timestamp?
        /// Smallest live session identifier (a scene's own): the last tie-break.
        var stableKey: UInt64
        /// For the score: use count and declared restore cost (scenes), or the loss of the
        /// process's scenes, Σ score × bytes (processes).
        var uses: Double
        var cost: Double

        var reason: String {
            isProcess ? "suspended app (critical)" : tier > 1 ? "young background scene (critical)" : "background scene"
        }
    }

    /// The order of victims as one comparable value, computed once per candidate so that the
    /// heap compares plain numbers. Lower goes first.
    struct SortKey: Comparable {
        var tier: Int
        /// What the victim order ranks by (per `VictimOrder`), then a second criterion.
        var primary: Double
        var secondary: Double
        /// The tie-breaks shared by every order: least recently active, then larger, then the
        /// older session.
        var lastActive: Int64
        var bytes: UInt64
        var stable: UInt64

        static func < (a: SortKey, b: SortKey) -> Bool {
            if a.tier != b.tier { return a.tier < b.tier }
            if a.primary != b.primary { return a.primary < b.primary }
            if a.secondary != b.secondary { return a.secondary < b.secondary }
            if a.lastActive != b.lastActive { return a.lastActive < b.lastActive }
            if a.bytes != b.bytes { return a.bytes > b.bytes }
            return a.stable < b.stable
        }
    }

    func sortKey(_ c: Candidate) -> SortKey {
        var primary = 0.0, secondary = 0.0
        switch order {
        case .ours:
            primary = c.score
        case .lru:
            break
        case .largest:
            primary = -Double(c.bytes)
        case .chrome:
            // Protected pages come last in Chrome; ours are never candidates at all.
            secondary = Double(c.backgroundSince.microseconds)
        case .lmkd:
            primary = c.suspendedApp ? 0 : 1
        case .opt:
            // Farthest next use first; never used again before everything else.
            primary = c.nextUse.map { -Double($0.microseconds) } ?? -.infinity
        }
        return SortKey(tier: c.tier, primary: primary, secondary: secondary, lastActive: c.lastActive.microseconds,
                       bytes: c.bytes, stable: c.stableKey)
    }

    /// Eligible victims in a binary min-heap on their sort keys.
    struct VictimPool {
        var candidates: [Candidate] = []
        var keys: [SortKey] = []
        var heap: [Int32] = []
        /// The processes that process candidates stand for.
        var processes: [AppID] = []
        /// Young scenes held back at warning, and when the first of them will have aged (may
        /// be early, never late).
        var withheld = 0
        var earliestAging: Timestamp?

        mutating func heapify() {
            heap = (0..<Int32(candidates.count)).map { $0 }
            var i = heap.count / 2 - 1
            while i >= 0 {
                siftDown(i)
                i -= 1
            }
        }

        private mutating func siftDown(_ start: Int) {
            var parent = start
            let n = heap.count
            while true {
                let left = 2 * parent + 1
                if left >= n { return }
                var best = left
                if left + 1 < n && keys[Int(heap[left + 1])] < keys[Int(heap[left])] { best = left + 1 }
                if !(keys[Int(heap[best])] < keys[Int(heap[parent])]) { return }
                heap.swapAt(parent, best)
                parent = best
            }
        }

        mutating func popBest() -> Candidate? {
            guard let top = heap.first else { return nil }
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
            return candidates[Int(top)]
        }

        mutating func noteWithheld(until aged: Timestamp) {
            withheld += 1
            if earliestAging == nil || aged < earliestAging! { earliestAging = aged }
        }
    }

    /// Live scenes of an app, in identifier order.
    func liveScenes(of app: AppID, _ engine: LifecycleEngine) -> [SessionID] {
        guard let record = engine.apps[app] else { return [] }
        return record.sessions.filter { engine.sessions[$0]?.condition == .live }.sorted()
    }

    /// Eligible victims, best first, and how many young scenes were held back at warning.
    /// Warning: aged, unprotected background scenes. Critical: young ones too, and suspended
    /// processes that hold memory of their own and no protected scene. Protected and foreground
    /// scenes are never candidates.
    func rankedVictims(engine: LifecycleEngine, level: PressureLevel, now: Timestamp,
                       nextUse: ((SessionID) -> Timestamp?)?) -> (victims: [Candidate], withheld: Int) {
        var pool = victimPool(engine: engine, level: level, now: now, nextUse: nextUse)
        var out: [Candidate] = []
        while let c = pool.popBest() { out.append(c) }
        return (out, pool.withheld)
    }

    /// The ladder's eligibility rules applied to every session (and at critical every suspended
    /// process), as a heap.
    ///
    /// One pass over the sessions in storage order. The previous scene (whose aging doubles) is
    /// known only at the end of it, so it is corrected afterwards; the scores need the mean
    /// restore cost of all candidates, so they are computed in a second pass over the
    /// candidates alone.
    func victimPool(engine: LifecycleEngine, level: PressureLevel, now: Timestamp,
                    nextUse: ((SessionID) -> Timestamp?)?) -> VictimPool {
        var pool = VictimPool()
        let critical = level == .critical
        pool.candidates.reserveCapacity(engine.sessions.count)
        // The previous scene so far, and where it went: its candidate index, or nil.
        var previous: (id: SessionID, lastActive: Timestamp, backgroundSince: Timestamp, index: Int?)?
        var costSum = 0.0
        // Indexing the storage reads the fields in place; a for-in loop would copy every session.
        let sessions = engine.sessions.values
        var index = sessions.startIndex
        while index != sessions.endIndex {
            defer { sessions.formIndex(after: &index) }
            guard sessions[index].condition == .live && sessions[index].sceneState == .background else { continue }
            let s = SessionFields(sessions[index])
            let isPrevious = s.activations > 0
                && (previous == nil || (s.lastActiveAt, s.id) > (previous!.lastActive, previous!.id))
            guard !s.isProtected else {
                if isPrevious { previous = (s.id, s.lastActiveAt, s.backgroundSince, nil) }
                continue
            }
            let agingTime = agingTime(of: s.id, previous: false)
            let young = now - s.backgroundSince < agingTime
            if young && !critical {
                pool.noteWithheld(until: s.backgroundSince + agingTime)
                if isPrevious { previous = (s.id, s.lastActiveAt, s.backgroundSince, nil) }
                continue
            }
            if isPrevious { previous = (s.id, s.lastActiveAt, s.backgroundSince, pool.candidates.count) }
            let cost = Double(s.restoreCostMs > 0 ? s.restoreCostMs : configuration.defaultRestoreCostMs)
            costSum += cost
            // Only lmkd's order looks at the process state (a dictionary lookup per scene).
            let suspended = order == .lmkd && engine.apps[sessions[index].app]?.process == .suspended
            pool.candidates.append(Candidate(id: s.id.rawValue, isProcess: false, tier: young ? 2 : 1, bytes: s.footprint,
                                             score: 0, lastActive: s.lastActiveAt, backgroundSince: s.backgroundSince,
                                             suspendedApp: suspended, nextUse: nextUse?(s.id), stableKey: s.id.rawValue,
                                             uses: usageSessions(s.id, activations: s.activations)
                                                 + sessions[index].activationScore(at: now),
                                             cost: cost))
        }
        // The previous scene ages twice as long: an aged candidate may in fact still be young.
        if let p = previous, let index = p.index {
            let agingTime = agingTime(of: p.id, previous: true)
            if now - p.backgroundSince < agingTime {
                if critical {
                    pool.candidates[index].tier = 2
                } else {
                    costSum -= pool.candidates[index].cost
                    pool.candidates.swapAt(index, pool.candidates.count - 1)
                    pool.candidates.removeLast()
                    pool.noteWithheld(until: p.backgroundSince + agingTime)
                }
            }
        }
        let meanCost = pool.candidates.isEmpty ? Double(configuration.defaultRestoreCostMs)
            : costSum / Double(pool.candidates.count)
        pool.keys.reserveCapacity(pool.candidates.count)
        for i in pool.candidates.indices {
            let c = pool.candidates[i]
            pool.candidates[i].score = valueScore(uses: c.uses, cost: c.cost, bytes: c.bytes, meanCost: meanCost)
            pool.keys.append(sortKey(pool.candidates[i]))
        }
        if critical && configuration.terminateSuspendedAtCritical {
            // A suspended process holding memory of its own can go too (its scenes with it, as
            // jetsam kills: no callbacks). One whose scenes are all chosen is terminated when
            // the batch is assembled (see `decide`), so only processes with their own memory
            // need a candidate here. Its score: the loss of its scenes per byte freed.
            let apps = engine.apps.values
            // Read in place through one view (each `engine.sessions.values[…]` would copy).
            let table = engine.sessions
            let values = table.values
            var i = apps.startIndex
            while i != apps.endIndex {
                defer { apps.formIndex(after: &i) }
                guard apps[i].process == .suspended && apps[i].baseFootprint > 0 else { continue }
                let app = apps[i]
                var bytes = app.baseFootprint
                var loss = 0.0
                var lastActive = Timestamp.zero
                var since = Timestamp.zero
                var nearest: Timestamp?
                var hasProtected = false
                var first = UInt64.max
                for id in app.sessions {
                    // Found once, then read in place (a lookup by key would copy the session).
                    guard let position = table.index(forKey: id),
                          values[position].condition == .live else { continue }
                    let s = SessionFields(values[position])
                    if s.isProtected { hasProtected = true }
                    first = min(first, id.rawValue)
                    bytes &+= s.footprint
                    let cost = Double(s.restoreCostMs > 0 ? s.restoreCostMs : configuration.defaultRestoreCostMs)
                    let n = usageSessions(id, activations: s.activations)
                        + values[position].activationScore(at: now)
                    loss += valueScore(uses: n, cost: cost, bytes: s.footprint, meanCost: meanCost) * Double(max(s.footprint, 1))
                    lastActive = max(lastActive, s.lastActiveAt)
                    since = max(since, s.backgroundSince)
                    if let n = nextUse?(id) { nearest = nearest.map { min($0, n) } ?? n }
                }
                if hasProtected { continue }
                let candidate = Candidate(id: UInt64(pool.processes.count), isProcess: true, tier: 1, bytes: bytes,
                                          score: loss / Double(bytes), lastActive: lastActive, backgroundSince: since,
                                          suspendedApp: true, nextUse: nearest, stableKey: first == .max ? 0 : first,
                                          uses: 0, cost: loss)
                pool.processes.append(app.id)
                pool.candidates.append(candidate)
                pool.keys.append(sortKey(candidate))
            }
        }
        pool.heapify()
        return pool
    }

    /// The fields of a session the victim pass reads, copied out without its strings.
    struct SessionFields {
        var id: SessionID
        var lastActiveAt: Timestamp
        var backgroundSince: Timestamp
        var footprint: UInt64
        var activations: UInt32
        var restoreCostMs: UInt32
        var isProtected: Bool

        init(_ s: borrowing SceneSession) {
            id = s.id
            lastActiveAt = s.lastActiveAt
            backgroundSince = s.backgroundSince
            footprint = s.footprint
            activations = s.activations
            restoreCostMs = s.restoreCostMs
            isProtected = s.isProtected
        }
    }

    /// How long a scene must have been in the background before it may be reclaimed at warning:
    /// the aging time, twice that for the previous scene, and doubled per regret (up to ×8).
    func agingTime(of id: SessionID, previous: Bool) -> TimeSpan {
        var agingTime = configuration.aging
        if previous { agingTime = agingTime * 2 }
        if !regrets.isEmpty, let regret = regrets[id], regret > 0 { agingTime = agingTime * (Int64(1) << Int64(regret)) }
        return agingTime
    }

    /// The most recent foreground scene to go to the background: users switch back to it most
    /// often (Android's PREVIOUS_APP), so it ages twice as long. Ties go to the newer session.
    func previousScene(_ engine: LifecycleEngine) -> SessionID? {
        var best: (lastActive: Timestamp, id: SessionID)?
        for s in engine.sessions.values where s.condition == .live && s.sceneState == .background && s.activations > 0 {
            if best == nil || (s.lastActiveAt, s.id) > best! { best = (s.lastActiveAt, s.id) }
        }
        return best?.id
    }

    /// A scene unused this long starts a new usage session when activated again (LSApp's
    /// sessions last 1 min 46 s at the median and are separated by the screen going off).
    static let usageSessionGap = TimeSpan.seconds(5 * 60)
    /// Activations per app per usage session (LSApp: 6.46 visits over 2.18 apps).
    static let activationsPerUsageSession = 3.0
    /// The prior: every scene counts as used in one usage session more than observed.
    static let priorUses = 1.0

    /// What keeping a scene is worth per byte it holds, GreedyDual-Size-Frequency style:
    /// `(n + n₀) × (1 + c / c̄) / m` — lowest goes first.
    /// - `n + n₀`: the scene's uses (`usageSessions` plus its recent activations) plus a prior
    ///   of one usage session. Counted over the window the daemon has watched, the sessions
    ///   part is proportional to the posterior-mean rate at which the scene is wanted
    ///   (Gamma–Poisson; the common window cancels out of the order), so a scene first seen
    ///   late in that window rightly counts as rarely used. Usage sessions rather than
    ///   activations, because switching back and forth within one session says little about
    ///   the next session; the recent activations keep such a busy scene while it is busy.
    /// - `1 + c / c̄`: a restore counts once for the interruption and once more in proportion
    ///   to its declared restore cost `c` against the mean `c̄` of the candidates, so restore
    ///   counts and restore time weigh equally whatever the unit.
    /// - `m`: the bytes that disconnecting frees.
    func valueScore(uses: Double, cost: Double, bytes: UInt64, meanCost: Double) -> Double {
        (uses + Self.priorUses) * (meanCost > 0 ? 1 + cost / meanCost : 1) / Double(max(bytes, 1))
    }

    /// `valueScore` for one session, with the default restore cost as the mean.
    func valueScore(_ s: SceneSession, now: Timestamp) -> Double {
        let cost = Double(s.restoreCostMs > 0 ? s.restoreCostMs : configuration.defaultRestoreCostMs)
        let n = usageSessions(s.id, activations: s.activations) + s.activationScore(at: now)
        return valueScore(uses: n, cost: cost, bytes: s.footprint, meanCost: Double(configuration.defaultRestoreCostMs))
    }

    func ordering(_ a: Candidate, _ b: Candidate) -> Bool { sortKey(a) < sortKey(b) }

    // MARK: - Caps

    /// MaxSessions and the archived maximum age discard archived sessions, oldest first.
    /// These are decisions about storage, not memory: pressure never discards (R12).
    mutating func appendCapDiscards(engine: LifecycleEngine, now: Timestamp, level: PressureLevel, usage: UInt64,
                                    into plan: inout ReclaimPlan) {
        let maxSessions = configuration.maxSessions
        let maxAge = configuration.archivedMaxAge
        let overCount = maxSessions > 0 ? engine.sessions.count - maxSessions : 0
        guard overCount > 0 || maxAge > .zero else { return }
        // With only the age cap, just the sessions over age need sorting.
        var archived = engine.sessions.values.filter {
            $0.condition == .archived && (overCount > 0 || now - $0.lastActiveAt > maxAge)
        }
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

/// Per session: the usage sessions it appeared in and its last activation, in an array indexed
/// by the session number (numbers are dense and never reused), so that the victim pass reads
/// it without hashing. 16 bytes per session number ever allocated; a discarded session's slot
/// is zeroed, and trailing zeros are trimmed. Numbers far past the array (the store raises its
/// counters past a damaged log's losses or a damaged row's id) go to a dictionary instead of
/// growing the array by the whole gap.
struct UsageTable: Sendable {
    private var sessions: [Float] = []
    private var lastActivation: [Int64] = []
    private var far: [UInt64: (sessions: Float, lastActivation: Int64)] = [:]
    /// The most slots a new number may add to the arrays at once (16 MB).
    static let maxGrowth = 1 << 20

    func sessions(_ id: SessionID) -> Double? {
        guard id.rawValue < UInt64(sessions.count) else {
            return far[id.rawValue].map { Double($0.sessions) }
        }
        let i = Int(id.rawValue)
        guard sessions[i] > 0 else { return nil }
        return Double(sessions[i])
    }

    mutating func noteActivation(_ id: SessionID, now: Timestamp, gap: TimeSpan) {
        if id.rawValue >= UInt64(sessions.count) + UInt64(Self.maxGrowth) || (!far.isEmpty && far[id.rawValue] != nil) {
            var entry = far[id.rawValue] ?? (0, 0)
            if entry.sessions == 0 || now.microseconds - entry.lastActivation >= gap.microseconds { entry.sessions += 1 }
            entry.lastActivation = now.microseconds
            far[id.rawValue] = entry
            return
        }
        let i = Int(id.rawValue)
        if i >= sessions.count {
            sessions.append(contentsOf: repeatElement(0, count: i + 1 - sessions.count))
            lastActivation.append(contentsOf: repeatElement(0, count: i + 1 - lastActivation.count))
            // Numbers kept aside that the arrays now reach move in.
            for (n, entry) in far where n < UInt64(sessions.count) {
                sessions[Int(n)] = entry.sessions
                lastActivation[Int(n)] = entry.lastActivation
                far[n] = nil
            }
        }
        if sessions[i] == 0 || now.microseconds - lastActivation[i] >= gap.microseconds { sessions[i] += 1 }
        lastActivation[i] = now.microseconds
    }

    mutating func remove(_ id: SessionID) {
        guard id.rawValue < UInt64(sessions.count) else {
            far[id.rawValue] = nil
            return
        }
        let i = Int(id.rawValue)
        sessions[i] = 0
        lastActivation[i] = 0
        while let last = sessions.last, last == 0 {
            sessions.removeLast()
            lastActivation.removeLast()
        }
    }
}
