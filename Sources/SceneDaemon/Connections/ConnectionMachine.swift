/// The life of one client connection, without I/O, in the manner of swift-nio's channel life
/// cycle and postgres-nio's connection state machine: the server tells it what happened (an
/// `Event`), carries out the `Action` it answers, and derives everything else — the epoll
/// interest, whether the connection wants a turn, whether it is finished — from its state.
/// Every flag about a connection that decides anything lives here: in its phase's payload when
/// only that phase has it, else in the input or output side the phases share.
///
/// Why it exists: independent flags let one combination — a peer that hung up while its reply
/// waited for a commit — be ready on every loop pass and never finish, which wedged the daemon
/// for everyone. One owner of every flag, with each transition saying what it keeps, avoids
/// such combinations.
///
/// Impossible (phase, event) pairs — the server never produces them, so one means its
/// bookkeeping is wrong. They trap in debug builds and are ignored (state unchanged, `.none`)
/// in release builds:
/// - a read's result (`received`, `readWouldBlock`, `endOfInput`) in `inputClosed`, or in
///   `ending` other than a refusal: only `serving`, `peerGone` and a refused client are read;
/// - a call's result (`inputExhausted`, `protocolViolation`) in `ending`: no call is taken;
/// - a write's result (`wrote`, `writeWouldBlock`) or new output (`outputAdded`) in
///   `peerGone`: nothing is written to a gone peer.
/// `closed` takes every event and does nothing: a handler may end its own connection while
/// the server is still reporting on the call that it handled.
struct ConnectionMachine: Equatable, Sendable {
    /// The phase's name, without its data.
    enum Phase: Equatable, Sendable {
        case serving, inputClosed, peerGone, ending(EndReason), closed
    }

    enum State: Equatable, Sendable {
        /// Calls are read and handled.
        case serving(Stream)
        /// The peer shut down its sending side (EOF) but may still read: the calls received
        /// are answered, then the connection closes.
        case inputClosed(Stream)
        /// The peer closed or reset the connection: nothing can be written any more (nothing
        /// is owed). Calls already received are still carried out (a oneway call followed by
        /// close must take effect); their replies are dropped.
        case peerGone
        /// We end the connection: no more calls are taken; what is owed is written (an error
        /// saying why comes last), then it closes, at the latest at `lingerUntil`.
        case ending(Ending)
        case closed
    }

    enum EndReason: Equatable, Sendable {
        case protocolViolation
        /// A limit of the [Limits] section, by its setting's name.
        case limit(String)
        /// Over a connection limit at accept: the error is written at once, and the
        /// connection lingers until the client's first call (or EOF) so that it reads the
        /// error instead of a broken pipe.
        case refused(String)
    }

    /// An open `more` call: until it ends, later calls wait in the input. Only a connection
    /// that can still be written to (serving, inputClosed) has one.
    struct Stream: Equatable, Sendable {
        var open = false
        /// The stream has more to produce now (not merely waiting for events).
        var hasMore = false
        /// Stream output owed but not queued: the committed events a monitor fell behind by
        /// while its output was at the high-water mark. Never held in memory (the stream
        /// produces them from the event log as the client reads), but counted against
        /// `maxOutputBytes` as if queued, so a client that does not read is still cut off.
        var deferredBytes = 0
    }

    struct Ending: Equatable, Sendable {
        var reason: EndReason
        var lingerUntil: UInt64
        /// A refused client sent its first call or EOF: once the error is written, close.
        var refusalAnswered = false
    }

    /// The input side and the call budgets. Calls are taken while serving, inputClosed or
    /// peerGone; ending reads only a refused client's first call, and takes none.
    struct Input: Equatable, Sendable {
        /// A complete message waits in the input.
        var hasCall = false
        /// Bytes of an unfinished message in the input.
        var partialBytes = 0
        /// epoll said readable and we have not yet seen EAGAIN or a short read.
        var maybeReadable = false
        /// When the last byte arrived (for the idle timeout of an unfinished message).
        var lastInputAt: UInt64
        var callsThisPass = 0
        var callsThisBatch = 0
        /// An interactive client competes with this one (its last turn said so): the small
        /// budgets apply. Among bulk clients alone, big passes and batches give the throughput
        /// group commit exists for.
        var contended = false
        /// An interactive client's call is in the batch being gathered: while contended, this
        /// connection adds nothing more to it, so that its commit is as short as it can be.
        var batchReserved = false
        /// Its last call looked like an interactive client's (few in flight, little queued).
        var interactive = false
        /// The handler of the call being made said it is an answer with a deadline of seconds
        /// (an app's Acknowledge): it needs no millisecond reply, so it is not interactive.
        var callIsPatient = false
        /// The most calls it had in flight at its recent calls (`recentInFlight`).
        var recentInFlight = 0
        /// When it last made an interactive call (µs, monotonic).
        var lastInteractiveAt: UInt64?
    }

