// MARK: - Victims from the engine's candidate index

/// Where a decision finds its victims. Both give the same victims in the same order.
public enum VictimSelection: Sendable {
    /// The engine's `CandidateIndex`, keeping only the best few per pass (the default).
    case index
    /// Every session through the engine's session table, all candidates in a heap: the
    /// reference the index's victims are checked against.
    case scan
}

/// What `decide` takes victims from: best first, with what the eligibility pass learned.
protocol VictimSource {
    var withheld: Int { get }
    var earliestAging: Timestamp? { get }
    /// The processes that process candidates stand for (`Candidate.id` indexes it).
    var processes: [AppID] { get }
    mutating func popBest() -> ReclaimPolicy.Candidate?
}

extension ReclaimPolicy.VictimPool: VictimSource {}

extension ReclaimPolicy {
    /// What one pass over the index learns before any score can be computed: the previous
    /// scene, how many are eligible, their mean restore cost, and what was held back.
    struct Eligibility {
        var critical: Bool
        /// The previous scene (it ages twice as long), if it is a background scene.
        var previous: SessionID?
        var meanCost: Double
        var eligibleScenes: Int
        var withheld = 0
        var earliestAging: Timestamp?
        var processCandidates: Bool
    }

    /// What the scan learns in its pass, from the index's sums where they suffice: at critical
    /// every unprotected scene is eligible, so with the previous scene known there is no pass
    /// at all; at warning one pass tells the aged from the young.
    func eligibility(engine: LifecycleEngine, level: PressureLevel, now: Timestamp) -> Eligibility {
        let index = engine.candidates
        let critical = level == .critical
        let processes = critical && configuration.terminateSuspendedAtCritical
        let defaultCost = configuration.defaultRestoreCostMs
        var best: (lastActive: Timestamp, id: SessionID, index: Int)?
        var costSum = 0.0
        var eligible = 0, withheld = 0
        var earliestAging: Timestamp?
        let aging = configuration.aging
        let regretsMatter = !regrets.isEmpty
        let knownPrevious = index.previousUnknown ? nil : index.previous
        if !critical && !index.previousUnknown {
            return warningEligibility(index: index, now: now, previous: knownPrevious)
        }
        index.entries.withUnsafeBufferPointer { entries in
            if critical {
                if index.previousUnknown {
                    for i in entries.indices where entries[i].activations > 0
                        && (best == nil || (entries[i].lastActiveAt, entries[i].id) > (best!.lastActive, best!.id)) {
                        best = (entries[i].lastActiveAt, entries[i].id, i)
                    }
                } else if let p = knownPrevious {
                    best = (p.lastActive, p.id, -1)
                }
                eligible = index.unprotected
                costSum = Double(index.declaredCosts &+ UInt64(index.unprotectedWithoutCost) &* UInt64(defaultCost))
                return
            }
            var previousAt = -1
            for i in entries.indices {
                if index.previousUnknown && entries[i].activations > 0
                    && (best == nil || (entries[i].lastActiveAt, entries[i].id) > (best!.lastActive, best!.id)) {
                    best = (entries[i].lastActiveAt, entries[i].id, i)
                }
                if entries[i].isProtected { continue }
                if knownPrevious?.id == entries[i].id { previousAt = i }
                let since = entries[i].backgroundSince
                let agingTime = regretsMatter ? agingTime(of: entries[i].id, previous: false) : aging
                if now - since < agingTime {
                    withheld += 1
                    let aged = since + agingTime
                    if earliestAging == nil || aged < earliestAging! { earliestAging = aged }
                    continue
                }
                eligible += 1
                // Integral values: the sum is exact in any order, as the scan's is.
                costSum += Double(entries[i].restoreCostMs > 0 ? entries[i].restoreCostMs : defaultCost)
            }
            if let p = knownPrevious { best = (p.lastActive, p.id, previousAt) }
            // The previous scene ages twice as long: an aged one may in fact be young.
            if let p = best, p.index >= 0, !entries[p.index].isProtected {
                let since = entries[p.index].backgroundSince
                let usual = agingTime(of: p.id, previous: false)
                let longer = agingTime(of: p.id, previous: true)
                if now - since >= usual && now - since < longer {
                    eligible -= 1
                    costSum -= Double(entries[p.index].restoreCostMs > 0 ? entries[p.index].restoreCostMs : defaultCost)
                    withheld += 1
                    let aged = since + longer
                    if earliestAging == nil || aged < earliestAging! { earliestAging = aged }
                }
            }
        }
        var result = Eligibility(critical: critical, previous: best?.id, meanCost: 0, eligibleScenes: eligible,
                                 processCandidates: processes)
        result.withheld = withheld
        result.earliestAging = earliestAging
        result.meanCost = eligible == 0 ? Double(defaultCost) : costSum / Double(eligible)
        return result
    }

