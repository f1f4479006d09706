/// The life of one client connection, without I/O, in the manner of swift-nio's channel life
/// cycle and postgres-nio's connection state machine: the server tells it what happened (an
/// `Event`), carries out the `Action` it answers, and derives everything else — the epoll
/// interest, whether the connection wants a turn in this pass, whether it is finished — from
/// its state. No flag about a connection lives outside it.
///
/// Why it exists: the first release kept independent flags (closing, paused, waiting, …) and
/// one combination — a peer that hung up while its reply waited for a commit — was ready on
/// every loop pass and never finished, which wedged the daemon for everyone.
struct ConnectionMachine: Sendable {
    enum Phase: Equatable, Sendable {
        /// Calls are read and handled.
        case serving
        /// The peer shut down its sending side (EOF) but may still read: the calls received
        /// are answered, then the connection closes.
        case inputClosed
        /// The peer closed or reset the connection: nothing can be written any more. Calls
        /// already received are still carried out (a oneway call followed by close must take
        /// effect); their replies are dropped.
        case peerGone
        /// We end the connection: no more calls are taken; what is owed is written (an error
        /// saying why comes last), then it closes, at the latest at `lingerUntil`.
        case ending(EndReason)
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
        /// interactive client (see `contended`), and otherwise. Two, not eight: on two cores the
        /// interactive client's round trip (200 µs alone) also waits for the bulk client's own
        /// process; with eight per batch it kept 34–40 % of its rate beside a 1,024-deep
        /// pipeline, with two 60 % (scened-bench fairness), the pipeline still served.
        var callsPerPass = 2
        var callsPerPassAlone = 1024
        /// Calls one connection may add to one batch while it competes with an interactive
        /// client, so that a flooder cannot make that client's commit wait behind its own.
        var callsPerBatch = 2
        /// And otherwise. Without a cap, a flooder that has the daemon to itself grows the batch
        /// for as long as the commit before it takes, which then takes longer still: measured,
        /// batches of a second's flood, and a client arriving beside it (not yet known to be
        /// interactive) waited that second for its first reply. 2,048 calls commit in a few
        /// milliseconds and are still a large group commit.
        var callsPerBatchAlone = 2048
        /// Replies (held + unsent) at which no more calls are taken: the client must read.
        var maxOwedReplies = 4096
        /// Owed bytes (held + unsent) at which no more calls are taken, and at which streams
        /// stop producing; below half of it both go on. A monitor's live events stop being
        /// queued here too: it falls behind and reads them from the event log (`deferredBytes`).
        var owedBytesHighWater = 1 << 20
        /// Unread output, queued or deferred, at which the client is cut off as a slow reader
        /// (MaxOutputPerConnection).
        var maxOutputBytes = 16 << 20
        /// How long an ending connection may take to read what it is owed.
        var lingerMicroseconds: UInt64 = 2_000_000
        /// A connection holding part of a message that sends nothing for this long is cut off.
        var idleMicroseconds: UInt64 = 30_000_000
    }

    let budget: Budget
    private(set) var phase: Phase
    /// A `more` call is open: until it ends, later calls wait in the input.
    private(set) var streaming = false
    /// The stream has more to produce now (not merely waiting for events).
    private(set) var streamHasMore = false
    private(set) var heldReplies = 0
    private(set) var heldBytes = 0
    /// Framed bytes not yet written.
    private(set) var outputBytes = 0
    /// The socket refused output (EAGAIN): only then is epoll asked for room to write. Output
    /// it has not refused is written in the pass that made it (`.write`), so asking epoll
    /// each time would cost two epoll_ctl calls per reply or event, on and off again (8 % of
    /// the loop with 1,000 apps receiving their callbacks, measured).
    private(set) var writeBlocked = false
    /// Stream output owed but not queued: the committed events a monitor fell behind by while
    /// its output was at the high-water mark, as encoded for it. Never held in memory: the
    /// stream produces them from the event log as the client reads. Counted against
    /// `maxOutputBytes` as if queued, so a client that does not read is cut off as before,
    /// without its events being copied for it.
    private(set) var deferredBytes = 0
    /// Replies in the output (counted as owed until written; approximated as released count).
    private(set) var outputReplies = 0
    /// A complete message waits in the input.
    private(set) var hasCall = false
    /// Bytes of an unfinished message in the input.
    private(set) var partialBytes = 0
    /// epoll said readable and we have not yet seen EAGAIN or a short read.
    private(set) var maybeReadable = false
    private(set) var callsThisPass = 0
    private(set) var callsThisBatch = 0
    /// An interactive client (few calls in flight: it waits for each reply) was served beside
    /// this one in this batch or the last: the small budgets apply. Among bulk clients alone,
    /// big passes and big batches give the throughput group commit exists for.
    var contended = false

