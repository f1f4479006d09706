/// Which connections get a turn in a loop pass, which hear of a new pass's or batch's budget,
/// which have output to flush and which need the clock — and the contention between
/// interactive and bulk clients that decides their budgets. Pure: no I/O, no clock reads (the
/// time is a parameter), connections known by a number; `VarlinkServer` carries out what its
/// methods answer.
///
/// Contention: while a client that waits for its replies (interactive) competes, the others'
/// calls come in rounds, fresh only when a batch holding an interactive call begins, so that
/// its replies never wait behind much of theirs.
///
/// A connection is known by the slot it was given at `admit`, a small number reused after
/// `remove`, so that its marks are an array index rather than a hash lookup on every step.
struct PassScheduler: Sendable {
    struct Marks: OptionSet, Sendable {
        let rawValue: UInt8
        /// In `ready`: served in the next pass.
        static let queued = Marks(rawValue: 1 << 0)
        /// In `served`: hears `passBegan` when the next pass begins.
        static let served = Marks(rawValue: 1 << 1)
        /// In `members`: hears `batchBegan` when the next batch begins.
        static let inBatch = Marks(rawValue: 1 << 2)
        /// In `dirty`: has output to write at the next flush.
        static let dirty = Marks(rawValue: 1 << 3)
        /// In `timed`: needs clock ticks (part of a message held, or ending).
        static let onClock = Marks(rawValue: 1 << 4)
        /// Its last call was interactive (its machine's judgement): served first.
        static let interactive = Marks(rawValue: 1 << 5)
        /// An interactive client competed with it at its last turn: held to rounds.
        static let contended = Marks(rawValue: 1 << 6)
    }

    /// What the server must do after a step, besides what the connection's machine said.
    struct FollowUp: OptionSet, Sendable {
        let rawValue: UInt8
        static let requestPass = FollowUp(rawValue: 1 << 0)
        static let armClock = FollowUp(rawValue: 1 << 1)
    }

    /// How long an interactive client counts as competing after its last call (µs): a few of
    /// its own gaps between calls, so that it still counts when it is starved (a client whose
    /// round trip grew past a fixed memory would stop counting, the bulk clients would be served
    /// uncontended, and its round trip would grow further), bounded by far less than a human's
    /// pause.
    static let shortestInteractiveMemory: UInt64 = 50_000
    static let longestInteractiveMemory: UInt64 = 1_000_000
    static let interactiveGapsRemembered: UInt64 = 4

    private(set) var marks: [Marks] = []
    private var freeSlots: [Int] = []
    private var ready: [Int] = []
    private var served: [Int] = []
    /// Connections that handled calls in the batch being gathered, or wait for the next one.
    private(set) var members: [Int] = []
    private var dirty: [Int] = []
    private var timed: [Int] = []

    /// When a client with few calls in flight last made one, and which (-1: it has gone):
    /// such a client waits for each reply, so between its calls it is not in any batch, yet
    /// still competes. Plain fields, not an optional tuple: this is read at every pass.
    private var interactiveCallSeen = false
    private(set) var lastInteractiveTime: UInt64 = 0
    private(set) var lastInteractiveConnection = -1
    /// An interactive client's call is in the batch being gathered.
    private(set) var interactiveInBatch = false
    private(set) var interactiveMemory: UInt64 = PassScheduler.shortestInteractiveMemory

    /// Something is left for another pass.
    var hasWork: Bool { !ready.isEmpty || !dirty.isEmpty }
    var hasTimed: Bool { !timed.isEmpty }
    var hasReady: Bool { !ready.isEmpty }
    var hasDirty: Bool { !dirty.isEmpty }

    func interactiveRecently(now: UInt64) -> Bool {
        interactiveCallSeen && now &- lastInteractiveTime < interactiveMemory
    }

    // MARK: - Connections