    /// At warning with the previous scene known: the young are the newest arrivals (and scenes
    /// whose regrets lengthen their aging), so only they are read, not every entry.
    private func warningEligibility(index: CandidateIndex, now: Timestamp,
                                    previous: (lastActive: Timestamp, id: SessionID)?) -> Eligibility {
        let defaultCost = configuration.defaultRestoreCostMs
        let aging = configuration.aging
        var young = 0
        var youngDeclared: UInt64 = 0, youngWithoutCost = 0
        var earliestAging: Timestamp?
        var counted = Set<SessionID>()
        func withhold(_ e: CandidateIndex.Entry, until aged: Timestamp) {
            young += 1
            if e.restoreCostMs == 0 { youngWithoutCost += 1 } else { youngDeclared &+= UInt64(e.restoreCostMs) }
            if earliestAging == nil || aged < earliestAging! { earliestAging = aged }
            counted.insert(e.id)
        }
        let arrivals = index.arrivals
        var i = arrivals.count - 1
        // Newest first, while young by the usual aging (a longer one only adds to these).
        while i >= 0 && now - arrivals[i].since < aging {
            defer { i -= 1 }
            guard let e = index.entry(arrivals[i].id), e.backgroundSince == arrivals[i].since, !e.isProtected,
                  !counted.contains(e.id) else { continue }
            withhold(e, until: e.backgroundSince + agingTime(of: e.id, previous: false))
        }
        // Scenes reclaimed and wanted back age longer: young beyond the usual aging.
        for (id, regret) in regrets where regret > 0 && !counted.contains(id) {
            guard let e = index.entry(id), !e.isProtected else { continue }
            let agingTime = agingTime(of: id, previous: false)
            if now - e.backgroundSince < agingTime { withhold(e, until: e.backgroundSince + agingTime) }
        }
        // The previous scene ages twice as long: an aged one may in fact be young.
        if let p = previous, !counted.contains(p.id), let e = index.entry(p.id), !e.isProtected {
            let usual = agingTime(of: p.id, previous: false)
            let longer = agingTime(of: p.id, previous: true)
            if now - e.backgroundSince >= usual && now - e.backgroundSince < longer {
                withhold(e, until: e.backgroundSince + longer)
            }
        }
        let eligible = index.unprotected - young
        // Integers throughout: the same sum as the scan's, in any order.
        let costs = (index.declaredCosts &- youngDeclared)
            &+ UInt64(index.unprotectedWithoutCost - youngWithoutCost) &* UInt64(defaultCost)
        var result = Eligibility(critical: false, previous: previous?.id, meanCost: 0, eligibleScenes: eligible,
                                 processCandidates: false)
        result.withheld = young
        result.earliestAging = earliestAging
        result.meanCost = eligible == 0 ? Double(defaultCost) : Double(costs) / Double(eligible)
        return result
    }

    /// The victims best first: each pass over the index keeps the `limit` best candidates
    /// after the last one handed out (a bounded heap; most entries are turned away by one
    /// comparison, or for `ours` by a bound on their score that needs no decay), so a
    /// decision that takes k victims costs O(n) with a small constant, not a heap of all n.
    struct VictimStream: VictimSource {
        let policy: ReclaimPolicy
        let engine: LifecycleEngine
        let level: PressureLevel
        let now: Timestamp
        let nextUse: ((SessionID) -> Timestamp?)?
        let eligibility: Eligibility
        var processes: [AppID] = []
        var ready: [Candidate] = []
        var cursor = 0
        var lastKey: SortKey?
        var limit: Int
        var exhausted = false

        var withheld: Int { eligibility.withheld }
        var earliestAging: Timestamp? { eligibility.earliestAging }

        /// Slots of suspended apps with memory of their own (see `AppLists`).
        let suspendedWithMemory: [Int]

        init(policy: ReclaimPolicy, engine: LifecycleEngine, level: PressureLevel, now: Timestamp,
             nextUse: ((SessionID) -> Timestamp?)?, suspendedWithMemory: [Int]) {
            self.suspendedWithMemory = suspendedWithMemory
            self.policy = policy
            self.engine = engine
            self.level = level
            self.now = now
            self.nextUse = nextUse
            eligibility = policy.eligibility(engine: engine, level: level, now: now)
            limit = max(2 * policy.configuration.maxVictimsPerBatch, 16)
        }

        mutating func popBest() -> Candidate? {
            if cursor == ready.count {
                guard !exhausted else { return nil }
                refill()
                guard cursor < ready.count else { return nil }
            }
            defer { cursor += 1 }
            return ready[cursor]
        }

