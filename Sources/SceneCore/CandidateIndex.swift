/// The sessions reclaim may look at: every connected scene in the background, protected or not,
/// with the fields the policy reads, packed in one array. The engine keeps it current from the
/// same effects the store persists (every change to a session emits `.sessionChanged` or
/// `.sessionRemoved`), so a decision reads a few contiguous bytes per candidate instead of
/// walking every session (archived and foreground ones included) through a dictionary.
///
/// Positions are kept by session number (see SessionPositions).
public struct CandidateIndex: Sendable, Equatable {
    /// 56 bytes: what scoring and eligibility read, nothing with a reference count (the scan,
    /// `VictimSelection.scan`, copies sessions out into it too).
    public struct Entry: Sendable, Equatable {
        public var id: SessionID
        public var lastActiveAt: Timestamp
        public var backgroundSince: Timestamp
        public var footprint: UInt64
        /// As of `lastActiveAt` (see `SceneSession.activationScore(at:)`).
        public var activationScore: Double
        public var activations: UInt32
        public var restoreCostMs: UInt32
        public var appSlot: Int32
        public var isProtected: Bool

        init(_ s: borrowing SceneSession) {
            id = s.id
            lastActiveAt = s.lastActiveAt
            backgroundSince = s.backgroundSince
            footprint = s.footprint
            activationScore = s.activationScore
            activations = s.activations
            restoreCostMs = s.restoreCostMs
            appSlot = s.appSlot
            isProtected = s.isProtected
        }

        /// The same, field by field through the pointer: `s.pointee` handed to the init above
        /// is copied, its references retained and released (see `Collector.offer`).
        @inline(__always)
        init(_ s: UnsafePointer<SceneSession>) {
            id = s.pointee.id
            lastActiveAt = s.pointee.lastActiveAt
            backgroundSince = s.pointee.backgroundSince
            footprint = s.pointee.footprint
            activationScore = s.pointee.activationScore
            activations = s.pointee.activations
            restoreCostMs = s.pointee.restoreCostMs
            appSlot = s.pointee.appSlot
            isProtected = s.pointee.isProtected
        }

        /// `SceneSession.activationScore(at:)` on the copied fields.
        @inline(__always)
        func activationScore(at now: Timestamp) -> Double {
            SceneSession.decayed(activationScore, since: lastActiveAt, at: now)
        }
    }

    public private(set) var entries: [Entry] = []
    /// Entry positions by session number.
    private var positions = SessionPositions()

    public init() {}

    public var count: Int { entries.count }

    static func belongs(_ s: borrowing SceneSession) -> Bool {
        s.condition == .live && s.sceneState == .background
    }

    /// The same, read in place for the same reason as `Entry.init(_:)` from a pointer.
    @inline(__always)
    static func belongs(_ s: UnsafePointer<SceneSession>) -> Bool {
        s.pointee.condition == .live && s.pointee.sceneState == .background
    }

    @inline(__always)
    private func position(_ id: SessionID) -> Int? { positions.position(id) }

    private mutating func setPosition(_ id: SessionID, _ position: Int?) { positions.set(id, position) }

    // MARK: Footprint buckets and per-app sums

    /// Entry positions by footprint, four buckets per octave: reclaim visits the largest first
    /// and stops where no smaller scene can score low enough (a score is at least 1 / bytes).
    public private(set) var buckets = [[Int32]](repeating: [], count: CandidateIndex.bucketCount)
    /// Per entry, its place in its bucket.
    private var bucketSlots: [Int32] = []
    /// Per app slot, over its entries: footprints summed, unprotected and protected scenes.
    public private(set) var appBytes: [UInt64] = []
    public private(set) var appScenes: [Int32] = []
    public private(set) var appProtected: [Int32] = []
    /// Per app slot, over its unprotected entries: declared restore costs summed, and how many
    /// declare none (a process's loss is at least its scenes' cost factors summed).
    public private(set) var appDeclaredCosts: [UInt64] = []
    public private(set) var appWithoutCost: [Int32] = []

    public static let bucketCount = 256

    /// 4 × the octave of the footprint (at least 1), plus its next two bits.
    @inline(__always)
    public static func bucket(_ footprint: UInt64) -> Int {
        let m = max(footprint, 1)
        let octave = 63 - m.leadingZeroBitCount
        guard octave >= 2 else { return octave * 4 }
        return octave * 4 + Int((m >> UInt64(octave - 2)) & 3)
    }

    /// Every footprint in bucket `b` is below this.
    public static func bucketCeiling(_ b: Int) -> Double {
        let octave = b / 4
        guard octave >= 2 else { return Double(UInt64(2) << UInt64(octave)) }
        return Double(5 + b % 4) * Double(UInt64(1) << UInt64(octave - 2))
    }

