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
    /// The memory the last batch freed has not shown yet where it is measured (apps scened
    /// starts and measures): the next batch waits for it, up to `releaseWaitLimit` settle
    /// times after the last one, so that a reading taken before the memory came back never
    /// makes the policy take more than it must (§3.5 step 3).
    public var awaitingRelease = false
    /// Where decisions find their victims (the same ones either way; `.scan` is kept to
    /// compare against).
    public var victimSelection = VictimSelection.index
    public static let releaseWaitLimit: Int64 = 5
    public private(set) var episode: ReclaimEpisode?
    public private(set) var lastEpisode: ReclaimEpisode?
    private var episodeCount = 0
    /// When the last batch of victims was chosen (the settle time runs from here).
    private(set) var lastBatchAt: Timestamp?
    /// When the policy last disconnected each session (for regrets), and how often a session
    /// reclaimed was wanted back within the regret window.
    private var reclaimedAt: [SessionID: Timestamp] = [:]
    private(set) var regrets: [SessionID: UInt8] = [:]
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
    ///   - excluded: scenes not to choose (a reclaim notice is out for them, or they deferred).
    public mutating func decide(engine: LifecycleEngine, level: PressureLevel, usage: UInt64, now: Timestamp,
                                external: Bool = false, nextUse: ((SessionID) -> Timestamp?)? = nil,
                                excluded: ((SessionID) -> Bool)? = nil) -> ReclaimPlan {
        var plan = ReclaimPlan()
        let lowTarget = configuration.lowTarget
        appendCapDiscards(engine: engine, now: now, level: level, usage: usage, into: &plan)

        guard level > .normal else {
            endEpisode(usage: usage, now: now, into: &plan)
            return plan
        }
        noteEpisode(level: level, usage: usage, now: now, external: external, into: &plan)

        // What the rungs need of the apps, in one pass over them, made when first needed.
        var found: AppLists?
        func apps() -> AppLists {
            if found == nil { found = AppLists(engine) }
            return found!
        }

        // Rung 1: one warning per episode to every running app (R25: only running processes).
        if !episode!.warned {
            episode!.warned = true
            let running = apps().running.sorted()
            if !running.isEmpty {
                plan.steps.append(ReclaimStep(action: .memoryWarning(running),
                                              note: note("entered \(level.name)", level: level, before: usage,
                                                         after: usage)))
            }
        }

        if let next = settleWait(now: now) {
            plan.nextDecision = next
            return plan
        }

        // Rung 3 (and 4 at critical): free bytes down to the low watermark.
        var need: UInt64 = usage > lowTarget ? usage - lowTarget : 0
        if external && need == 0 { need = usage / 10 }
        guard need > 0 else {
            appendEarlySuspensions(apps().idle, except: [],
                                   note: note("idle in the background", level: level, before: usage, after: usage),
                                   into: &plan)
            return plan
        }

        // Candidates come best first, from the engine's index (a bounded heap per pass: O(n)
        // for the few victims of a batch) or from a heap of every candidate (O(n + k log n)).
        switch victimSelection {
        case .index:
            var source = VictimStream(policy: self, engine: engine, level: level, now: now, nextUse: nextUse,
                                      suspendedWithMemory: apps().suspendedWithMemory)
            takeVictims(from: &source, engine: engine, idle: apps().idle, level: level, usage: usage, need: need, now: now,
                        excluded: excluded, into: &plan)
        case .scan:
            var source = victimPool(engine: engine, level: level, now: now, nextUse: nextUse)
            takeVictims(from: &source, engine: engine, idle: apps().idle, level: level, usage: usage, need: need, now: now,
                        excluded: excluded, into: &plan)
        }
        return plan
    }

    /// Pressure is back to normal: the episode, if any, ends.
    private mutating func endEpisode(usage: UInt64, now: Timestamp, into plan: inout ReclaimPlan) {
        guard var ended = episode else { return }
        ended.endedAt = now
        if ended.relievedAt == nil && usage <= configuration.lowTarget { ended.relievedAt = now }
        lastEpisode = ended
        episode = nil
        plan.episodeEnded = true
    }

    /// Under pressure: starts an episode, or notes this decision's level and relief in the
    /// current one.
    private mutating func noteEpisode(level: PressureLevel, usage: UInt64, now: Timestamp, external: Bool,
                                      into plan: inout ReclaimPlan) {
        if episode == nil {
            episodeCount += 1
            episode = ReclaimEpisode(number: episodeCount, startedAt: now, peakLevel: level, usageAtStart: usage)
            plan.episodeStarted = true
        }
        episode!.peakLevel = max(episode!.peakLevel, level)
        if usage <= configuration.lowTarget && episode!.relievedAt == nil && !external { episode!.relievedAt = now }
    }

    /// When to decide again if no batch may be taken now: one batch per settle time, as freed
    /// memory takes a moment to show, and longer while the last batch's has not shown yet.
    private func settleWait(now: Timestamp) -> Timestamp? {
        guard let last = lastBatchAt else { return nil }
        if now < last + configuration.settle { return last + configuration.settle }
        if awaitingRelease,
           now < last + TimeSpan(microseconds: configuration.settle.microseconds * Self.releaseWaitLimit) {
            // Asked again when the next reading comes (the shell measures on its own interval).
            return now + configuration.settle
        }
        return nil
    }

    /// The explanation a step carries.
    @inline(__always)
    private func note(_ reason: String, level: PressureLevel, before: UInt64, after: UInt64,
                      score: Double? = nil) -> ReclaimNote {
        ReclaimNote(level: level.name, usageBefore: before, usageAfter: after, budget: configuration.budget,
                    score: score, reason: reason)
    }

    /// The running totals of one batch of victims.
    private struct Batch {
        /// The usage once the steps planned so far are done.
        var projected: UInt64
        var freed: UInt64 = 0
        var victims = 0
        var terminatedApps = Set<AppID>()
        /// At critical, per suspended app, the plan positions of its scenes chosen so far: once
        /// all of its connected scenes are chosen, one termination replaces their disconnects.
        var chosenOfSuspended: [AppID: (positions: [Int], bytes: UInt64)] = [:]
    }

    /// Rungs 3 and 4: victims best first until `need` bytes are freed, then rung 2.
    private mutating func takeVictims<Source: VictimSource>(
        from pool: inout Source, engine: LifecycleEngine, idle: [AppID], level: PressureLevel, usage: UInt64, need: UInt64,
        now: Timestamp, excluded: ((SessionID) -> Bool)?, into plan: inout ReclaimPlan) {
        let withheld = pool.withheld
        let terminateAtCritical = level == .critical && configuration.terminateSuspendedAtCritical
        var batch = Batch(projected: usage)
        while batch.freed < need && batch.victims < configuration.maxVictimsPerBatch, let candidate = pool.popBest() {
            if candidate.isProcess {
                terminate(pool.processes[Int(candidate.id)], candidate, engine: engine, level: level, now: now,
                          batch: &batch, into: &plan)
                continue
            }
            let id = SessionID(candidate.id)
            guard let s = engine.sessions[id], !batch.terminatedApps.contains(s.app) else { continue }
            if let excluded, excluded(id) { continue }
            disconnect(s, candidate, level: level, now: now, batch: &batch, into: &plan)
            if terminateAtCritical, let app = engine.apps[s.app], app.process == .suspended {
                noteChosen(s, ofSuspended: app, candidate, level: level, batch: &batch, into: &plan)
            }
        }
        // Rung 2, after the victims so that an app is not suspended only to be woken for its
        // scene's didDisconnect: idle background apps would be suspended shortly anyway.
        // A suspension frees nothing by this accounting: usage is the same before and after.
        appendEarlySuspensions(idle, except: batch.terminatedApps,
                               note: note("idle in the background", level: level, before: batch.projected,
                                          after: batch.projected),
                               into: &plan)
        episode!.bytesFreed += batch.freed
        if batch.victims > 0 {
            lastBatchAt = now
            plan.nextDecision = now + configuration.settle
        }
        if batch.freed < need, let aged = pool.earliestAging {
            // Young scenes were held back: look again as soon as the first of them has aged.
            plan.nextDecision = plan.nextDecision.map { min($0, aged) } ?? aged
        }
        if batch.freed < need && batch.victims < configuration.maxVictimsPerBatch && withheld == 0 {
            // Nothing else may be touched: only foreground and protected scenes remain (young
            // ones withheld at warning will age into eligibility, so they don't count here).
            plan.unrelievable = true
            episode!.unrelievable = true
        }
    }

    /// A suspended process chosen as a victim: terminated, with its scenes.
    @inline(__always)
    private mutating func terminate(_ app: AppID, _ candidate: Candidate, engine: LifecycleEngine, level: PressureLevel,
                                    now: Timestamp, batch: inout Batch, into plan: inout ReclaimPlan) {
        // Scenes of it already chosen in this batch were counted with them.
        let bytes = candidate.bytes - min(candidate.bytes, batch.chosenOfSuspended[app]?.bytes ?? 0)
        dropDisconnects(of: app, batch: &batch, from: &plan)
        batch.terminatedApps.insert(app)
        let before = batch.projected
        batch.projected -= min(batch.projected, bytes)
        plan.steps.append(ReclaimStep(action: .terminate(app),
                                      note: note(candidate.reason, level: level, before: before, after: batch.projected,
                                                 score: candidate.score)))
        for id in liveScenes(of: app, engine) { reclaimedAt[id] = now }
        episode!.terminations += 1
        batch.freed += bytes
        batch.victims += 1
    }

    /// A background scene chosen as a victim: disconnected.
    @inline(__always)
    private mutating func disconnect(_ s: SceneSession, _ candidate: Candidate, level: PressureLevel, now: Timestamp,
                                     batch: inout Batch, into plan: inout ReclaimPlan) {
        let before = batch.projected
        batch.projected -= min(batch.projected, s.footprint)
        plan.steps.append(ReclaimStep(action: .disconnect(s.id),
                                      note: note(candidate.reason, level: level, before: before, after: batch.projected,
                                                 score: candidate.score)))
        reclaimedAt[s.id] = now
        episode!.disconnects += 1
        batch.freed += s.footprint
        batch.victims += 1
    }

    /// At critical, a scene of a suspended app was chosen: once every connected scene of the
    /// app is, the process is terminated instead (jetsam's way: no callbacks, no resume), which
    /// frees its own memory too.
    @inline(__always)
    private mutating func noteChosen(_ s: SceneSession, ofSuspended app: AppRecord, _ candidate: Candidate,
                                     level: PressureLevel, batch: inout Batch, into plan: inout ReclaimPlan) {
        batch.chosenOfSuspended[s.app, default: ([], 0)].positions.append(plan.steps.count - 1)
        batch.chosenOfSuspended[s.app]!.bytes += s.footprint
        guard batch.chosenOfSuspended[s.app]!.positions.count == Int(app.connectedScenes) else { return }
        dropDisconnects(of: s.app, batch: &batch, from: &plan)
        episode!.terminations += 1
        batch.terminatedApps.insert(s.app)
        let base = app.baseFootprint
        let before = batch.projected
        batch.projected -= min(batch.projected, base)
        batch.freed += base
        plan.steps.append(ReclaimStep(action: .terminate(s.app),
                                      note: note("suspended app, all of its scenes reclaimed (critical)", level: level,
                                                 before: before, after: batch.projected, score: candidate.score)))
    }

    /// Drops the disconnects already planned for a suspended app's scenes: its termination
    /// takes them (and a disconnect would resume the process first, for nothing).
    private mutating func dropDisconnects(of app: AppID, batch: inout Batch, from plan: inout ReclaimPlan) {
        guard let chosen = batch.chosenOfSuspended.removeValue(forKey: app)?.positions, !chosen.isEmpty else { return }
        let positions = Set(chosen)
        plan.steps = plan.steps.enumerated().filter { !positions.contains($0.offset) }.map(\.element)
        for (other, entry) in batch.chosenOfSuspended {
            batch.chosenOfSuspended[other]!.positions = entry.positions.map { p in p - chosen.filter { $0 < p }.count }
        }
        episode!.disconnects -= chosen.count
    }

    /// A planned disconnect did not happen (its scene deferred under the grace protocol): the
    /// episode does not count it, and the batch it was in may be followed by another at once.
    public mutating func noteDeferred(bytes: UInt64) {
        if episode != nil {
            episode!.disconnects = max(0, episode!.disconnects - 1)
            episode!.bytesFreed -= min(episode!.bytesFreed, bytes)
        }
        lastBatchAt = nil
    }

    /// Suspends now every running app left with no foreground scene and no task once this
    /// batch's disconnects are done.
    private mutating func appendEarlySuspensions(_ idle: [AppID], except terminated: Set<AppID>, note: ReclaimNote,
                                                 into plan: inout ReclaimPlan) {
        guard configuration.suspendEarly else { return }
        for id in idle.sorted() where terminated.isEmpty || !terminated.contains(id) {
            plan.steps.append(ReclaimStep(action: .suspend(id), note: note))
            episode!.suspensions += 1
        }
    }
}

/// The apps each rung looks at, found in one pass over the app table (each pass reads every
/// record, which is slow for tens of thousands of apps).
struct AppLists {
    /// Running processes (memory warnings go to them).
    var running: [AppID] = []
    /// Running with no foreground scene and no task (suspended early).
    var idle: [AppID] = []
    /// Slots of suspended processes holding memory of their own (termination candidates).
    var suspendedWithMemory: [Int] = []

    init(_ engine: LifecycleEngine) {
        let records = engine.apps.records
        for i in records.indices {
            switch records[i].process {
            case .running:
                running.append(records[i].id)
                if !records[i].hasForegroundScene && records[i].tasks.isEmpty { idle.append(records[i].id) }
            case .suspended:
                if records[i].baseFootprint > 0 { suspendedWithMemory.append(i) }
            default:
                break
            }
        }
    }
}

// MARK: - Caps

extension ReclaimPolicy {
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
