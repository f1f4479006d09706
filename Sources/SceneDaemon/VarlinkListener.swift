import Glibc
import SceneCore
import SystemdKit
import Varlink

/// The socket side: accepts clients, reads and frames their calls, hands each call to the
/// service, and writes replies once the loop iteration's commit is done. One thread, no locks.
final class VarlinkListener {
    let loop: EventLoop
    let listenFD: Int32
    let path: String
    let limits: VarlinkConnection.Limits
    private var listenSource: IOSource?
    private(set) var connections: [Int: ClientConnection] = [:]
    private var nextNumber = 1
    private var flushQueue: [ClientConnection] = []
    /// Connections with replies held for a commit.
    private var waiting: [ClientConnection] = []
    /// Connections that yielded their turn this iteration.
    private var turnQueue: [ClientConnection] = []
    private var readBuffer = [UInt8](repeating: 0, count: 65536)
    /// Connections beyond this are closed as soon as they are accepted.
    var maxConnections = 4096

    /// Set by the daemon: handles one call (writes its reply into the connection's held replies).
    var handleCall: ((VarlinkCall, ClientConnection) -> Void)?
    /// Set by the daemon: asks for the end-of-iteration commit and flush.
    var requestFlush: (() -> Void)?
    /// Set by the daemon: the batch replies made now depend on.
    var currentBatch: (() -> UInt64)?
    /// Produces the next part of a streaming reply; returns false when the stream has ended.
    var produceStream: ((ClientConnection) -> Void)?

    /// Stop processing a client's calls while this much is waiting to be written to it.
    static let outputHighWater = 1 << 20
    /// Bytes read from one client per wake-up, so that one busy client can't starve the rest.
    static let readBudget = 256 * 1024
    /// Calls handled from one client per loop iteration before the commit must run.
    static let callsPerIteration = 4096
    static let protocolViolationError = "io.scened.Manager.ProtocolViolation"

    init(loop: EventLoop, listenFD: Int32, path: String, limits: VarlinkConnection.Limits = .init()) {
        self.loop = loop
        self.listenFD = listenFD
        self.path = path
        self.limits = limits
    }

    func start() throws {
        let me = Unmanaged.passUnretained(self)
        listenSource = try loop.addIO(fd: listenFD, events: .readable) { _ in
            me.takeUnretainedValue().acceptPending()
        }
    }

    var connectionCount: Int { connections.count }

    /// Calls were handled after the last flush began: another commit and flush are due.
    var hasQueuedFlush: Bool { !flushQueue.isEmpty }

    // MARK: - Accept and read

    private func acceptPending() {
        while true {
            let fd: Int32
            do {
                guard let accepted = try UnixSocket.accept(listenFD) else { return }
                fd = accepted
            } catch {
                // EMFILE and friends: stop accepting for now rather than spin; the listening
                // socket stays readable and is retried on the next wake-up.
                Diagnostics.error("accept on \(path): \(error)")
                return
            }
            if connections.count >= maxConnections {
                Diagnostics.warning("refusing a client: MaxConnections=\(maxConnections) reached")
                close(fd)
                continue
            }
            let conn = ClientConnection(number: nextNumber, fd: fd, limits: limits)
            nextNumber += 1
            do {
                let me = Unmanaged.passUnretained(self)
                let c = Unmanaged.passUnretained(conn)
                conn.source = try loop.addIO(fd: fd, events: .readable) { events in
                    me.takeUnretainedValue().onEvents(c.takeUnretainedValue(), events)
                }
                connections[conn.number] = conn
            } catch {
                Diagnostics.error("cannot watch client socket: \(error)")
                close(fd)
            }
        }
    }

    private func onEvents(_ conn: ClientConnection, _ events: IOEvents) {
        if conn.isClosed { return }
        if events.contains(.writable) {
            writeOutput(conn)
            if conn.isClosed { return }
            resumeIfDrained(conn)
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            readInput(conn)
        }
    }