    private mutating func addToSums(_ entry: Entry, _ sign: Int32) {
        let slot = Int(entry.appSlot)
        if slot >= appBytes.count {
            let grow = slot + 1 - appBytes.count
            appBytes.append(contentsOf: repeatElement(0, count: grow))
            appScenes.append(contentsOf: repeatElement(0, count: grow))
            appProtected.append(contentsOf: repeatElement(0, count: grow))
            appDeclaredCosts.append(contentsOf: repeatElement(0, count: grow))
            appWithoutCost.append(contentsOf: repeatElement(0, count: grow))
        }
        appBytes[slot] = sign > 0 ? appBytes[slot] &+ entry.footprint : appBytes[slot] &- entry.footprint
        if entry.isProtected {
            appProtected[slot] += sign
        } else {
            appScenes[slot] += sign
            if entry.restoreCostMs == 0 {
                appWithoutCost[slot] += sign
            } else {
                appDeclaredCosts[slot] = sign > 0 ? appDeclaredCosts[slot] &+ UInt64(entry.restoreCostMs)
                    : appDeclaredCosts[slot] &- UInt64(entry.restoreCostMs)
            }
            unprotected += Int(sign)
            if entry.restoreCostMs == 0 { unprotectedWithoutCost += Int(sign) }
            declaredCosts = sign > 0 ? declaredCosts &+ UInt64(entry.restoreCostMs) : declaredCosts &- UInt64(entry.restoreCostMs)
        }
        notePrevious(entry, added: sign > 0)
    }

    // MARK: Sums for eligibility

    /// Unprotected entries, those of them with no declared restore cost, and the declared costs
    /// summed: at critical every unprotected scene is eligible, so the mean restore cost needs
    /// no pass (integers: the same value as a sum of the costs in any order).
    public private(set) var unprotected = 0
    public private(set) var unprotectedWithoutCost = 0
    public private(set) var declaredCosts: UInt64 = 0

    /// The previous scene (the most recently active background scene, ties to the larger id),
    /// when known without a pass: nil when it left and no scene has since come to the
    /// background with a later activity than any seen (`previousUnknown`).
    public private(set) var previous: (lastActive: Timestamp, id: SessionID)?
    public private(set) var previousUnknown = false
    /// The latest activity of any entry ever added.
    private var latestActivity = Timestamp(microseconds: .min)

    private mutating func notePrevious(_ entry: Entry, added: Bool) {
        guard added else {
            if previous?.id == entry.id {
                previous = nil
                previousUnknown = true
            }
            return
        }
        let activity = entry.lastActiveAt
        defer { latestActivity = max(latestActivity, activity) }
        guard entry.activations > 0 else { return }
        if activity > latestActivity {
            // Later than every entry there is: the previous scene, whatever was unknown.
            previous = (activity, entry.id)
            previousUnknown = false
        } else if !previousUnknown, previous == nil || (activity, entry.id) > (previous!.lastActive, previous!.id) {
            previous = (activity, entry.id)
        }
    }

    // MARK: Arrivals

    /// When each scene came to the background, oldest first. An arrival is current while its
    /// session's entry still has that time (a scene that left and came back has a newer one, or
    /// at the same time an equal one: readers skip repeats).
    /// Scenes arrive at the engine's clock, which never goes back, so appending keeps the order;
    /// the young scenes reclaim holds back at warning are the newest current arrivals.
    public struct Arrival: Sendable, Equatable {
        public var since: Timestamp
        public var id: SessionID
    }
    public private(set) var arrivals: [Arrival] = []

    /// The entry of a session, if it is a candidate.
    public func entry(_ id: SessionID) -> Entry? { position(id).map { entries[$0] } }

    public func isCurrent(_ arrival: Arrival) -> Bool { entry(arrival.id)?.backgroundSince == arrival.since }

    private mutating func noteArrival(_ entry: Entry) {
        let arrival = Arrival(since: entry.backgroundSince, id: entry.id)
        if let last = arrivals.last, arrival.since < last.since {
            // Not expected (times come from a clock that only grows), but kept in order anyway.
            var low = 0, high = arrivals.count
            while low < high {
                let mid = (low + high) / 2
                if arrivals[mid].since <= arrival.since { low = mid + 1 } else { high = mid }
            }
            arrivals.insert(arrival, at: low)
        } else {
            arrivals.append(arrival)
        }
        // Departed scenes' arrivals are dropped once they are half of the list.
        if arrivals.count > 2 * entries.count + 64 {
            var kept = arrivals
            arrivals = []
            // A scene that left and came back at the same time has two equal arrivals: one stays.
            var seen = Set<SessionID>()
            kept.removeAll { a in !isCurrent(a) || !seen.insert(a.id).inserted }
            arrivals = kept
        }
    }

