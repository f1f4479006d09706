// MARK: - Victims

extension ReclaimPolicy {
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
        /// A process's app slot + 1 (0 for a scene): the last tie-break, so that the order is
        /// total and every way of finding victims gives the same one.
        var processSlot: Int32 = 0

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
        var process: Int32

        static func < (a: SortKey, b: SortKey) -> Bool {
            if a.tier != b.tier { return a.tier < b.tier }
            if a.primary != b.primary { return a.primary < b.primary }
            if a.secondary != b.secondary { return a.secondary < b.secondary }
            if a.lastActive != b.lastActive { return a.lastActive < b.lastActive }
            if a.bytes != b.bytes { return a.bytes > b.bytes }
            if a.stable != b.stable { return a.stable < b.stable }
            return a.process < b.process
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
                       bytes: c.bytes, stable: c.stableKey, process: c.processSlot)
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
        var (costSum, previous) = addScenes(to: &pool, engine: engine, critical: critical, now: now, nextUse: nextUse)
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
            addProcesses(to: &pool, engine: engine, meanCost: meanCost, now: now, nextUse: nextUse)
        }
        pool.heapify()
        return pool
    }

    /// The previous scene as the pass over the sessions knows it so far, and where it went:
    /// its candidate index, or nil.
    typealias PreviousScene = (id: SessionID, lastActive: Timestamp, backgroundSince: Timestamp, index: Int?)

    /// The pass over the sessions: eligible background scenes become candidates (unscored),
    /// young ones at warning are withheld. Returns the candidates' summed restore costs and
    /// the previous scene.
    @inline(__always)
    private func addScenes(to pool: inout VictimPool, engine: LifecycleEngine, critical: Bool, now: Timestamp,
                           nextUse: ((SessionID) -> Timestamp?)?) -> (costSum: Double, previous: PreviousScene?) {
        pool.candidates.reserveCapacity(engine.sessions.count)
        var previous: PreviousScene?
        var costSum = 0.0
        // Indexing the storage reads the fields in place; a for-in loop would copy every session.
        let sessions = engine.sessions.values
        var index = sessions.startIndex
        while index != sessions.endIndex {
            defer { sessions.formIndex(after: &index) }
            guard sessions[index].condition == .live && sessions[index].sceneState == .background else { continue }
            let s = CandidateIndex.Entry(sessions[index])
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
                                                 + s.activationScore(at: now),
                                             cost: cost))
        }
        return (costSum, previous)
    }

    /// At critical, a suspended process holding memory of its own can go too (its scenes with
    /// it, as jetsam kills: no callbacks). One whose scenes are all chosen is terminated when
    /// the batch is assembled (see `takeVictims`), so only processes with their own memory
    /// need a candidate here. Its score: the loss of its scenes per byte freed.
    @inline(__always)
    private func addProcesses(to pool: inout VictimPool, engine: LifecycleEngine, meanCost: Double, now: Timestamp,
                              nextUse: ((SessionID) -> Timestamp?)?) {
        let records = engine.apps.records
        for i in records.indices {
            guard records[i].process == .suspended && records[i].baseFootprint > 0 else { continue }
            let sums = processSums(slot: i, engine: engine, meanCost: meanCost, now: now, nextUse: nextUse)
            if sums.hasProtected { continue }
            var candidate = Candidate(id: UInt64(pool.processes.count), isProcess: true, tier: 1, bytes: sums.bytes,
                                      score: sums.loss / Double(sums.bytes), lastActive: sums.lastActive,
                                      backgroundSince: sums.since, suspendedApp: true, nextUse: sums.nearest,
                                      stableKey: sums.first == .max ? 0 : sums.first, uses: 0, cost: sums.loss)
            candidate.processSlot = Int32(i + 1)
            pool.processes.append(records[i].id)
            pool.candidates.append(candidate)
            pool.keys.append(sortKey(candidate))
        }
    }

    /// What a suspended process would free and lose: its base footprint and its connected
    /// scenes, summed in the order of its session set (both ways of finding victims sum here,
    /// so their scores are the same to the last bit).
    struct ProcessFigures {
        var bytes: UInt64
        var loss = 0.0
        var lastActive = Timestamp.zero
        var since = Timestamp.zero
        var nearest: Timestamp?
        var hasProtected = false
        var first = UInt64.max
    }

    func processSums(slot: Int, engine: LifecycleEngine, meanCost: Double, now: Timestamp,
                     nextUse: ((SessionID) -> Timestamp?)?) -> ProcessFigures {
        var f = ProcessFigures(bytes: engine.apps.records[slot].baseFootprint)
        // Read in place through one view (each `engine.sessions.values[…]` would copy).
        let table = engine.sessions
        let values = table.values
        for id in engine.apps.records[slot].sessions {
            // Found once, then read in place (a lookup by key would copy the session).
            guard let position = table.index(forKey: id), values[position].condition == .live else { continue }
            let s = CandidateIndex.Entry(values[position])
            if s.isProtected { f.hasProtected = true }
            f.first = min(f.first, id.rawValue)
            f.bytes &+= s.footprint
            let cost = Double(s.restoreCostMs > 0 ? s.restoreCostMs : configuration.defaultRestoreCostMs)
            let n = usageSessions(id, activations: s.activations) + s.activationScore(at: now)
            f.loss += valueScore(uses: n, cost: cost, bytes: s.footprint, meanCost: meanCost) * Double(max(s.footprint, 1))
            f.lastActive = max(f.lastActive, s.lastActiveAt)
            f.since = max(f.since, s.backgroundSince)
            if let n = nextUse?(id) { f.nearest = f.nearest.map { min($0, n) } ?? n }
        }
        return f
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
}