    /// An interactive client's call is in the batch being gathered: while contended, this
    /// connection adds nothing more to that batch, so that its commit is as short as it can be.
    var batchReserved = false

    /// Replies owed (held or unsent): how many calls the client has in flight, about.
    var owedReplies: Int { heldReplies + outputReplies }
    /// When the last byte arrived (for the idle timeout of an unfinished message).
    private(set) var lastInputAt: UInt64
    private(set) var lingerUntil: UInt64 = .max
    /// A refused client sent its first call or EOF: once the error is written, close.
    private(set) var refusalAnswered = false

    init(budget: Budget = Budget(), now: UInt64, refusedFor limit: String? = nil) {
        self.budget = budget
        lastInputAt = now
        if let limit {
            phase = .ending(.refused(limit))
            lingerUntil = now &+ budget.lingerMicroseconds
        } else {
            phase = .serving
        }
    }

    /// What a turn of service should do first.
    mutating func serviceAction() -> Action {
        if phase == .closed { return .none }
        if isFinished { return close() }
        if hasCall && mayHandleCalls { return .handleCalls }
        if mayRead && (maybeReadable || phase == .peerGone) { return .read }
        return .none
    }

    // MARK: - Events

    mutating func on(_ event: Event) -> Action {
        if phase == .closed { return .none }
        switch event {
        case .readable:
            // Noted only: reading happens in the connection's turn of a pass.
            maybeReadable = true
            return .none

        case .writable:
            writeBlocked = false
            return outputBytes > 0 && phase != .peerGone ? .write : .none

        case .hangUp:
            switch phase {
            case .serving, .inputClosed:
                // Owed output can no longer reach anyone; calls already received still run.
                enterPeerGone()
                maybeReadable = true
                return .none
            case .peerGone:
                return isFinished ? close() : .none
            case .ending, .closed:
                return close()
            }

        case .socketError:
            return close()

        case .received(let partial, let call, let more, let now):
            partialBytes = partial
            hasCall = call
            maybeReadable = more
            lastInputAt = now
            if case .ending(.refused) = phase {
                // Its first call is the one the error answers; the rest is not read.
                if call { refusalAnswered = true }
                hasCall = false
                return isFinished ? close() : .none
            }
            return hasCall && mayHandleCalls ? .handleCalls : .none

        case .readWouldBlock:
            maybeReadable = false
            return isFinished ? close() : .none

        case .endOfInput:
            maybeReadable = false
            switch phase {
            case .serving:
                phase = .inputClosed
                // A half-finished message can never be completed now.
                partialBytes = 0
            case .ending(.refused):
                refusalAnswered = true
            case .inputClosed, .peerGone, .ending, .closed:
                break
            }
            if isFinished { return close() }
            return hasCall && mayHandleCalls ? .handleCalls : .none

        case .callHandled(let opensStream):
            callsThisPass += 1
            callsThisBatch += 1
            if opensStream && phase != .peerGone { streaming = true }
            return .none

        case .inputExhausted(let partial):
            hasCall = false
            partialBytes = phase == .serving ? partial : 0
            return isFinished ? close() : .none

        case .replyHeld(let bytes):
            if phase == .peerGone { return .none }
            heldReplies += 1
            heldBytes += bytes
            return .none

        case .repliesReleased(let count, let held, let output):
            if phase == .peerGone { return isFinished ? close() : .none }
            // Clamped: the counts come from the server's bookkeeping, never trusted to match.
            heldReplies = max(0, heldReplies - count)
            heldBytes = max(0, heldBytes - held)
            outputBytes += output
            outputReplies += count
            if outputBytes > 0 { return .write }
            return isFinished ? close() : .none

        case .outputAdded(let bytes):
            if phase == .peerGone { return .none }
            outputBytes += bytes
            return bytes > 0 ? .write : .none

        case .wrote(let bytes):
            writeBlocked = false
            outputBytes = max(0, outputBytes - bytes)
            if outputBytes == 0 { outputReplies = 0 }
            return isFinished ? close() : .none

        case .writeWouldBlock:
            writeBlocked = outputBytes > 0
            return .none

        case .streamEnded:
            streaming = false
            streamHasMore = false
            deferredBytes = 0
            if isFinished { return close() }
            return hasCall && mayHandleCalls ? .handleCalls : .none

        case .protocolViolation(let now):
            switch phase {
            case .serving, .inputClosed:
                beginEnding(.protocolViolation, now: now)
                return .sendViolation
            case .peerGone:
                // Nobody to tell: drop the rest of its input.
                hasCall = false
                maybeReadable = false
                return isFinished ? close() : .none
            case .ending, .closed:
                return .none
            }

        case .limitExceeded(let limit, let cutOutput, let now):
            switch phase {
            case .serving, .inputClosed:
                beginEnding(.limit(limit), now: now)
                if cutOutput {
                    heldReplies = 0
                    heldBytes = 0
                }
                return .sendLimitError(limit, cutOutput: cutOutput)
            case .peerGone, .ending, .closed:
                return .none
            }

        case .streamHasMore(let more):
            streamHasMore = streaming && more
            return .none

        case .streamBehind(let bytes):
            // Only a stream that can still be written to is owed anything.
            switch phase {
            case .serving, .inputClosed: deferredBytes = streaming ? max(0, bytes) : 0
            case .peerGone, .ending, .closed: deferredBytes = 0
            }
            return .none

        case .passBegan:
            callsThisPass = 0
            return .none

        case .batchBegan:
            callsThisBatch = 0
            return .none

        case .tick(let now):
            switch phase {
            case .serving:
                if partialBytes > 0, now >= lastInputAt, now - lastInputAt >= budget.idleMicroseconds {
                    return on(.limitExceeded("IdleTimeoutSec", cutOutput: false, now: now))
                }
                return .none
            case .ending:
                return now >= lingerUntil ? close() : .none
            case .inputClosed, .peerGone, .closed:
                return .none
            }
        }
    }

    /// Output the server dropped for a slow reader (whole unsent messages).
    mutating func outputDropped(bytes: Int) {
        outputBytes = max(0, outputBytes - bytes)
    }

    private mutating func beginEnding(_ reason: EndReason, now: UInt64) {
        phase = .ending(reason)
        streaming = false
        streamHasMore = false
        deferredBytes = 0
        hasCall = false
        partialBytes = 0
        maybeReadable = false
        lingerUntil = now &+ budget.lingerMicroseconds
    }

    private mutating func enterPeerGone() {
        phase = .peerGone
        streaming = false
        streamHasMore = false
        deferredBytes = 0
        heldReplies = 0
        heldBytes = 0
        outputBytes = 0
        writeBlocked = false
        outputReplies = 0
        partialBytes = 0
    }

    private mutating func close() -> Action {
        phase = .closed
        streaming = false
        streamHasMore = false
        deferredBytes = 0
        hasCall = false
        maybeReadable = false
        heldReplies = 0
        heldBytes = 0
        outputBytes = 0
        writeBlocked = false
        outputReplies = 0
        partialBytes = 0
        return .close
    }
}