    /// What is owed to the client: replies held for their batch's commit, and framed output.
    /// Nothing in peerGone and closed: nobody can read it.
    struct Output: Equatable, Sendable {
        var heldReplies = 0
        var heldBytes = 0
        /// Framed bytes not yet written.
        var bytes = 0
        /// Replies in the output (counted as owed until written; approximated as released count).
        var replies = 0
        /// The socket refused output (EAGAIN): only then is epoll asked for room to write.
        /// Output it has not refused is written in the pass that made it (`.write`), so asking
        /// epoll each time would cost two epoll_ctl calls per reply, on and off again.
        var writeBlocked = false
    }

    /// The epoll interest the state calls for. `registered == false`: take the fd out of epoll
    /// altogether (a hung-up socket reports EPOLLHUP whatever the interest, for ever).
    struct Interest: Equatable, Sendable {
        var read: Bool
        var write: Bool
        var registered: Bool
        static let none = Interest(read: false, write: false, registered: false)
    }

    struct Budget: Equatable, Sendable {
        /// Calls one connection may have handled in one loop pass while it competes with an
        /// interactive client, and otherwise. Small while contended: on two cores the
        /// interactive client's round trip also waits for the bulk client's own process.
        var callsPerPass = 2
        var callsPerPassAlone = 1024
        /// Calls one connection may add to one batch while it competes with an interactive
        /// client, so that a flooder cannot make that client's commit wait behind its own.
        var callsPerBatch = 2
        /// And otherwise: without a cap a flooder alone grows the batch for as long as the
        /// commit before it takes, which then takes longer still, and a client arriving beside
        /// it waits that long for its first reply. 2,048 calls are still a large group commit.
        var callsPerBatchAlone = 2048
        /// Replies (held + unsent) at which no more calls are taken: the client must read.
        var maxOwedReplies = 4096
        /// Owed bytes (held + unsent) at which no more calls are taken, and at which streams
        /// stop producing; below half of it both go on. A monitor's live events stop being
        /// queued here too: it falls behind and reads them from the event log.
        var owedBytesHighWater = 1 << 20
        /// Unread output, queued or deferred, at which the client is cut off as a slow reader
        /// (MaxOutputPerConnection).
        var maxOutputBytes = 16 << 20
        /// How long an ending connection may take to read what it is owed.
        var lingerMicroseconds: UInt64 = 2_000_000
        /// A connection holding part of a message that sends nothing for this long is cut off.
        var idleMicroseconds: UInt64 = 30_000_000
    }

    /// Calls in flight, and bytes queued behind them, up to which a client is interactive.
    static let interactiveWindow = 16
    static let interactiveBacklog = 4 << 10

    let budget: Budget
    /// Accepted only to be told it is over a connection limit (it never serves).
    let refused: Bool
    /// The phase, with what only it has. The input and output sides are shared by several
    /// phases, so they are kept beside it (in place: a step copies no phase payload).
    private(set) var state: State
    private(set) var input: Input
    private(set) var output = Output()

    init(budget: Budget = Budget(), now: UInt64, refusedFor limit: String? = nil) {
        self.budget = budget
        refused = limit != nil
        input = Input(lastInputAt: now)
        if let limit {
            state = .ending(Ending(reason: .refused(limit), lingerUntil: now &+ budget.lingerMicroseconds))
        } else {
            state = .serving(Stream())
        }
    }

    // MARK: - Events

