import Testing
@testable import SceneDaemon

/// The pass scheduler alone: who gets a turn and in which order, who hears of a new pass or
/// batch, and the rounds bulk clients are held to while an interactive client competes.
@Suite("PassScheduler")
struct PassSchedulerTests {
    typealias S = PassScheduler
    static let t0: UInt64 = 10_000_000

    /// A scheduler with `count` connections admitted.
    static func make(_ count: Int) -> (S, [Int]) {
        var s = S()
        let slots = (0..<count).map { _ in s.admit() }
        return (s, slots)
    }

    static func ready(_ s: inout S, _ c: Int) -> S.FollowUp {
        s.afterStep(c, needsService: true, waitsForBudget: false, passBudgetSpent: false, needsClock: false)
    }

    @Test("interactive clients take their turns first, the others keep their order")
    func interactiveFirst() {
        var (s, c) = Self.make(4)
        s.callHandled(c[2], interactive: true, previous: nil, at: Self.t0)
        s.callHandled(c[1], interactive: false, previous: nil, at: Self.t0)
        for i in [c[0], c[1], c[2], c[3]] { _ = Self.ready(&s, i) }
        var turns: [Int] = []
        let competing = s.takeTurns(into: &turns, now: Self.t0 + 1)
        #expect(turns == [c[2], c[0], c[1], c[3]])
        #expect(competing == c[2])
        #expect(!s.hasWork)
        // Long after its call, it no longer competes.
        _ = Self.ready(&s, c[0])
        #expect(s.takeTurns(into: &turns, now: Self.t0 + S.longestInteractiveMemory) == nil)
    }

    @Test("a connection is queued once per pass: the first step asks for a pass, the next do not until its turn")
    func queuedOnce() {
        var (s, c) = Self.make(1)
        #expect(Self.ready(&s, c[0]) == .requestPass)
        #expect(Self.ready(&s, c[0]) == [])
        var turns: [Int] = []
        _ = s.takeTurns(into: &turns, now: Self.t0)
        #expect(turns == [c[0]])
        // Still queued until its turn begins: a step before then adds nothing.
        #expect(Self.ready(&s, c[0]) == [])
        _ = s.beginTurn(c[0], competing: nil)
        #expect(Self.ready(&s, c[0]) == .requestPass)
    }

    @Test("under contention: the bulk client is contended, held out of the reserved batch, and released only when a batch holding an interactive call begins")
    func roundsUnderContention() {
        var (s, c) = Self.make(2)
        let (interactive, bulk) = (c[0], c[1])
        s.callHandled(bulk, interactive: false, previous: nil, at: Self.t0)
        s.callHandled(interactive, interactive: true, previous: nil, at: Self.t0)
        #expect(s.interactiveInBatch)
        _ = Self.ready(&s, bulk)
        _ = Self.ready(&s, interactive)
        var turns: [Int] = []
        let competing = s.takeTurns(into: &turns, now: Self.t0 + 100)
        #expect(turns == [interactive, bulk])
        let own = s.beginTurn(interactive, competing: competing)
        #expect(!own.contended && own.reserved, "the interactive client is not contended by itself")
        let other = s.beginTurn(bulk, competing: competing)
        #expect(other.contended && other.reserved)
        #expect(s.members == [bulk, interactive])

        // The batch holding the interactive call begins: the round ends, everyone is released.
        var released: [Int] = []
        s.batchBegan(now: Self.t0 + 200, releasing: &released)
        #expect(released == [bulk, interactive])
        #expect(s.members.isEmpty && !s.interactiveInBatch)

        // The bulk client handles its round's calls; a batch with no interactive call begins
        // while the interactive client still competes: the contended bulk client is held.
        s.callHandled(bulk, interactive: false, previous: nil, at: Self.t0 + 300)
        s.batchBegan(now: Self.t0 + 400, releasing: &released)
        #expect(released.isEmpty, "held for the next round")
        #expect(s.members == [bulk])
        #expect(s.contentionDeadline == Self.t0 + S.shortestInteractiveMemory)

        // The next interactive call reserves a batch; when it begins, the round ends.
        s.callHandled(interactive, interactive: true, previous: Self.t0, at: Self.t0 + 10_000)
        s.batchBegan(now: Self.t0 + 10_100, releasing: &released)
        #expect(released == [bulk, interactive])
    }

    @Test("at a batch's start, members that are not contended are released at once; their marks clear so they can enrol again")
    func releaseAtBatchStart() {
        var (s, c) = Self.make(3)
        for i in c { s.callHandled(i, interactive: false, previous: nil, at: Self.t0) }
        s.enrol(c[0])
        #expect(s.members == c, "enrolled once")
        var released: [Int] = []
        s.batchBegan(now: Self.t0, releasing: &released)
        #expect(released == c)
        #expect(s.members.isEmpty && s.contentionDeadline == nil)
        s.enrol(c[1])
        #expect(s.members == [c[1]])
    }