    /// A new connection's slot.
    mutating func admit() -> Int {
        if let slot = freeSlots.popLast() { return slot }
        marks.append([])
        return marks.count - 1
    }

    /// The connection closed: it leaves every list, and its slot may be given out again.
    mutating func remove(_ c: Int) {
        let m = marks[c]
        if m.contains(.queued) { ready.removeAll { $0 == c } }
        if m.contains(.served) { served.removeAll { $0 == c } }
        if m.contains(.inBatch) { members.removeAll { $0 == c } }
        if m.contains(.dirty) { dirty.removeAll { $0 == c } }
        if m.contains(.onClock) { timed.removeAll { $0 == c } }
        if lastInteractiveConnection == c { lastInteractiveConnection = -1 }
        marks[c] = []
        freeSlots.append(c)
    }

    // MARK: - After a step

    /// Enrols a connection in the lists its machine's state calls for. `waitsForBudget`: a
    /// complete call waits only for a fresh budget, and no readiness will come to wake it, so
    /// it must hear of the next pass and batch (outside its own turn — a parked launch settled,
    /// a stream ended — it would otherwise hear of neither). A next pass is asked for only when
    /// this pass's budget is what it waits for: waiting for the next batch, passes meanwhile
    /// would spin; the batch's start wakes it.
    @inline(__always)
    mutating func afterStep(_ c: Int, needsService: Bool, waitsForBudget: Bool, passBudgetSpent: Bool,
                            needsClock: Bool) -> FollowUp {
        var follow: FollowUp = []
        if needsService && !marks[c].contains(.queued) {
            marks[c].insert(.queued)
            ready.append(c)
            follow.insert(.requestPass)
        }
        if waitsForBudget {
            if !marks[c].contains(.served) {
                marks[c].insert(.served)
                served.append(c)
                if passBudgetSpent { follow.insert(.requestPass) }
            }
            enrol(c)
        }
        if needsClock && !marks[c].contains(.onClock) {
            marks[c].insert(.onClock)
            timed.append(c)
            follow.insert(.armClock)
        }
        return follow
    }

    /// Has output to write at the next flush; true if it was not already waiting for one.
    @inline(__always)
    mutating func markDirty(_ c: Int) -> Bool {
        guard !marks[c].contains(.dirty) else { return false }
        marks[c].insert(.dirty)
        dirty.append(c)
        return true
    }

    /// In the batch being gathered: it hears when the next one begins.
    @inline(__always)
    mutating func enrol(_ c: Int) {
        guard !marks[c].contains(.inBatch) else { return }
        marks[c].insert(.inBatch)
        members.append(c)
    }

    /// A call of `c` was handled; `interactive` as its machine judged it, `previous` its last
    /// interactive call before this one. An interactive call competes for a few of its gaps.
    mutating func callHandled(_ c: Int, interactive: Bool, previous: UInt64?, at time: UInt64) {
        if interactive {
            marks[c].insert(.interactive)
            interactiveMemory = Self.interactiveMemory(afterGap: previous.map { time &- $0 })
            interactiveCallSeen = true
            lastInteractiveTime = time
            lastInteractiveConnection = c
            interactiveInBatch = true
        } else {
            marks[c].remove(.interactive)
        }
        enrol(c)
    }

    /// How long a client counts as competing after a call that came `gap` µs after its last
    /// one (nil: its first).
    static func interactiveMemory(afterGap gap: UInt64?) -> UInt64 {
        guard let gap else { return shortestInteractiveMemory }
        if gap >= longestInteractiveMemory / interactiveGapsRemembered { return longestInteractiveMemory }
        return max(gap * interactiveGapsRemembered, shortestInteractiveMemory)
    }

    // MARK: - Passes

    /// A pass begins: the connections served in the last one hear of a fresh budget.
    mutating func beginPass(releasing list: inout [Int]) {
        Self.take(&served, into: &list, marks: &marks, clearing: .served)
    }