    mutating func on(_ event: Event) -> Action {
        if case .closed = state { return .none }
        guard permits(event) else { return impossible(event) }
        switch event {
        case .readable: input.maybeReadable = true  // reading happens in the connection's turn
        case .writable: return writable()
        case .hangUp: return hangUp()
        case .socketError: return close()
        case .received(let partial, let call, let more, let now): return received(partial, call, more, now)
        case .readWouldBlock: return readWouldBlock()
        case .endOfInput: return endOfInput()
        case .callHandled(let opensStream, let oneway, let queued, let now):
            callHandled(opensStream: opensStream, oneway: oneway, queuedBytes: queued, now: now)
        case .inputExhausted(let partial): return inputExhausted(partial)
        case .replyHeld(let bytes): replyHeld(bytes: bytes)
        case .repliesReleased(let count, let held, let output): return repliesReleased(count, held, output)
        case .outputAdded(let bytes): return outputAdded(bytes)
        case .wrote(let bytes): return wrote(bytes)
        case .writeWouldBlock: output.writeBlocked = output.bytes > 0
        case .streamEnded: return streamEnded()
        case .streamHasMore(let more): streamHasMore(more)
        case .streamBehind(let bytes): streamBehind(bytes: bytes)
        case .protocolViolation(let now): return protocolViolation(now)
        case .limitExceeded(let limit, let cut, let now): return limitExceeded(limit, cutOutput: cut, now: now)
        case .turnBegan(let contended, let reserved): return turnBegan(contended: contended, reserved: reserved)
        case .passBegan: passBegan()
        case .batchBegan: batchBegan()
        case .tick(let now): return tick(now)
        }
        return .none
    }

    /// Whether the server can produce `event` in this phase (see the type's doc comment).
    func permits(_ event: Event) -> Bool {
        switch event {
        case .received, .readWouldBlock, .endOfInput:
            switch state {
            case .inputClosed: return false
            case .ending: return refused
            case .serving, .peerGone, .closed: return true
            }
        case .inputExhausted, .protocolViolation:
            if case .ending = state { return false }
            return true
        case .wrote, .writeWouldBlock, .outputAdded:
            if case .peerGone = state { return false }
            return true
        default:
            return true
        }
    }

    @inline(never)
    private func impossible(_ event: Event) -> Action {
        assertionFailure("ConnectionMachine: \(event) cannot happen in \(phase)")
        return .none
    }

    private mutating func writable() -> Action {
        output.writeBlocked = false
        return output.bytes > 0 ? .write : .none
    }

    private mutating func hangUp() -> Action {
        switch state {
        case .serving, .inputClosed:
            // Owed output can no longer reach anyone; calls already received still run.
            state = .peerGone
            output = Output()
            input.partialBytes = 0
            input.maybeReadable = true
            return .none
        case .peerGone:
            return isFinished ? close() : .none
        case .ending, .closed:
            return close()
        }
    }

    private mutating func received(_ partial: Int, _ call: Bool, _ more: Bool, _ now: UInt64) -> Action {
        input.partialBytes = partial
        input.maybeReadable = more
        input.lastInputAt = now
        guard case .ending(var e) = state else {
            input.hasCall = call
            return callsAction()
        }
        // A refused client: its first call is the one the error answers; the rest is not read.
        input.hasCall = false
        if call {
            e.refusalAnswered = true
            state = .ending(e)
        }
        return isFinished ? close() : .none
    }

    private mutating func readWouldBlock() -> Action {
        input.maybeReadable = false
        return isFinished ? close() : .none
    }

    private mutating func endOfInput() -> Action {
        input.maybeReadable = false
        switch state {
        case .serving(let stream):
            // A half-finished message can never be completed now.
            state = .inputClosed(stream)
            input.partialBytes = 0
        case .ending(var e):
            e.refusalAnswered = true
            state = .ending(e)
        case .inputClosed, .peerGone, .closed:
            break
        }
        if isFinished { return close() }
        return callsAction()
    }

    /// A call was handled. Interactive: a client that waits for its replies — a few calls in
    /// flight at its recent calls, not only at this one, little queued behind them. A flooder
    /// or a deep pipeliner always has much more. Returns that verdict, and when its previous
    /// interactive call was (how long it competes follows its gaps between calls).
    @discardableResult
    mutating func callHandled(opensStream: Bool, oneway: Bool, queuedBytes: Int, now: UInt64)
        -> (interactive: Bool, previous: UInt64?) {
        switch state {
        case .serving(var stream):
            if opensStream {
                stream.open = true
                state = .serving(stream)
            }
        case .inputClosed(var stream):
            if opensStream {
                stream.open = true
                state = .inputClosed(stream)
            }
        case .peerGone:
            break
        case .ending, .closed:
            // Its handler ended it: it takes no more calls, so it competes with nobody.
            input.interactive = false
            return (false, nil)
        }
        let previous = input.lastInteractiveAt
        input.callHandled(owed: output.heldReplies + output.replies, oneway: oneway, queuedBytes: queuedBytes, now: now)
        return (input.interactive, previous)
    }