    @Test("contention ends when no interactive call came for the memory: the held clients go on, not before")
    func contentionEnds() throws {
        var (s, c) = Self.make(2)
        let (interactive, bulk) = (c[0], c[1])
        s.callHandled(interactive, interactive: true, previous: nil, at: Self.t0)
        _ = Self.ready(&s, bulk)
        var turns: [Int] = []
        let competing = s.takeTurns(into: &turns, now: Self.t0)
        _ = s.beginTurn(bulk, competing: competing)
        var released: [Int] = []
        s.batchBegan(now: Self.t0 + 10, releasing: &released)
        s.callHandled(bulk, interactive: false, previous: nil, at: Self.t0 + 20)
        s.batchBegan(now: Self.t0 + 30, releasing: &released)
        #expect(s.members == [bulk])
        let deadline = try #require(s.contentionDeadline)
        s.contentionEnded(now: deadline - 1, releasing: &released)
        #expect(released.isEmpty && s.members == [bulk], "still within the memory")
        s.contentionEnded(now: deadline, releasing: &released)
        #expect(released == [bulk])
        #expect(s.members.isEmpty && s.contentionDeadline == nil)
        // Without contention, a batch's start releases at once.
        s.callHandled(bulk, interactive: false, previous: nil, at: deadline + 1)
        s.batchBegan(now: deadline + 2, releasing: &released)
        #expect(released == [bulk])
    }

    @Test("a call that waits for a fresh budget hears of the next pass and batch; a pass is asked for only when the pass's budget is what it waits for")
    func waitingForBudget() {
        var (s, c) = Self.make(2)
        let spent = s.afterStep(c[0], needsService: false, waitsForBudget: true, passBudgetSpent: true, needsClock: false)
        #expect(spent == .requestPass)
        let batch = s.afterStep(c[1], needsService: false, waitsForBudget: true, passBudgetSpent: false, needsClock: false)
        #expect(batch == [])
        #expect(s.members == [c[0], c[1]])
        var released: [Int] = []
        s.beginPass(releasing: &released)
        #expect(released == [c[0], c[1]])
        s.beginPass(releasing: &released)
        #expect(released.isEmpty, "each hears of one pass")
    }

    @Test("the clock and the flush: each connection once, asking to arm or flush only when it is the first")
    func clockAndFlush() {
        var (s, c) = Self.make(2)
        let first = s.afterStep(c[0], needsService: false, waitsForBudget: false, passBudgetSpent: false, needsClock: true)
        #expect(first == .armClock)
        #expect(s.afterStep(c[0], needsService: false, waitsForBudget: false, passBudgetSpent: false, needsClock: true) == [])
        #expect(s.hasTimed)
        var list: [Int] = []
        s.takeTimed(into: &list)
        #expect(list == [c[0]] && !s.hasTimed)
        let firstDirty = s.markDirty(c[1])
        let again = s.markDirty(c[1])
        #expect(firstDirty && !again)
        #expect(s.hasWork && s.hasDirty)
        s.takeDirty(into: &list)
        #expect(list == [c[1]] && !s.hasWork)
        let afterFlush = s.markDirty(c[1])
        #expect(afterFlush)
    }

    @Test("a removed connection leaves every list, and its slot is given out again clean")
    func removal() {
        var (s, c) = Self.make(3)
        s.callHandled(c[1], interactive: true, previous: nil, at: Self.t0)
        _ = Self.ready(&s, c[1])
        _ = s.markDirty(c[1])
        _ = s.afterStep(c[1], needsService: false, waitsForBudget: true, passBudgetSpent: false, needsClock: true)
        _ = Self.ready(&s, c[2])
        s.remove(c[1])
        var list: [Int] = []
        let competing = s.takeTurns(into: &list, now: Self.t0)
        #expect(competing == -1, "the competing client is gone, its time remembered")
        #expect(list == [c[2]])
        s.takeDirty(into: &list)
        #expect(list.isEmpty)
        s.takeTimed(into: &list)
        #expect(list.isEmpty)
        #expect(s.members.isEmpty)
        let again = s.admit()
        #expect(again == c[1])
        #expect(s.marks[again].isEmpty)
    }

    @Test("an interactive client's memory follows its own gaps between calls")
    func memoryFollowsGaps() {
        var (s, c) = Self.make(1)
        s.callHandled(c[0], interactive: true, previous: nil, at: Self.t0)
        #expect(s.interactiveMemory == S.shortestInteractiveMemory)
        s.callHandled(c[0], interactive: true, previous: Self.t0, at: Self.t0 + 100_000)
        #expect(s.interactiveMemory == 400_000)
        #expect(s.interactiveRecently(now: Self.t0 + 100_000 + 399_999))
        #expect(!s.interactiveRecently(now: Self.t0 + 100_000 + 400_000))
    }
}