    /// The connections ready at the start of the pass, interactive ones first (their call
    /// reserves the batch before bulk clients fill it). Each is given its turn by `beginTurn`
    /// with the interactive client returned here (nil: none competes).
    mutating func takeTurns(into list: inout [Int], now: UInt64) -> Int? {
        list.removeAll(keepingCapacity: true)
        swap(&list, &ready)
        if list.count > 1, list.contains(where: { marks[$0].contains(.interactive) }) {
            let bulk = list.filter { !marks[$0].contains(.interactive) }
            list.removeAll { !marks[$0].contains(.interactive) }
            list.append(contentsOf: bulk)
        }
        return interactiveRecently(now: now) ? lastInteractiveConnection : nil
    }

    /// `c`'s turn: whether it is contended (an interactive client other than itself competes,
    /// so it gets the small budgets) and whether that client's call reserved the batch. A
    /// contended connection held out of a reserved batch hears when the next one begins.
    mutating func beginTurn(_ c: Int, competing: Int?) -> (contended: Bool, reserved: Bool) {
        marks[c].remove(.queued)
        let contended = competing != nil && competing != c && !marks[c].contains(.interactive)
        if contended {
            marks[c].insert(.contended)
            if interactiveInBatch { enrol(c) }
        } else {
            marks[c].remove(.contended)
        }
        if !marks[c].contains(.served) {
            marks[c].insert(.served)
            served.append(c)
        }
        return (contended, interactiveInBatch)
    }

    /// The connections with output to write.
    mutating func takeDirty(into list: inout [Int]) {
        Self.take(&dirty, into: &list, marks: &marks, clearing: .dirty)
    }

    /// The connections that need a clock tick.
    mutating func takeTimed(into list: inout [Int]) {
        Self.take(&timed, into: &list, marks: &marks, clearing: .onClock)
    }

    // MARK: - Batches and contention

    /// A new batch began gathering. While an interactive client competes, a bulk client's
    /// calls come in rounds: its budget is fresh only when a batch holding an interactive call
    /// begins (or contention ends), so it adds at most `callsPerBatch` calls per interactive
    /// call however fast commits go. Everyone else goes on at once: `list` gets the members
    /// that hear `batchBegan`.
    mutating func batchBegan(now: UInt64, releasing list: inout [Int]) {
        let roundEnds = interactiveInBatch || !interactiveRecently(now: now)
        interactiveInBatch = false
        release(holdingContended: !roundEnds, into: &list)
    }

    /// The contention timer fired: if no interactive call came for a while, the held bulk
    /// clients go on (`list`).
    mutating func contentionEnded(now: UInt64, releasing list: inout [Int]) {
        list.removeAll(keepingCapacity: true)
        guard !interactiveRecently(now: now) else { return }
        release(holdingContended: false, into: &list)
    }

    /// When contention ends if no interactive call comes: held members must not outlive it.
    var contentionDeadline: UInt64? {
        guard !members.isEmpty, interactiveCallSeen else { return nil }
        return lastInteractiveTime &+ interactiveMemory
    }

    private mutating func release(holdingContended: Bool, into list: inout [Int]) {
        Self.take(&members, into: &list, marks: &marks, clearing: [])
        guard holdingContended else {
            for c in list { marks[c].remove(.inBatch) }
            return
        }
        var kept = 0
        for c in list {
            if marks[c].contains(.contended) {
                members.append(c)
            } else {
                marks[c].remove(.inBatch)
                list[kept] = c
                kept += 1
            }
        }
        list.removeLast(list.count - kept)
    }

    /// Moves `source` into `list` (emptied first, its buffer reused) and clears `mark`.
    @inline(__always)
    private static func take(_ source: inout [Int], into list: inout [Int], marks: inout [Marks], clearing mark: Marks) {
        list.removeAll(keepingCapacity: true)
        swap(&list, &source)
        if !mark.isEmpty { for c in list { marks[c].remove(mark) } }
    }
}