    /// The call about to be handled starts out impatient; its handler may say otherwise.
    mutating func callBegins() { input.callIsPatient = false }

    /// The call being handled is an answer with a deadline of seconds (an app's Acknowledge).
    mutating func markCallPatient() { input.callIsPatient = true }

    private mutating func inputExhausted(_ partial: Int) -> Action {
        input.hasCall = false
        if case .serving = state { input.partialBytes = partial } else { input.partialBytes = 0 }
        return isFinished ? close() : .none
    }

    /// A reply was held until its batch commits (a gone peer's is not: nobody would read it).
    mutating func replyHeld(bytes: Int) {
        switch state {
        case .serving, .inputClosed, .ending:
            output.heldReplies += 1
            output.heldBytes += bytes
        case .peerGone, .closed:
            break
        }
    }

    private mutating func repliesReleased(_ count: Int, _ held: Int, _ bytes: Int) -> Action {
        if case .peerGone = state { return isFinished ? close() : .none }
        // Clamped: the counts come from the server's bookkeeping, never trusted to match.
        output.heldReplies = max(0, output.heldReplies - count)
        output.heldBytes = max(0, output.heldBytes - held)
        output.bytes += bytes
        output.replies += count
        if output.bytes > 0 { return .write }
        return isFinished ? close() : .none
    }

    private mutating func outputAdded(_ bytes: Int) -> Action {
        output.bytes += bytes
        return bytes > 0 ? .write : .none
    }

    private mutating func wrote(_ bytes: Int) -> Action {
        output.writeBlocked = false
        output.bytes = max(0, output.bytes - bytes)
        if output.bytes == 0 { output.replies = 0 }
        return isFinished ? close() : .none
    }

    /// Output the server dropped for a slow reader (whole unsent messages).
    mutating func outputDropped(bytes: Int) {
        output.bytes = max(0, output.bytes - bytes)
    }

    private mutating func streamEnded() -> Action {
        switch state {
        case .serving: state = .serving(Stream())
        case .inputClosed: state = .inputClosed(Stream())
        case .peerGone, .ending, .closed: break
        }
        if isFinished { return close() }
        return callsAction()
    }

    /// Whether the open stream has more to produce right now.
    mutating func streamHasMore(_ more: Bool) {
        switch state {
        case .serving(var stream):
            stream.hasMore = stream.open && more
            state = .serving(stream)
        case .inputClosed(var stream):
            stream.hasMore = stream.open && more
            state = .inputClosed(stream)
        case .peerGone, .ending, .closed:
            break
        }
    }

    /// The open stream is behind the committed events by `bytes` not queued (0: caught up).
    /// Only a stream that can still be written to is owed anything.
    mutating func streamBehind(bytes: Int) {
        switch state {
        case .serving(var stream):
            stream.deferredBytes = stream.open ? max(0, bytes) : 0
            state = .serving(stream)
        case .inputClosed(var stream):
            stream.deferredBytes = stream.open ? max(0, bytes) : 0
            state = .inputClosed(stream)
        case .peerGone, .ending, .closed:
            break
        }
    }

    private mutating func protocolViolation(_ now: UInt64) -> Action {
        switch state {
        case .serving, .inputClosed:
            beginEnding(.protocolViolation, now: now)
            return .sendViolation
        case .peerGone:
            // Nobody to tell: drop the rest of its input.
            input.hasCall = false
            input.maybeReadable = false
            return isFinished ? close() : .none
        case .ending, .closed:
            return .none
        }
    }

    private mutating func limitExceeded(_ limit: String, cutOutput: Bool, now: UInt64) -> Action {
        switch state {
        case .serving, .inputClosed:
            if cutOutput {
                output.heldReplies = 0
                output.heldBytes = 0
            }
            beginEnding(.limit(limit), now: now)
            return .sendLimitError(limit, cutOutput: cutOutput)
        case .peerGone, .ending, .closed:
            return .none
        }
    }

    /// Its turn in a pass, with the contention the scheduler found: what to do first.
    private mutating func turnBegan(contended: Bool, reserved: Bool) -> Action {
        input.contended = contended
        input.batchReserved = reserved
        if isFinished { return close() }
        if input.hasCall && mayHandleCalls { return .handleCalls }
        if mayRead && (input.maybeReadable || isPeerGone) { return .read }
        return .none
    }