    /// Brings the entry of a session in line with it.
    mutating func refresh(_ session: inout SceneSession) {
        let id = session.id
        guard Self.belongs(session) else { return remove(id) }
        let entry = Entry(session)
        guard let at = position(id) else {
            insert(entry)
            noteArrival(entry)
            return
        }
        let old = entries[at]
        let wasPrevious = !previousUnknown && previous?.id == id
        if old.footprint != entry.footprint || old.isProtected != entry.isProtected || old.appSlot != entry.appSlot
            || old.restoreCostMs != entry.restoreCostMs || old.lastActiveAt != entry.lastActiveAt
            || old.activations != entry.activations {
            remove(id)
            insert(entry)
            // Still the previous scene if its activity is unchanged (nothing else was added).
            if wasPrevious && entry.activations > 0 && entry.lastActiveAt == old.lastActiveAt {
                previous = (entry.lastActiveAt, id)
                previousUnknown = false
            }
        } else {
            entries[at] = entry
        }
    }

    /// Appends the entry of a session that has none.
    private mutating func insert(_ entry: Entry) {
        let at = entries.count
        setPosition(entry.id, at)
        entries.append(entry)
        let b = Self.bucket(entry.footprint)
        bucketSlots.append(Int32(buckets[b].count))
        buckets[b].append(Int32(at))
        addToSums(entry, 1)
    }

    /// Drops the entry of a session (gone, or no longer a background scene).
    mutating func remove(_ id: SessionID) {
        guard let at = position(id) else { return }
        let entry = entries[at]
        addToSums(entry, -1)
        // Out of its bucket: the bucket's last member takes its place.
        let b = Self.bucket(entry.footprint)
        let slot = Int(bucketSlots[at])
        let lastInBucket = buckets[b].count - 1
        if slot != lastInBucket {
            let moved = buckets[b][lastInBucket]
            buckets[b][slot] = moved
            bucketSlots[Int(moved)] = Int32(slot)
        }
        buckets[b].removeLast()
        // Swap with the last entry: removal is O(1), order is not part of the index.
        let last = entries.count - 1
        if at != last {
            entries[at] = entries[last]
            bucketSlots[at] = bucketSlots[last]
            buckets[Self.bucket(entries[at].footprint)][Int(bucketSlots[at])] = Int32(at)
            setPosition(entries[at].id, at)
        }
        entries.removeLast()
        bucketSlots.removeLast()
        setPosition(id, nil)
    }

    /// Whether the buckets, positions and sums agree with the entries (for tests).
    func isConsistent() -> Bool {
        var bytes = [UInt64](repeating: 0, count: appBytes.count)
        var scenes = [Int32](repeating: 0, count: appBytes.count)
        var protected = [Int32](repeating: 0, count: appBytes.count)
        var declared = [UInt64](repeating: 0, count: appBytes.count)
        var withoutCost = [Int32](repeating: 0, count: appBytes.count)
        for (at, e) in entries.enumerated() {
            let b = Self.bucket(e.footprint)
            guard position(e.id) == at, Int(bucketSlots[at]) < buckets[b].count,
                  buckets[b][Int(bucketSlots[at])] == Int32(at), Int(e.appSlot) < appBytes.count else { return false }
            bytes[Int(e.appSlot)] &+= e.footprint
            if e.isProtected {
                protected[Int(e.appSlot)] += 1
            } else {
                scenes[Int(e.appSlot)] += 1
                if e.restoreCostMs == 0 { withoutCost[Int(e.appSlot)] += 1 } else { declared[Int(e.appSlot)] += UInt64(e.restoreCostMs) }
            }
        }
        let open = entries.filter { !$0.isProtected }
        var latest: (lastActive: Timestamp, id: SessionID)?
        for e in entries where e.activations > 0 && (latest == nil || (e.lastActiveAt, e.id) > latest!) {
            latest = (e.lastActiveAt, e.id)
        }
        // Every entry's arrival is listed, in order.
        let current = Set(arrivals.filter(isCurrent).map(\.id))
        guard current.count == entries.count, zip(arrivals, arrivals.dropFirst()).allSatisfy({ $0.since <= $1.since }) else {
            return false
        }
        let previousHolds = previousUnknown || (previous?.id == latest?.id && previous?.lastActive == latest?.lastActive)
        return buckets.reduce(0) { $0 + $1.count } == entries.count
            && bytes == appBytes && scenes == appScenes && protected == appProtected
            && declared == appDeclaredCosts && withoutCost == appWithoutCost
            && unprotected == open.count && unprotectedWithoutCost == open.filter { $0.restoreCostMs == 0 }.count
            && declaredCosts == open.reduce(0) { $0 + UInt64($1.restoreCostMs) } && previousHolds
    }