    private func readInput(_ conn: ClientConnection) {
        var total = 0
        while total < Self.readBudget {
            let n = readBuffer.withUnsafeMutableBytes { read(conn.fd, $0.baseAddress, $0.count) }
            if n > 0 {
                total += n
                readBuffer.withUnsafeBytes { conn.wire.receive(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                if n < readBuffer.count { break }
            } else if n == 0 {
                // Orderly shutdown by the peer. Calls already received are still answered if
                // the peer only half-closed; a full close makes the writes fail and we drop it.
                processCalls(conn)
                if conn.heldReplies == 0 && !conn.wire.hasPendingOutput { closeConnection(conn) } else { conn.closeAfterFlush = true }
                return
            } else {
                let e = errno
                if e == EAGAIN || e == EWOULDBLOCK { break }
                if e == EINTR { continue }
                closeConnection(conn)
                return
            }
        }
        processCalls(conn)
    }

    /// Handles the complete calls in the input, in order, until the connection becomes busy
    /// (a stream), backed up, broken, or has had its turn.
    ///
    /// A connection that handled calls is not read again before the end of the loop iteration:
    /// otherwise a client that never pauses (pipelining without a window, a oneway flood)
    /// would keep its socket readable, win every dispatch over the lower-priority commit step,
    /// and starve the commit, every other client's replies and the watchdog.
    func processCalls(_ conn: ClientConnection) {
        var handled = 0
        loop: while !conn.isClosed && conn.stream == nil && !conn.closeAfterFlush && handled < Self.callsPerIteration {
            if isBackedUp(conn) { break }
            switch conn.wire.nextCall() {
            case .needMoreData:
                break loop
            case .violation(let violation):
                // The connection is beyond repair; say why, then close it.
                conn.holdRaw(violation.errorReply(errorName: Self.protocolViolationError), batch: currentBatch?() ?? 0)
                conn.closeAfterFlush = true
                handled += 1
            case .call(let call):
                handleCall?(call, conn)
                handled += 1
            }
        }
        if conn.isClosed { return }
        if handled > 0 {
            if !conn.pausedForTurn {
                conn.pausedForTurn = true
                turnQueue.append(conn)
            }
            touched(conn)
        } else if conn.stream != nil {
            touched(conn)
        }
        updateReading(conn)
    }

    /// Output (held or unsent) beyond the high-water mark: stop taking calls from this client.
    private func isBackedUp(_ conn: ClientConnection) -> Bool {
        conn.heldBytes + conn.wire.pendingOutputCount >= Self.outputHighWater
    }

    /// Reads from a client exactly when it may send calls that will be handled now.
    private func updateReading(_ conn: ClientConnection) {
        guard !conn.isClosed else { return }
        let backlog = conn.heldBytes + conn.wire.pendingOutputCount
        let wanted = conn.stream == nil && !conn.closeAfterFlush && !conn.pausedForTurn
            && backlog < Self.outputHighWater / 4
        if wanted == conn.readingPaused {
            conn.readingPaused = !wanted
            updateInterest(conn)
        }
    }

    /// The end of a loop iteration: connections that yielded their turn may go on.
    func endTurn() {
        let queue = turnQueue
        turnQueue.removeAll(keepingCapacity: true)
        for conn in queue where !conn.isClosed {
            conn.pausedForTurn = false
            processCalls(conn)
        }
    }

    private func updateInterest(_ conn: ClientConnection) {
        var events: IOEvents = []
        if !conn.readingPaused { events.insert(.readable) }
        if conn.wire.hasPendingOutput { events.insert(.writable) }
        try? conn.source?.setEvents(events)
    }

    // MARK: - Flush (after the commit)

    /// Queues the connection for the end-of-iteration flush and asks for one.
    func touched(_ conn: ClientConnection) {
        if conn.hasHeldReplies && !conn.isWaiting {
            conn.isWaiting = true
            waiting.append(conn)
        }
        if !conn.needsFlush {
            conn.needsFlush = true
            flushQueue.append(conn)
        }
        requestFlush?()
    }

    /// Batches up to `batch` are settled: their replies go out, or become `failure`.
    func settle(through batch: UInt64, failure: VarlinkError?) {
        guard !waiting.isEmpty else { return }
        var still: [ClientConnection] = []
        for conn in waiting {
            if conn.isClosed {
                conn.isWaiting = false
                continue
            }
            if let failure { conn.fail(through: batch, with: failure) } else { conn.release(through: batch) }
            if conn.hasHeldReplies { still.append(conn) } else { conn.isWaiting = false }
            if !conn.needsFlush {
                conn.needsFlush = true
                flushQueue.append(conn)
            }
        }
        waiting = still
    }

    /// Writes what each queued connection has, tops up streams, resumes drained clients.
    func flush() {
        while !flushQueue.isEmpty {
            let queue = flushQueue
            flushQueue.removeAll(keepingCapacity: true)
            for conn in queue {
                conn.needsFlush = false
                if conn.isClosed { continue }
                writeOutput(conn)
                if conn.isClosed { continue }
                resumeIfDrained(conn)
            }
        }
    }

    /// A streamed message was appended to the output (its content is already committed).
    func sendNow(_ conn: ClientConnection) {
        touched(conn)
    }

    private func writeOutput(_ conn: ClientConnection) {
        while conn.wire.hasPendingOutput {
            let n = conn.wire.withPendingOutput { buf in
                Glibc.send(conn.fd, buf.baseAddress, buf.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 {
                conn.wire.consumedOutput(n)
            } else {
                let e = errno
                if n < 0 && e == EINTR { continue }
                if n < 0 && (e == EAGAIN || e == EWOULDBLOCK) { break }
                closeConnection(conn)
                return
            }
        }
        if conn.wire.isOverflowing {
            // A client that does not read (typically a monitor) is dropped rather than allowed
            // to grow the daemon's memory without bound.
            Diagnostics.warning("dropping client \(conn.number): \(conn.wire.pendingOutputCount) bytes unread")
            closeConnection(conn)
            return
        }
        if conn.closeAfterFlush && !conn.wire.hasPendingOutput && conn.heldReplies == 0 {
            closeConnection(conn)
            return
        }
        updateInterest(conn)
    }

    /// Once output has drained, a stream gets more to send and a paused client is read again.
    /// A stream is topped up until the socket stops taking data (EPOLLOUT then resumes it) or
    /// it has nothing more to give (a live monitor waits for events).
    private func resumeIfDrained(_ conn: ClientConnection) {
        while let stream = conn.stream, !conn.isClosed {
            // A monitor writes committed events straight to the socket: it must not overtake
            // replies still held for a commit. A listing holds its batches like any reply (they
            // show the engine's state, which may not be committed yet), so order is kept.
            if case .monitor = stream, conn.heldReplies > 0 { break }
            let before = conn.heldBytes + conn.wire.pendingOutputCount
            if before >= Self.outputHighWater / 4 { break }
            produceStream?(conn)
            if conn.isClosed { return }
            let produced = conn.heldBytes + conn.wire.pendingOutputCount != before
            if conn.wire.hasPendingOutput { writeOutput(conn) }
            // A filtered monitor's backlog batch may match nothing and still advance: go on.
            if (!produced && !conn.streamHasMore) || conn.wire.hasPendingOutput { break }
        }
        if conn.isClosed { return }
        let wasPaused = conn.readingPaused
        updateReading(conn)
        // Calls already buffered while it was backed up are handled now.
        if wasPaused && !conn.readingPaused { processCalls(conn) }
    }

    func closeConnection(_ conn: ClientConnection) {
        guard !conn.isClosed else { return }
        conn.isClosed = true
        conn.stream = nil
        conn.source?.cancel()
        conn.source = nil
        close(conn.fd)
        connections[conn.number] = nil
    }

    /// Every live monitor, for event fan-out.
    func forEachMonitor(_ body: (ClientConnection, MonitorStream) -> Void) {
        for conn in connections.values {
            if case .monitor(let m) = conn.stream, !conn.isClosed { body(conn, m) }
        }
    }

    func closeAll() {
        for conn in Array(connections.values) { closeConnection(conn) }
        listenSource?.cancel()
        listenSource = nil
    }
}

extension ClientConnection {
    /// A message already framed by the Varlink layer (error replies for protocol violations).
    func holdRaw(_ bytes: [UInt8], batch: UInt64) {
        hold(batch: batch) { w in
            // The violation reply comes framed with its NUL; the writer adds one itself.
            w.bytes.append(contentsOf: bytes.last == 0 ? bytes.dropLast() : bytes[...])
        }
    }
}

extension ClientConnection {
    /// A stream with more to send right now: a listing, or a monitor still replaying its backlog.
    var streamHasMore: Bool {
        switch stream {
        case .listing: true
        case .monitor(let m): m.backlogNext != nil
        case nil: false
        }
    }
}