    /// A new loop pass began: the per-pass budget is fresh.
    mutating func passBegan() { input.callsThisPass = 0 }

    /// A new batch began gathering: the per-batch budget is fresh, and the reservation was the
    /// old batch's (the next turn decides the new one's).
    mutating func batchBegan() {
        input.callsThisBatch = 0
        input.batchReserved = false
    }

    private mutating func tick(_ now: UInt64) -> Action {
        switch state {
        case .serving:
            if input.partialBytes > 0, now >= input.lastInputAt, now - input.lastInputAt >= budget.idleMicroseconds {
                return limitExceeded("IdleTimeoutSec", cutOutput: false, now: now)
            }
            return .none
        case .ending(let e):
            return now >= e.lingerUntil ? close() : .none
        case .inputClosed, .peerGone, .closed:
            return .none
        }
    }

    /// No more calls: the stream and the input go; what is owed stays, to be written.
    private mutating func beginEnding(_ reason: EndReason, now: UInt64) {
        state = .ending(Ending(reason: reason, lingerUntil: now &+ budget.lingerMicroseconds))
        input.hasCall = false
        input.partialBytes = 0
        input.maybeReadable = false
    }

    private mutating func close() -> Action {
        state = .closed
        input.hasCall = false
        input.partialBytes = 0
        input.maybeReadable = false
        output = Output()
        return .close
    }

    /// After new input or a stream's end: take calls if one waits and the budget allows.
    @inline(__always)
    private func callsAction() -> Action { input.hasCall && mayHandleCalls ? .handleCalls : .none }
}

extension ConnectionMachine.Input {
    mutating func received(_ partial: Int, _ call: Bool, _ more: Bool, _ now: UInt64) {
        partialBytes = partial
        hasCall = call
        maybeReadable = more
        lastInputAt = now
    }

    mutating func callHandled(owed: Int, oneway: Bool, queuedBytes: Int, now: UInt64) {
        callsThisPass += 1
        callsThisBatch += 1
        recentInFlight = ConnectionMachine.recentInFlight(previous: recentInFlight, now: owed)
        interactive = !oneway && !callIsPatient && recentInFlight <= ConnectionMachine.interactiveWindow
            && queuedBytes <= ConnectionMachine.interactiveBacklog
        if interactive { lastInteractiveAt = now }
    }
}

extension ConnectionMachine {
    /// The most calls a client had in flight at its recent calls: this call's count, or the
    /// last peak less a 32nd. A client keeping a window of 64 calls in flight has few owed just
    /// after a batch of its replies went out; its peak comes back every window, so it is never
    /// taken for an interactive client, while one that really waits for its replies is
    /// interactive again after about 30 calls.
    static func recentInFlight(previous: Int, now: Int) -> Int {
        max(now, previous - (previous + 31) / 32)
    }
}

// MARK: - Events and actions