    /// The index built from scratch: what the kept one must always equal, up to order.
    static func build(_ sessions: SessionTable) -> CandidateIndex {
        var entries = Collector(capacity: sessions.count)
        sessions.values.withUnsafeBufferPointer { values in
            guard let first = values.baseAddress else { return }
            for i in values.indices { entries.offer(first + i) }
        }
        return CandidateIndex(restoring: entries)
    }

    /// The entries of a table being restored, gathered in the pass that fixes its sessions up
    /// (a pass of its own would read every session from memory once more).
    struct Collector {
        var entries: [Entry] = []

        /// `capacity`: the sessions that will be offered, at most.
        init(capacity: Int) { entries.reserveCapacity(capacity) }

        /// Read through the pointer, field by field: a session read as a value (even to a
        /// borrowing parameter) is copied, its two references retained and released, which
        /// would cost more than all the rest of the build.
        @inline(__always)
        mutating func offer(_ s: UnsafePointer<SceneSession>) {
            if CandidateIndex.belongs(s) { entries.append(Entry(s)) }
        }
    }

    /// The index of the gathered entries, in the order gathered: what inserting them one by
    /// one gives, but in passes over flat arrays sized first: entry by entry, nested arrays
    /// would be grown and checked for every entry, a large share of a big table's start-up.
    init(restoring collected: consuming Collector) {
        var gathered = collected.entries
        collected.entries = []
        if gathered.isEmpty {
            // Not through unsafeUninitializedCapacity: at capacity 0 it writes the count into
            // the one shared empty-array storage, a race between any two threads doing so.
            gathered = []
        } else if gathered.count < gathered.capacity / 2 {
            // Sized for every session, as the gathering had to be: a daemon of archived
            // sessions keeps no slack for candidates it does not have.
            gathered = [Entry](unsafeUninitializedCapacity: gathered.count) { buffer, initialized in
                initialized = buffer.initialize(from: gathered).1
            }
        }
        entries = gathered
        fill()
    }

    /// Everything but the entries, from the entries (a fresh index: nothing else is set yet).
    private mutating func fill() {
        let appSlots = entries.reduce(0) { max($0, Int($1.appSlot) + 1) }
        var bytes = [UInt64](repeating: 0, count: appSlots), declared = [UInt64](repeating: 0, count: appSlots)
        var scenes = [Int32](repeating: 0, count: appSlots), protected = [Int32](repeating: 0, count: appSlots)
        var withoutCost = [Int32](repeating: 0, count: appSlots)
        var perBucket = [Int](repeating: 0, count: Self.bucketCount)
        var byBucket: [Int32] = []
        entries.withUnsafeBufferPointer { entries in
            for e in entries {
                perBucket[Self.bucket(e.footprint)] += 1
                let slot = Int(e.appSlot)
                bytes[slot] &+= e.footprint
                if e.isProtected {
                    protected[slot] += 1
                } else {
                    scenes[slot] += 1
                    unprotected += 1
                    declaredCosts &+= UInt64(e.restoreCostMs)
                    if e.restoreCostMs == 0 {
                        withoutCost[slot] += 1
                        unprotectedWithoutCost += 1
                    } else {
                        declared[slot] &+= UInt64(e.restoreCostMs)
                    }
                }
                notePrevious(e, added: true)
            }
            // Each bucket's members in entry order, as inserts append them: a counting sort.
            var next = [Int](repeating: 0, count: Self.bucketCount)
            for b in 1..<Self.bucketCount { next[b] = next[b - 1] + perBucket[b - 1] }
            let starts = next
            byBucket = [Int32](repeating: 0, count: entries.count)
            // Zeroed first, not unsafeUninitializedCapacity: with no entries that writes into
            // the shared empty-array storage (see `init(restoring:)`).
            bucketSlots = [Int32](repeating: 0, count: entries.count)
            for (at, e) in entries.enumerated() {
                let b = Self.bucket(e.footprint)
                bucketSlots[at] = Int32(next[b] - starts[b])
                byBucket[next[b]] = Int32(at)
                next[b] += 1
            }
            for b in 0..<Self.bucketCount where perBucket[b] > 0 {
                buckets[b] = Array(byBucket[starts[b]..<starts[b] + perBucket[b]])
            }
            _ = positions.setAll(count: entries.count) { entries[$0].id }
            arrivals = entries.map { Arrival(since: $0.backgroundSince, id: $0.id) }
        }
        (appBytes, appScenes, appProtected, appDeclaredCosts, appWithoutCost) = (bytes, scenes, protected, declared, withoutCost)
        arrivals.sort { ($0.since, $0.id) < ($1.since, $1.id) }
    }

    /// Same entries, whatever their order.
    public static func == (a: CandidateIndex, b: CandidateIndex) -> Bool {
        a.entries.count == b.entries.count
            && a.entries.sorted { $0.id < $1.id } == b.entries.sorted { $0.id < $1.id }
    }
}
