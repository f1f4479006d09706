import Testing
@testable import SceneDaemon

/// The connection state machine, in-process: every (state, event) pair, then the stories that
/// wedged the first release (a hang-up while replies wait for a commit, before, during and
/// after it).
@Suite("ConnectionMachine")
struct ConnectionMachineTests {
    typealias M = ConnectionMachine
    static let t0: UInt64 = 1_000_000

    /// Named states, each built from a fresh machine by real events.
    static let states: [(String, @Sendable () -> M)] = [
        ("serving, idle", { M(now: t0) }),
        ("serving, a call buffered", { var m = M(now: t0); _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: t0)); return m }),
        ("serving, part of a message", { var m = M(now: t0); _ = m.on(.received(partialBytes: 100, hasCall: false, more: false, now: t0)); return m }),
        ("serving, replies held", { var m = M(now: t0); _ = m.on(.replyHeld(bytes: 50)); _ = m.on(.replyHeld(bytes: 50)); return m }),
        ("serving, output unsent", { var m = M(now: t0); _ = m.on(.replyHeld(bytes: 50)); _ = m.on(.repliesReleased(count: 1, heldBytes: 50, outputBytes: 50)); return m }),
        ("serving, backed up", { var m = M(now: t0); _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: t0))
            _ = m.on(.replyHeld(bytes: M.Budget().owedBytesHighWater)); return m }),
        ("serving, pass budget spent", { var m = M(now: t0); _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: t0))
            for _ in 0..<M.Budget().callsPerPass { _ = m.on(.callHandled(opensStream: false)) }; return m }),
        ("serving, streaming", { var m = M(now: t0); _ = m.on(.callHandled(opensStream: true)); _ = m.on(.streamHasMore(true)); return m }),
        ("serving, streaming, behind", { var m = M(now: t0); _ = m.on(.callHandled(opensStream: true)); _ = m.on(.outputAdded(bytes: 64))
            _ = m.on(.streamBehind(bytes: 4096)); _ = m.on(.streamHasMore(true)); return m }),
        ("serving, streaming, behind past the limit", { var m = M(now: t0); _ = m.on(.callHandled(opensStream: true))
            _ = m.on(.streamBehind(bytes: M.Budget().maxOutputBytes + 1)); return m }),
        ("input closed, replies held", { var m = M(now: t0); _ = m.on(.replyHeld(bytes: 10)); _ = m.on(.endOfInput); return m }),
        ("input closed, streaming", { var m = M(now: t0); _ = m.on(.callHandled(opensStream: true)); _ = m.on(.endOfInput); return m }),
        ("input closed, streaming, behind", { var m = M(now: t0); _ = m.on(.callHandled(opensStream: true)); _ = m.on(.endOfInput)
            _ = m.on(.streamBehind(bytes: 4096)); return m }),
        ("peer gone, a call buffered", { var m = M(now: t0); _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: t0)); _ = m.on(.hangUp); return m }),
        ("peer gone, maybe more input", { var m = M(now: t0); _ = m.on(.replyHeld(bytes: 10)); _ = m.on(.hangUp); return m }),
        ("ending after a violation, reply held", { var m = M(now: t0); _ = m.on(.protocolViolation(now: t0)); _ = m.on(.replyHeld(bytes: 80)); return m }),
        ("ending after a limit, output unsent", { var m = M(now: t0); _ = m.on(.limitExceeded("IdleTimeoutSec", cutOutput: false, now: t0)); _ = m.on(.outputAdded(bytes: 90)); return m }),
        ("refused, error unsent", { var m = M(now: t0, refusedFor: "MaxConnections"); _ = m.on(.outputAdded(bytes: 90)); return m }),
        ("refused, answered", { var m = M(now: t0, refusedFor: "MaxConnections"); _ = m.on(.outputAdded(bytes: 90))
            _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: t0)); return m }),
        ("closed", { var m = M(now: t0); _ = m.on(.socketError); return m }),
    ]

    static let events: [M.Event] = [
        .readable, .writable, .hangUp, .socketError,
        .received(partialBytes: 0, hasCall: true, more: false, now: t0 + 1),
        .received(partialBytes: 40, hasCall: false, more: true, now: t0 + 1),
        .readWouldBlock, .endOfInput,
        .callHandled(opensStream: false), .callHandled(opensStream: true),
        .inputExhausted(partialBytes: 0), .inputExhausted(partialBytes: 7),
        .replyHeld(bytes: 30),
        .repliesReleased(count: 1, heldBytes: 10, outputBytes: 10),
        .outputAdded(bytes: 20), .wrote(bytes: 10), .writeWouldBlock,
        .streamEnded, .streamHasMore(true), .streamHasMore(false),
        .streamBehind(bytes: 100), .streamBehind(bytes: 0), .streamBehind(bytes: M.Budget().maxOutputBytes),
        .protocolViolation(now: t0 + 1),
        .limitExceeded("MaxOutputPerConnection", cutOutput: true, now: t0 + 1),
        .limitExceeded("IdleTimeoutSec", cutOutput: false, now: t0 + 1),
        .passBegan, .batchBegan,
        .turnBegan(contended: false, reserved: false), .turnBegan(contended: true, reserved: false),
        .turnBegan(contended: true, reserved: true),
        .tick(now: t0 + 1), .tick(now: t0 + 60_000_000),
    ]

    @Test("every (state, event) pair keeps the machine's invariants")
    func everyPair() {
        for (name, make) in Self.states {
            // Pairs the server cannot produce trap (see `impossiblePairs`).
            for event in Self.events where make().permits(event) {
                var m = make()
                let before = m.phase
                let outputBefore = m.outputBytes
                let action = m.on(event)
                let what = "\(name) + \(event) → \(action), \(m.phase)"
                // Closing is the machine's decision, and only it closes.
                #expect((action == .close) == (m.phase == .closed && before != .closed), "\(what)")
                if before == .closed { #expect(action == .none && m.phase == .closed, "\(what)") }
                // A gone peer is out of epoll (EPOLLHUP would report for ever) and owed nothing.
                if m.phase == .peerGone || m.phase == .closed {
                    #expect(m.interest == .none, "\(what)")
                    #expect(m.outputBytes == 0 && m.heldReplies == 0, "\(what)")
                    #expect(action != .write, "\(what)")
                }
                // Ending takes no calls; only a refused client is read (for its first call).
                if case .ending(let reason) = m.phase {
                    #expect(!m.mayHandleCalls, "\(what)")
                    if case .refused = reason {} else { #expect(!m.mayRead, "\(what)") }
                }
                // Never finished while serving; never reading while a complete call waits.
                if m.phase == .serving { #expect(!m.isFinished, "\(what)") }
                if m.hasCall { #expect(!m.mayRead, "\(what)") }
                // A readable event is only noted: reading happens in the connection's turn.
                if event == .readable { #expect(action == .none, "\(what)") }
                // Counters never go negative.
                #expect(m.heldReplies >= 0 && m.heldBytes >= 0 && m.outputBytes >= 0 && m.partialBytes >= 0, "\(what)")
                // Only an open stream that can still be written to is behind; one that is takes
                // no live output, and what it is behind by counts against the output limit.
                #expect(m.deferredBytes >= 0, "\(what)")
                if !m.streaming || !(m.phase == .serving || m.phase == .inputClosed) {
                    #expect(m.deferredBytes == 0 && !m.mayQueueLiveOutput(0), "\(what)")
                }
                if m.deferredBytes > 0 { #expect(!m.mayQueueLiveOutput(0), "\(what)") }
                #expect(m.exceedsOutputLimit == (m.outputBytes + m.deferredBytes > m.budget.maxOutputBytes), "\(what)")
                // The epoll interest asks to write exactly when the socket refused output that is
                // still unsent; output it has not refused is written by the action that queued it.
                if m.interest.registered { #expect(m.interest.write == (m.outputBytes > 0 && m.writeBlocked), "\(what)") }
                if m.outputBytes > outputBefore && !m.writeBlocked { #expect(action == .write, "\(what)") }
                // Whatever is left to do shows up as needing service or an epoll interest,
                // so nothing can be forgotten (the first release's wedge).
                if m.phase != .closed, m.hasCall, m.mayHandleCalls { #expect(m.needsService, "\(what)") }
                if m.isFinished { #expect(m.needsService, "\(what)") }
            }
        }
    }

    /// Restated from the type's doc comment: a read's result where nothing is read, a call's
    /// result where no call is taken, a write's result or new output for a gone peer.
    static func impossible(_ state: String, _ phase: M.Phase, _ event: M.Event) -> Bool {
        let refused = state.hasPrefix("refused")
        switch (phase, event) {
        case (.inputClosed, .received), (.inputClosed, .readWouldBlock), (.inputClosed, .endOfInput): return true
        case (.ending, .received), (.ending, .readWouldBlock), (.ending, .endOfInput): return !refused
        case (.ending, .inputExhausted), (.ending, .protocolViolation): return true
        case (.peerGone, .wrote), (.peerGone, .writeWouldBlock), (.peerGone, .outputAdded): return true
        default: return false
        }
    }

    @Test("the impossible (phase, event) pairs are exactly those the type documents")
    func impossiblePairs() {
        var count = 0
        for (name, make) in Self.states {
            for event in Self.events {
                let m = make()
                #expect(m.permits(event) == !Self.impossible(name, m.phase, event), "\(name) + \(event)")
                if !m.permits(event) { count += 1 }
            }
        }
        #expect(count > 0)
    }

    #if DEBUG
    @Test("an impossible pair traps in a debug build: a read's result after the input closed")
    func impossiblePairTraps() async {
        var closing = M(now: 1)
        _ = closing.on(.replyHeld(bytes: 10))
        _ = closing.on(.endOfInput)
        #expect(closing.phase == .inputClosed && !closing.permits(.received(partialBytes: 0, hasCall: true, more: false, now: 2)))
        await #expect(processExitsWith: .failure) {
            var m = ConnectionMachine(now: 1)
            _ = m.on(.replyHeld(bytes: 10))
            _ = m.on(.endOfInput)
            _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: 2))
        }
    }
    #endif

    @Test("epoll is asked for room to write only after the socket refused output, until it has room")
    func writeInterestFollowsRefusal() {
        var m = M(now: Self.t0)
        #expect(m.on(.outputAdded(bytes: 20)) == .write)
        #expect(!m.interest.write, "output not yet tried is written by the pass, not on EPOLLOUT")
        #expect(m.on(.wrote(bytes: 5)) == .none)
        #expect(m.on(.writeWouldBlock) == .none)
        #expect(m.interest.write && m.outputBytes == 15)
        // More output while refused: still waiting for room, and the write is tried once more.
        #expect(m.on(.outputAdded(bytes: 10)) == .write)
        #expect(m.interest.write)
        #expect(m.on(.writable) == .write)
        #expect(!m.interest.write, "room came: the write is tried, and asks again only if refused again")
        #expect(m.on(.wrote(bytes: 25)) == .none)
        #expect(m.outputBytes == 0 && !m.interest.write && !m.writeBlocked)
        // A refusal with nothing left to write asks for nothing.
        #expect(m.on(.writeWouldBlock) == .none)
        #expect(!m.interest.write)
    }

    @Test("the expected action for the pairs that decide a connection's fate", arguments: [
        // (state, event, action, phase after)
        ("serving, idle", M.Event.received(partialBytes: 0, hasCall: true, more: false, now: t0), M.Action.handleCalls, "serving"),
        ("serving, idle", .endOfInput, .close, "closed"),
        ("serving, idle", .hangUp, .none, "peerGone"),
        ("serving, idle", .protocolViolation(now: t0), .sendViolation, "ending"),
        ("serving, a call buffered", .hangUp, .none, "peerGone"),
        ("serving, a call buffered", .endOfInput, .handleCalls, "inputClosed"),
        ("serving, part of a message", .tick(now: t0 + 60_000_000), .sendLimitError("IdleTimeoutSec", cutOutput: false), "ending"),
        ("serving, part of a message", .tick(now: t0 + 1_000_000), .none, "serving"),
        ("serving, part of a message", .endOfInput, .close, "closed"),
        ("serving, replies held", .endOfInput, .none, "inputClosed"),
        ("serving, replies held", .repliesReleased(count: 2, heldBytes: 100, outputBytes: 100), .write, "serving"),
        ("serving, replies held", .limitExceeded("MaxBufferedOutput", cutOutput: true, now: t0), .sendLimitError("MaxBufferedOutput", cutOutput: true), "ending"),
        ("serving, output unsent", .writable, .write, "serving"),
        ("serving, output unsent", .hangUp, .none, "peerGone"),
        ("serving, backed up", .repliesReleased(count: 1, heldBytes: M.Budget().owedBytesHighWater, outputBytes: 10), .write, "serving"),
        ("serving, streaming", .streamEnded, .none, "serving"),
        ("serving, streaming", .streamBehind(bytes: 100), .none, "serving"),
        ("serving, streaming, behind", .streamBehind(bytes: 0), .none, "serving"),
        ("serving, streaming, behind", .writable, .write, "serving"),
        ("serving, streaming, behind", .hangUp, .none, "peerGone"),
        ("serving, streaming, behind past the limit", .limitExceeded("MaxOutputPerConnection", cutOutput: true, now: t0),
         .sendLimitError("MaxOutputPerConnection", cutOutput: true), "ending"),
        ("input closed, streaming, behind", .streamEnded, .close, "closed"),
        ("input closed, replies held", .repliesReleased(count: 1, heldBytes: 10, outputBytes: 10), .write, "inputClosed"),
        ("input closed, replies held", .hangUp, .none, "peerGone"),
        ("input closed, streaming", .streamEnded, .close, "closed"),
        ("peer gone, a call buffered", .inputExhausted(partialBytes: 0), .none, "peerGone"),
        ("peer gone, maybe more input", .endOfInput, .close, "closed"),
        ("peer gone, maybe more input", .readWouldBlock, .close, "closed"),
        ("peer gone, maybe more input", .repliesReleased(count: 1, heldBytes: 10, outputBytes: 10), .none, "peerGone"),
        ("ending after a violation, reply held", .repliesReleased(count: 1, heldBytes: 80, outputBytes: 80), .write, "ending"),
        ("ending after a violation, reply held", .tick(now: t0 + 3_000_000), .close, "closed"),
        ("ending after a limit, output unsent", .wrote(bytes: 90), .close, "closed"),
        ("ending after a limit, output unsent", .hangUp, .close, "closed"),
        ("refused, error unsent", .received(partialBytes: 0, hasCall: true, more: false, now: t0), .none, "ending"),
        ("refused, error unsent", .wrote(bytes: 90), .none, "ending"),
        ("refused, answered", .wrote(bytes: 90), .close, "closed"),
        ("refused, error unsent", .tick(now: t0 + 3_000_000), .close, "closed"),
    ])
    func decisive(state: String, event: M.Event, action: M.Action, phase: String) throws {
        var m = try #require(Self.states.first { $0.0 == state }).1()
        #expect(m.on(event) == action)
        #expect(Self.name(m.phase) == phase, "\(state) + \(event): \(m.phase)")
    }

    static func name(_ phase: M.Phase) -> String {
        switch phase {
        case .serving: "serving"
        case .inputClosed: "inputClosed"
        case .peerGone: "peerGone"
        case .ending: "ending"
        case .closed: "closed"
        }
    }

    // MARK: - Stories

    @Test("hang-up before the commit: the call still runs, its reply is dropped, the connection closes")
    func hangUpBeforeCommit() {
        var m = M(now: Self.t0)
        #expect(m.on(.received(partialBytes: 0, hasCall: true, more: false, now: Self.t0)) == .handleCalls)
        _ = m.on(.replyHeld(bytes: 40))          // the call was handled, its reply waits
        _ = m.on(.callHandled(opensStream: false))
        _ = m.on(.inputExhausted(partialBytes: 0))
        #expect(m.on(.hangUp) == .none)
        #expect(m.phase == .peerGone && m.heldReplies == 0 && m.interest == .none)
        // Its turn: the rest of the input is read (a oneway call sent before the close counts).
        #expect(m.needsService && m.on(.turnBegan(contended: false, reserved: false)) == .read)
        #expect(m.on(.endOfInput) == .close)
    }

    @Test("hang-up while the commit is in flight: the release that follows writes nothing")
    func hangUpDuringCommit() {
        var m = M(now: Self.t0)
        _ = m.on(.replyHeld(bytes: 40))
        _ = m.on(.inputExhausted(partialBytes: 0))
        #expect(m.on(.hangUp) == .none)
        #expect(m.on(.repliesReleased(count: 1, heldBytes: 40, outputBytes: 40)) == .none)
        #expect(m.outputBytes == 0 && m.interest == .none)
        #expect(m.on(.turnBegan(contended: false, reserved: false)) == .read)
        #expect(m.on(.readWouldBlock) == .close)
    }

    @Test("hang-up after the commit, before the write: the write is not attempted; EPIPE on a write is a hang-up")
    func hangUpAfterCommit() {
        var m = M(now: Self.t0)
        _ = m.on(.replyHeld(bytes: 40))
        #expect(m.on(.repliesReleased(count: 1, heldBytes: 40, outputBytes: 40)) == .write)
        #expect(m.on(.hangUp) == .none)
        #expect(m.on(.writable) == .none)
        #expect(m.on(.turnBegan(contended: false, reserved: false)) == .read)
        #expect(m.on(.endOfInput) == .close)

        var n = M(now: Self.t0)
        _ = n.on(.replyHeld(bytes: 40))
        _ = n.on(.repliesReleased(count: 1, heldBytes: 40, outputBytes: 40))
        _ = n.on(.wrote(bytes: 10))
        #expect(n.on(.hangUp) == .none)   // what a failed send reports
        #expect(n.phase == .peerGone)
    }

    @Test("half-close: the replies still go out, then the connection closes")
    func halfClose() {
        var m = M(now: Self.t0)
        _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: Self.t0))
        _ = m.on(.replyHeld(bytes: 40))
        _ = m.on(.callHandled(opensStream: false))
        _ = m.on(.inputExhausted(partialBytes: 0))
        #expect(m.on(.endOfInput) == .none)
        #expect(m.phase == .inputClosed && !m.interest.read)
        #expect(m.on(.repliesReleased(count: 1, heldBytes: 40, outputBytes: 40)) == .write)
        #expect(m.on(.wrote(bytes: 30)) == .none)
        #expect(m.on(.wrote(bytes: 10)) == .close)
    }

    @Test("budgets: big passes and batches alone; while an interactive client competes, small passes and a per-batch cap; fresh after passBegan and batchBegan")
    func budgets() {
        let budget = M.Budget()
        var m = M(now: Self.t0)
        _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: Self.t0))
        for _ in 0..<budget.callsPerPassAlone { _ = m.on(.callHandled(opensStream: false)) }
        #expect(!m.mayHandleCalls && !m.needsService, "the pass's budget, alone")
        _ = m.on(.passBegan)
        #expect(m.mayHandleCalls && m.needsService, "a new pass, the same batch")
        var alone = budget.callsPerPassAlone
        while alone < budget.callsPerBatchAlone {
            if alone % budget.callsPerPassAlone == 0 { _ = m.on(.passBegan) }
            #expect(m.mayHandleCalls)
            _ = m.on(.callHandled(opensStream: false))
            alone += 1
        }
        _ = m.on(.passBegan)
        #expect(!m.mayHandleCalls && !m.needsService, "the batch's cap, alone: a flooder cannot grow a batch without end")
        _ = m.on(.turnBegan(contended: true, reserved: false))
        _ = m.on(.batchBegan)
        for _ in 0..<budget.callsPerPass { _ = m.on(.callHandled(opensStream: false)) }
        #expect(!m.mayHandleCalls, "the small pass budget while contended")
        var handled = budget.callsPerPass
        while handled < budget.callsPerBatch {
            _ = m.on(.passBegan)
            #expect(m.mayHandleCalls)
            _ = m.on(.callHandled(opensStream: false))
            handled += 1
        }
        _ = m.on(.passBegan)
        #expect(!m.mayHandleCalls, "over the batch budget while contended")
        _ = m.on(.batchBegan)
        #expect(m.mayHandleCalls)
    }

    /// The server's part (VarlinkServer.afterStep) is to enrol such a connection for the next
    /// pass and batch: a call that waits only for budget has no readiness to wake it. Missed,
    /// a client whose parked Launch settled outside its turn never ran its next calls.
    @Test("a call waiting only for a fresh budget says so: for the batch (reserved, or its cap) and for the pass")
    func waitsForBudget() {
        let budget = M.Budget()
        var m = M(now: Self.t0)
        _ = m.on(.received(partialBytes: 0, hasCall: true, more: false, now: Self.t0))
        #expect(!m.waitsForBudget && m.mayHandleCalls)
        _ = m.on(.turnBegan(contended: true, reserved: true))
        #expect(!m.mayHandleCalls && !m.needsService && m.waitsForBudget && !m.passBudgetSpent,
                "held out of a batch an interactive call reserved")
        _ = m.on(.turnBegan(contended: true, reserved: false))
        for _ in 0..<budget.callsPerPass { _ = m.on(.callHandled(opensStream: false)) }
        #expect(m.waitsForBudget && m.passBudgetSpent)
        _ = m.on(.passBegan)
        #expect(!m.passBudgetSpent)
        #expect(m.waitsForBudget == (budget.callsPerPass >= budget.callsPerBatch), "the batch's cap")
        _ = m.on(.batchBegan)
        #expect(!m.waitsForBudget && m.mayHandleCalls && m.needsService)
        // Waiting for its stream to end is not waiting for budget.
        _ = m.on(.callHandled(opensStream: true))
        #expect(!m.waitsForBudget)
    }

    @Test("backpressure: owed replies and bytes stop calls and reads; draining resumes both")
    func backpressure() {
        let budget = M.Budget()
        var m = M(now: Self.t0)
        for _ in 0..<budget.maxOwedReplies { _ = m.on(.replyHeld(bytes: 1)) }
        #expect(!m.mayHandleCalls && !m.mayRead && !m.interest.read)
        _ = m.on(.repliesReleased(count: budget.maxOwedReplies, heldBytes: budget.maxOwedReplies, outputBytes: budget.maxOwedReplies))
        #expect(!m.mayHandleCalls, "still owed until written")
        _ = m.on(.wrote(bytes: budget.maxOwedReplies))
        #expect(m.mayHandleCalls && m.mayRead && m.interest.read)
    }

    @Test("a stream waits for events without asking for service; with more to produce it does, below half the high-water mark")
    func streams() {
        let budget = M.Budget()
        var m = M(now: Self.t0)
        _ = m.on(.callHandled(opensStream: true))
        #expect(m.streaming && !m.needsService && !m.mayRead, "a live monitor waits")
        _ = m.on(.streamHasMore(true))
        #expect(m.needsService)
        _ = m.on(.outputAdded(bytes: budget.owedBytesHighWater / 2))
        #expect(!m.mayProduce, "the client must read first")
        _ = m.on(.wrote(bytes: budget.owedBytesHighWater / 2))
        #expect(m.mayProduce)
        _ = m.on(.limitExceeded("MaxOutputPerConnection", cutOutput: true, now: Self.t0))
        #expect(!m.streaming && !m.mayProduce)
    }

    @Test("a stream falls behind at the high-water mark: no live output while behind, what it is behind by counts against the output limit, caught up it takes live output again")
    func fallingBehind() {
        var budget = M.Budget()
        budget.owedBytesHighWater = 1000
        budget.maxOutputBytes = 4000
        var m = M(budget: budget, now: Self.t0)
        #expect(!m.mayQueueLiveOutput(0), "no stream is open")
        _ = m.on(.callHandled(opensStream: true))
        #expect(m.mayQueueLiveOutput(1000) && !m.mayQueueLiveOutput(1001), "up to the mark")
        _ = m.on(.outputAdded(bytes: 900))
        #expect(m.mayQueueLiveOutput(100) && !m.mayQueueLiveOutput(101))
        // The server stops queueing: the stream is behind by what it did not queue.
        _ = m.on(.streamBehind(bytes: 2500))
        _ = m.on(.streamHasMore(true))
        #expect(m.deferredBytes == 2500 && !m.exceedsOutputLimit)
        #expect(!m.mayProduce, "it produces from the log only once the client has read")
        _ = m.on(.wrote(bytes: 900))
        #expect(!m.mayQueueLiveOutput(0), "behind, nothing is queued live even with room: it catches up in order")
        #expect(m.mayProduce && m.needsService)
        // The backlog is produced: what it sends comes off what it is behind by.
        _ = m.on(.streamBehind(bytes: 1500))
        _ = m.on(.outputAdded(bytes: 1000))
        #expect(m.owedBytes == 1000 && m.deferredBytes == 1500 && !m.mayProduce)
        // Not read, and more published meanwhile: over the limit, queued and deferred together.
        _ = m.on(.streamBehind(bytes: 3001))
        #expect(m.exceedsOutputLimit)
        _ = m.on(.streamBehind(bytes: 3000))
        #expect(!m.exceedsOutputLimit, "at the limit is not over it")
        // It reads everything and catches up: live again.
        _ = m.on(.wrote(bytes: 1000))
        _ = m.on(.streamBehind(bytes: 0))
        #expect(m.mayQueueLiveOutput(1000))
        // A cut-off, a hang-up or the stream's end forgets what it was behind by.
        var cut = m
        _ = cut.on(.streamBehind(bytes: 5000))
        #expect(cut.on(.limitExceeded("MaxOutputPerConnection", cutOutput: true, now: Self.t0)) == .sendLimitError("MaxOutputPerConnection", cutOutput: true))
        #expect(cut.deferredBytes == 0 && !cut.exceedsOutputLimit && !cut.mayQueueLiveOutput(0))
        var gone = m
        _ = gone.on(.streamBehind(bytes: 5000))
        _ = gone.on(.hangUp)
        #expect(gone.deferredBytes == 0)
        var ended = m
        _ = ended.on(.streamBehind(bytes: 5000))
        _ = ended.on(.streamEnded)
        #expect(ended.deferredBytes == 0)
        _ = ended.on(.streamBehind(bytes: 5000))
        #expect(ended.deferredBytes == 0, "without a stream nothing is owed")
    }

    @Test("idle timeout only for a message left unfinished, not for an idle connection or a monitor")
    func idleTimeout() {
        let later = Self.t0 + M.Budget().idleMicroseconds + 1
        var idle = M(now: Self.t0)
        #expect(!idle.needsClock)
        #expect(idle.on(.tick(now: later)) == .none)
        var monitor = M(now: Self.t0)
        _ = monitor.on(.callHandled(opensStream: true))
        #expect(monitor.on(.tick(now: later)) == .none)
        var stuck = M(now: Self.t0)
        _ = stuck.on(.received(partialBytes: 10, hasCall: false, more: false, now: Self.t0))
        #expect(stuck.needsClock)
        #expect(stuck.on(.tick(now: later)) == .sendLimitError("IdleTimeoutSec", cutOutput: false))
        // A message that keeps arriving, however slowly, is not stuck.
        var slow = M(now: Self.t0)
        _ = slow.on(.received(partialBytes: 10, hasCall: false, more: false, now: Self.t0))
        _ = slow.on(.received(partialBytes: 20, hasCall: false, more: false, now: later - 1))
        #expect(slow.on(.tick(now: later)) == .none)
    }
}