extension ConnectionMachine {
    enum Event: Sendable, Equatable {
        /// epoll: input (or EOF) to read.
        case readable
        /// epoll: room to write.
        case writable
        /// epoll EPOLLHUP (with EPOLLERR too when the peer closed with output unread: a reset,
        /// which leaves what it sent readable), or ECONNRESET/EPIPE on a read or write: the
        /// peer is gone.
        case hangUp
        /// epoll EPOLLERR without EPOLLHUP, or an unexpected errno: the socket is unusable.
        case socketError
        /// A read returned bytes; `partialBytes` of an unfinished message are now buffered and
        /// `hasCall` says whether a complete message waits; `more`: the read filled the buffer.
        case received(partialBytes: Int, hasCall: Bool, more: Bool, now: UInt64)
        /// A read returned EAGAIN.
        case readWouldBlock
        /// A read returned 0.
        case endOfInput
        /// A call was taken from the input and handled; `opensStream`: it was a `more` call;
        /// `queuedBytes`: input still buffered behind it.
        case callHandled(opensStream: Bool, oneway: Bool = true, queuedBytes: Int = 0, now: UInt64 = 0)
        /// No complete call is left in the input; `partialBytes` of an unfinished one remain.
        case inputExhausted(partialBytes: Int)
        /// A reply was held until its batch commits.
        case replyHeld(bytes: Int)
        /// Held replies became output (their batch committed, or failed and became errors).
        case repliesReleased(count: Int, heldBytes: Int, outputBytes: Int)
        /// Bytes were appended to the output directly (stream data that is already committed).
        case outputAdded(bytes: Int)
        /// A write sent `bytes`.
        case wrote(bytes: Int)
        case writeWouldBlock
        /// The open `more` call ended.
        case streamEnded
        /// Whether the open stream has more to produce right now (a listing, a monitor's
        /// backlog), as opposed to waiting for events.
        case streamHasMore(Bool)
        /// The open stream is behind the committed events by `bytes` (as encoded for this
        /// client) that were not queued because its output was at the high-water mark; 0: it
        /// has caught up. They count as unread output against `maxOutputBytes`.
        case streamBehind(bytes: Int)
        /// The peer broke the protocol: the violation's error reply is owed, then the end.
        case protocolViolation(now: UInt64)
        /// A limit was exceeded (the setting's name). `cutOutput`: the client does not read,
        /// so unsent output is dropped to free memory at once (slow reader).
        case limitExceeded(String, cutOutput: Bool, now: UInt64)
        /// Its turn in a pass: whether an interactive client competes with it, and whether such
        /// a client's call is in the batch being gathered (`PassScheduler`).
        case turnBegan(contended: Bool, reserved: Bool)
        /// A new loop pass began: the per-pass budget is fresh.
        case passBegan
        /// A new batch began gathering: the per-batch budget is fresh.
        case batchBegan
        /// The clock, for the idle and linger timeouts.
        case tick(now: UInt64)
    }

    enum Action: Equatable, Sendable {
        case none
        /// Read from the socket (up to the pass's byte budget).
        case read
        /// Take calls from the input.
        case handleCalls
        /// Write the pending output.
        case write
        /// Queue the violation's error reply (held after earlier replies, in order).
        case sendViolation
        /// Drop unsent whole messages (and held replies) if `cutOutput`, then send
        /// LimitExceeded for this limit.
        case sendLimitError(String, cutOutput: Bool)
        /// Close the socket now; whatever is still owed is dropped.
        case close
    }
}

// MARK: - What the state allows, derived from it alone

extension ConnectionMachine {
    var phase: Phase {
        switch state {
        case .serving: .serving
        case .inputClosed: .inputClosed
        case .peerGone: .peerGone
        case .ending(let e): .ending(e.reason)
        case .closed: .closed
        }
    }

    private var stream: Stream {
        switch state {
        case .serving(let stream), .inputClosed(let stream): stream
        case .peerGone, .ending, .closed: Stream()
        }
    }

    var isPeerGone: Bool { if case .peerGone = state { true } else { false } }
    var isClosed: Bool { if case .closed = state { true } else { false } }

    var streaming: Bool { stream.open }
    var streamHasMore: Bool { stream.hasMore }
    var deferredBytes: Int { stream.deferredBytes }
    var heldReplies: Int { output.heldReplies }
    var heldBytes: Int { output.heldBytes }
    var outputBytes: Int { output.bytes }
    var outputReplies: Int { output.replies }
    var writeBlocked: Bool { output.writeBlocked }
    var hasCall: Bool { input.hasCall }
    var partialBytes: Int { input.partialBytes }
    var maybeReadable: Bool { input.maybeReadable }
    var callsThisPass: Int { input.callsThisPass }
    var callsThisBatch: Int { input.callsThisBatch }
    var contended: Bool { input.contended }
    var batchReserved: Bool { input.batchReserved }
    var interactive: Bool { input.interactive }
    var callIsPatient: Bool { input.callIsPatient }
    var lastInteractiveAt: UInt64? { input.lastInteractiveAt }

    /// Replies owed (held or unsent): how many calls the client has in flight, about.
    var owedReplies: Int { output.heldReplies + output.replies }
    /// Bytes the client still has to receive.
    var owedBytes: Int { output.heldBytes + output.bytes }

    private var backedUp: Bool {
        owedReplies >= budget.maxOwedReplies || owedBytes >= budget.owedBytesHighWater
    }

    private func withinBudget(peerGone: Bool) -> Bool {
        // A gone peer's last calls are not held back: it has no replies to make anyone wait for.
        if input.contended && input.batchReserved && !peerGone { return false }
        return input.contended
            ? input.callsThisPass < budget.callsPerPass && input.callsThisBatch < budget.callsPerBatch
            : input.callsThisPass < budget.callsPerPassAlone && input.callsThisBatch < budget.callsPerBatchAlone
    }