        private mutating func refill() {
            var best = BoundedHeap(limit: limit)
            policy.offerScenes(to: &best, engine: engine, eligibility: eligibility, now: now, after: lastKey,
                               nextUse: nextUse, suspendedWithMemory: suspendedWithMemory, processes: &processes)
            ready = best.sorted()
            cursor = 0
            // Fewer than asked for: nothing is left after these.
            exhausted = ready.count < limit
            lastKey = ready.last.map { policy.sortKey($0) }
            limit *= 4
        }
    }

    /// The `limit` smallest keys offered: a max-heap whose root is the worst kept.
    struct BoundedHeap {
        let limit: Int
        var keys: [SortKey] = []
        var items: [Candidate] = []

        init(limit: Int) {
            self.limit = limit
            keys.reserveCapacity(limit)
            items.reserveCapacity(limit)
        }

        var isFull: Bool { keys.count == limit }
        /// Whether a candidate with this key would be kept.
        @inline(__always) func admits(_ key: SortKey) -> Bool { !isFull || key < keys[0] }

        mutating func offer(_ key: SortKey, _ item: Candidate) {
            if keys.count < limit {
                keys.append(key)
                items.append(item)
                var child = keys.count - 1
                while child > 0 {
                    let parent = (child - 1) / 2
                    guard keys[parent] < keys[child] else { break }
                    keys.swapAt(parent, child)
                    items.swapAt(parent, child)
                    child = parent
                }
                return
            }
            guard key < keys[0] else { return }
            keys[0] = key
            items[0] = item
            var parent = 0
            while true {
                let left = 2 * parent + 1
                if left >= keys.count { break }
                var larger = left
                if left + 1 < keys.count && keys[left] < keys[left + 1] { larger = left + 1 }
                guard keys[parent] < keys[larger] else { break }
                keys.swapAt(parent, larger)
                items.swapAt(parent, larger)
                parent = larger
            }
        }

        func sorted() -> [Candidate] {
            keys.indices.sorted { keys[$0] < keys[$1] }.map { items[$0] }
        }
    }

    /// Below any loss a process's scenes can add up to (the bound's terms, summed in another
    /// order and rounded differently, stay far within it).
    static let boundMargin = 1 - 1e-6

    /// One pass over the index: every eligible scene with a key after `after` is offered, and
    /// at critical the suspended processes.
    func offerScenes(to best: inout BoundedHeap, engine: LifecycleEngine, eligibility e: Eligibility, now: Timestamp,
                     after: SortKey?, nextUse: ((SessionID) -> Timestamp?)?, suspendedWithMemory: [Int],
                     processes: inout [AppID]) {
        offerIndexedScenes(to: &best, engine: engine, eligibility: e, now: now, after: after, nextUse: nextUse)
        guard e.processCandidates else { return }
        offerProcesses(to: &best, engine: engine, meanCost: e.meanCost, now: now, after: after, nextUse: nextUse,
                       suspendedWithMemory: suspendedWithMemory, processes: &processes)
    }

