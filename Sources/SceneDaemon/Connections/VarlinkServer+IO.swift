import Glibc
import SystemdKit
import Varlink

/// The actions that touch a socket, each answering the machine's next action.
extension VarlinkServer {
    /// One read of at most the buffer (64 KiB): a connection's byte budget per turn.
    func read(_ conn: ClientConnection) -> ConnectionMachine.Action {
        while true {
            let n = readBuffer.withUnsafeMutableBytes { Glibc.recv(conn.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                readBuffer.withUnsafeBytes { conn.wire.receive(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                let complete = conn.wire.hasCompleteMessage()
                return conn.machine.on(.received(partialBytes: complete ? 0 : conn.wire.bufferedInputCount,
                                                 hasCall: complete, more: n == readBuffer.count, now: now()))
            }
            if n == 0 { return conn.machine.on(.endOfInput) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return conn.machine.on(.readWouldBlock)
            case ECONNRESET, EPIPE: return conn.machine.on(.hangUp)
            default: return conn.machine.on(.socketError)
            }
        }
    }

    /// Handles complete calls, in order, for as long as the machine allows.
    func handleCalls(_ conn: ClientConnection) -> ConnectionMachine.Action {
        while conn.machine.mayHandleCalls {
            switch conn.wire.nextCall() {
            case .needMoreData:
                return conn.machine.on(.inputExhausted(partialBytes: conn.wire.bufferedInputCount))
            case .violation:
                return conn.machine.on(.protocolViolation(now: now()))
            case .call(let call):
                handle(call, on: conn)
            }
        }
        return .none
    }

    /// Runs one call, then tells the machine (which judges whether the client is interactive)
    /// and the scheduler (which enrols it in the batch and weighs the contention).
    private func handle(_ call: VarlinkCall, on conn: ClientConnection) {
        conn.machine.callBegins()
        handleCall?(call, conn)
        callsHandled &+= 1
        // A handler may end its own connection; then its slot is no longer its.
        guard !conn.isClosed else { return }
        let t = now()
        let previous = conn.machine.lastInteractiveAt
        conn.machine.callHandled(opensStream: conn.stream != nil, oneway: call.oneway,
                                 queuedBytes: conn.wire.bufferedInputCount, now: t)
        scheduler.callHandled(conn.slot, interactive: conn.machine.interactive, previous: previous, at: t)
        if conn.stream != nil { conn.machine.streamHasMore(conn.streamHasMore) }
    }

    /// A call that waited (its app's process was starting) runs now, as if it had just been
    /// read; then the connection takes its next calls again.
    func resumeParked(_ conn: ClientConnection, _ call: VarlinkCall) {
        conn.stream = nil
        conn.machine.callBegins()
        handleCall?(call, conn)
        callsHandled &+= 1
        guard !conn.isClosed else { return }
        scheduler.enrol(conn.slot)
        if conn.stream != nil {
            // It waits again (its app's process went away before the call ran).
            return
        }
        streamEnded(conn)
    }

    /// Writes until the socket is full or the output is empty.
    func write(_ conn: ClientConnection) -> ConnectionMachine.Action {
        guard conn.machine.outputBytes > 0 else { return .none }
        while conn.wire.hasPendingOutput {
            let n = conn.wire.withPendingOutput { buffer in
                Glibc.send(conn.fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 {
                conn.wire.consumedOutput(n)
                if var drained = conn.wire.takeDrainedOutput() { outbox.recycle(&drained) }
                conn.lastWriteProgress = now()
                let next = conn.machine.on(.wrote(bytes: n))
                if next != .none { return next }
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return conn.machine.on(.writeWouldBlock)
            case EPIPE, ECONNRESET: return conn.machine.on(.hangUp)
            default: return conn.machine.on(.socketError)
            }
        }
        return .none
    }

    /// The violation's error is held like a reply, so that it follows the replies before it.
    func sendViolation(_ conn: ClientConnection) -> ConnectionMachine.Action {
        let violation = conn.wire.violation ?? ProtocolViolation(reason: .invalidJSON, message: "protocol violation")
        conn.holdRaw(violation.errorReply(errorName: Self.protocolViolationError), batch: currentBatch?() ?? 0)
        warn("client \(conn.number) (\(conn.peer)) broke the protocol: \(violation.message)")
        return .none
    }

    /// LimitExceeded for `limit`. A slow reader first loses its unsent output (that is the
    /// memory the limit protects); otherwise the error follows the replies still owed.
    func sendLimitError(_ conn: ClientConnection, _ limit: String, cutOutput: Bool) -> ConnectionMachine.Action {
        // It takes no more calls: what it sent is freed now, not after its linger (the machine
        // already counts none of it against MaxBufferedInput).
        conn.wire.discardInput()
        var dropped = 0
        if cutOutput {
            dropped = conn.wire.dropUnsentMessages()
            conn.machine.outputDropped(bytes: dropped)
            conn.dropHeld()
        }
        let error = limits.error(limit, limits.explanation(limit))
        reportLimit(limit, peer: conn.peer, "cut off a client", detail: dropped > 0 ? "; \(dropped) unsent bytes dropped" : "")
        if cutOutput || !conn.hasHeldReplies {
            let bytes = error.encoded()
            conn.wire.enqueue(bytes)
            return conn.machine.on(.outputAdded(bytes: bytes.count))
        }
        conn.holdError(batch: currentBatch?() ?? 0, error)
        return .none
    }

    // MARK: - Clocks and global limits

    func armClock() {
        guard let timer = clockTimer, !timer.isArmed else { return }
        let period = min(budget.idleMicroseconds, budget.lingerMicroseconds) / 4
        timer.reschedule(after: max(50_000, min(period, 1_000_000)))
    }

    /// Idle and linger deadlines of the connections that need the clock.
    func tickClocks() {
        let t = now()
        scheduler.takeTimed(into: &ticking)
        for slot in ticking {
            guard let conn = bySlot[slot] else { continue }
            step(conn, .tick(now: t))
        }
        if scheduler.hasTimed { armClock() }
    }

    /// All clients together over MaxBufferedOutput or MaxBufferedInput: the one holding the
    /// most is cut off, until the totals are back under.
    func enforceGlobalLimits() {
        // Each round turns one connection to ending, which is never chosen again: it ends. The
        // victims are clients that have taken nothing for a while, largest first: a client that
        // reads may have a large backlog for a moment (its replies are released a batch at a
        // time), and cutting it would punish the well-behaved. If only readers hold output, it
        // drains by itself, and each of them is bounded by MaxOutputPerConnection.
        let t = now()
        while unsentTotal > limits.maxBufferedOutput {
            let victim = connections.values
                .filter { $0.machine.mayBeCutOff && $0.machine.outputBytes > 0 && t &- $0.lastWriteProgress >= Self.staleOutput }
                .max { $0.machine.outputBytes < $1.machine.outputBytes }
            guard let victim else { break }
            step(victim, .limitExceeded("MaxBufferedOutput", cutOutput: true, now: t))
        }
        while partialTotal > limits.maxBufferedInput {
            guard let victim = connections.values.filter({ $0.machine.mayBeCutOff })
                .max(by: { $0.machine.partialBytes < $1.machine.partialBytes }), victim.machine.partialBytes > 0 else { break }
            step(victim, .limitExceeded("MaxBufferedInput", cutOutput: false, now: now()))
        }
    }
}