    /// Calls may be taken from the input now.
    var mayHandleCalls: Bool {
        switch state {
        case .serving(let stream), .inputClosed(let stream):
            return !stream.open && withinBudget(peerGone: false) && !backedUp
        case .peerGone:
            // Replies of a gone peer are dropped, so it cannot back up.
            return withinBudget(peerGone: true)
        case .ending, .closed:
            return false
        }
    }

    /// Bytes may be read now: only when nothing complete waits (so the input stays bounded).
    var mayRead: Bool {
        switch state {
        case .serving: return !input.hasCall && mayHandleCalls
        // A gone peer's last bytes are read (without epoll) so that its calls take effect.
        case .peerGone: return !input.hasCall && withinBudget(peerGone: true)
        // A refused client's first call is awaited (and discarded) so that it reads the error.
        case .ending(let e): return refused && !e.refusalAnswered
        case .inputClosed, .closed: return false
        }
    }

    /// Live stream data of `bytes` more may be queued now. No: the stream falls behind (the
    /// server then reports `streamBehind`), and catches up from the event log in order once
    /// the client has read, with `mayProduce`.
    func mayQueueLiveOutput(_ bytes: Int) -> Bool {
        switch state {
        case .serving(let stream), .inputClosed(let stream):
            return stream.open && stream.deferredBytes == 0 && owedBytes + bytes <= budget.owedBytesHighWater
        case .peerGone, .ending, .closed:
            return false
        }
    }

    /// More unread output, queued or deferred, than the client may have: a slow reader.
    var exceedsOutputLimit: Bool { output.bytes + deferredBytes > budget.maxOutputBytes }

    /// A stream may produce more output now.
    var mayProduce: Bool {
        switch state {
        case .serving(let stream), .inputClosed(let stream):
            return stream.open && stream.hasMore && owedBytes < budget.owedBytesHighWater / 2
        case .peerGone, .ending, .closed:
            return false
        }
    }

    var interest: Interest {
        switch state {
        case .serving, .inputClosed, .ending:
            return Interest(read: mayRead, write: output.bytes > 0 && output.writeBlocked, registered: true)
        case .peerGone, .closed:
            return .none
        }
    }

    /// A complete call waits for nothing but a fresh budget: the next pass's (`passBegan`) or
    /// the next batch's (`batchBegan`). Whoever runs the connection must then be sure to give it
    /// those events, or it waits for ever: its input is read, so no readiness comes to wake it.
    var waitsForBudget: Bool {
        switch state {
        case .serving(let stream), .inputClosed(let stream):
            return input.hasCall && !stream.open && !withinBudget(peerGone: false)
        case .peerGone: return input.hasCall && !withinBudget(peerGone: true)
        case .ending, .closed: return false
        }
    }

    /// This pass's budget is spent (a new pass gives a fresh one; the batch's may still be).
    var passBudgetSpent: Bool {
        input.callsThisPass >= (input.contended ? budget.callsPerPass : budget.callsPerPassAlone)
    }

    /// The connection wants a turn in this pass.
    var needsService: Bool {
        if isFinished { return true }
        if input.hasCall && mayHandleCalls { return true }
        if mayRead && (input.maybeReadable || isPeerGone) { return true }
        return mayProduce
    }

    /// Nothing more will happen: close it.
    var isFinished: Bool {
        switch state {
        case .serving: return false
        case .inputClosed(let stream):
            return !input.hasCall && !stream.open && output.heldReplies == 0 && output.bytes == 0
        case .peerGone: return !input.hasCall && !input.maybeReadable
        case .ending(let e):
            if refused { return e.refusalAnswered && output.bytes == 0 }
            return output.heldReplies == 0 && output.bytes == 0
        case .closed: return true
        }
    }

    /// Holding part of a message, or ending: the server must call `tick` for this one.
    var needsClock: Bool {
        switch state {
        case .serving: return input.partialBytes > 0
        case .ending: return true
        case .inputClosed, .peerGone, .closed: return false
        }
    }

    /// Serving or answering: a limit can still end it (not yet ending, gone or closed).
    var mayBeCutOff: Bool {
        switch state {
        case .serving, .inputClosed: true
        case .peerGone, .ending, .closed: false
        }
    }
}