    /// Every eligible scene of the index with a key after `after`.
    ///
    /// For `ours`, scenes are visited by footprint bucket, largest first: a score is at least
    /// 1 / bytes (uses + 1 ≥ 1, the cost factor ≥ 1), so once a bucket's smallest possible
    /// score is above the worst score kept, no scene after it can be kept. The other orders
    /// rank by what the score does not bound and read every entry.
    @inline(__always)
    private func offerIndexedScenes(to best: inout BoundedHeap, engine: LifecycleEngine, eligibility e: Eligibility,
                                    now: Timestamp, after: SortKey?, nextUse: ((SessionID) -> Timestamp?)?) {
        let index = engine.candidates
        let records = engine.apps.records
        let defaultCost = configuration.defaultRestoreCostMs
        let meanCost = e.meanCost
        let ours = order == .ours
        let aging = configuration.aging
        let regretsMatter = !regrets.isEmpty
        let inverseMean = meanCost > 0 ? 1 / meanCost : 0
        // The worst kept while the heap is full (`ours`): most scenes are turned away by it
        // without a division (a margin covers the multiplication's rounding in `numerator`).
        var filterTier = Int.max
        var filterPrimary = Double.infinity
        index.entries.withUnsafeBufferPointer { entries in
            func consider(_ i: Int) {
                guard !entries[i].isProtected else { return }
                let id = entries[i].id
                let agingTime = regretsMatter || id == e.previous ? self.agingTime(of: id, previous: id == e.previous) : aging
                let young = now - entries[i].backgroundSince < agingTime
                if young && !e.critical { return }
                let tier = young ? 2 : 1
                let bytes = entries[i].footprint
                let cost = Double(entries[i].restoreCostMs > 0 ? entries[i].restoreCostMs : defaultCost)
                let sessions = usageSessions(id, activations: entries[i].activations)
                if tier > filterTier { return }
                if tier == filterTier
                    && (sessions + Self.priorUses) * (1 + cost * inverseMean) > filterPrimary * Double(max(bytes, 1)) { return }
                let slot = Int(entries[i].appSlot)
                var candidate = Candidate(id: id.rawValue, isProcess: false, tier: tier, bytes: bytes, score: 0,
                                          lastActive: entries[i].lastActiveAt, backgroundSince: entries[i].backgroundSince,
                                          suspendedApp: order == .lmkd && records[slot].process == .suspended,
                                          nextUse: nextUse?(id), stableKey: id.rawValue, uses: sessions, cost: cost)
                // Without the decayed activations (never negative; rounding is monotonic) the
                // score is a lower bound of the real one, and the decay is the costly part.
                // Only `ours` ranks by the score: the others' keys are exact without it.
                candidate.score = valueScore(uses: sessions, cost: cost, bytes: bytes, meanCost: meanCost)
                guard best.admits(sortKey(candidate)) else { return }
                candidate.uses = sessions + entries[i].activationScore(at: now)
                candidate.score = valueScore(uses: candidate.uses, cost: cost, bytes: bytes, meanCost: meanCost)
                let key = sortKey(candidate)
                if let after, !(after < key) { return }
                best.offer(key, candidate)
                if ours && best.isFull {
                    filterTier = best.keys[0].tier
                    filterPrimary = best.keys[0].primary * (1 + 1e-9)
                }
            }
            guard ours else {
                for i in entries.indices { consider(i) }
                return
            }
            var b = CandidateIndex.bucketCount - 1
            while b >= 0 {
                if best.isFull && best.keys[0].tier == 1 && 1 / CandidateIndex.bucketCeiling(b) > best.keys[0].primary { break }
                index.buckets[b].withUnsafeBufferPointer { members in
                    for m in members { consider(Int(m)) }
                }
                b -= 1
            }
        }
    }

    /// At critical, the suspended processes with memory of their own, each first held to a
    /// bound on its score from the index's sums (`ours`), then summed exactly.
    @inline(__always)
    private func offerProcesses(to best: inout BoundedHeap, engine: LifecycleEngine, meanCost: Double, now: Timestamp,
                                after: SortKey?, nextUse: ((SessionID) -> Timestamp?)?, suspendedWithMemory: [Int],
                                processes: inout [AppID]) {
        let index = engine.candidates
        let records = engine.apps.records
        let defaultCost = configuration.defaultRestoreCostMs
        let ours = order == .ours
        for slot in suspendedWithMemory {
            let inIndex = slot < index.appBytes.count
            if inIndex && index.appProtected[slot] > 0 { continue }
            if ours {
                // Each scene adds at least its cost factor (1 + c / c̄) to the loss, its uses
                // counted as none: a bound from the index's sums.
                let scenes = inIndex ? Double(index.appScenes[slot]) : 0
                let costs = inIndex ? Double(index.appDeclaredCosts[slot]
                    &+ UInt64(index.appWithoutCost[slot]) &* UInt64(defaultCost)) : 0
                let loss = scenes + (meanCost > 0 ? costs / meanCost : 0)
                let bytes = records[slot].baseFootprint &+ (inIndex ? index.appBytes[slot] : 0)
                let bound = SortKey(tier: 1, primary: loss * Self.boundMargin / Double(bytes), secondary: 0,
                                    lastActive: .min, bytes: .max, stable: 0, process: 0)
                guard best.admits(bound) else { continue }
            }
            // Kept by its bound (or, for the other orders, for its key): its figures exactly
            // as the scan sums them.
            let f = processSums(slot: slot, engine: engine, meanCost: meanCost, now: now, nextUse: nextUse)
            if f.hasProtected { continue }
            var candidate = Candidate(id: 0, isProcess: true, tier: 1, bytes: f.bytes, score: f.loss / Double(f.bytes),
                                      lastActive: f.lastActive, backgroundSince: f.since, suspendedApp: true,
                                      nextUse: f.nearest, stableKey: f.first == .max ? 0 : f.first, uses: 0, cost: f.loss)
            candidate.processSlot = Int32(slot + 1)
            let key = sortKey(candidate)
            if let after, !(after < key) { continue }
            guard best.admits(key) else { continue }
            candidate.id = UInt64(processes.count)
            processes.append(records[slot].id)
            best.offer(key, candidate)
        }
    }
}
