import Glibc
import SceneCore
import SystemdKit
import Varlink

/// The socket side of the daemon: accepts clients, and serves them in loop passes, round
/// robin, each within a budget. Every decision about one connection is its `ConnectionMachine`'s;
/// this class only carries the machines' actions out (reads, writes, closes) and keeps the lists
/// that make a pass cost what is ready rather than what is connected. One thread, no locks.
///
/// The client sockets sit in an epoll set of their own (`EpollSet`) that the loop watches as
/// one source. That source only wakes the pass; the pass collects and serves. So no client —
/// not even one whose socket is ready for ever — can take the loop away from the others, the
/// commit or the watchdog.
final class VarlinkServer {
    let loop: EventLoop
    let listenFD: Int32
    let path: String
    var limits: ConnectionLimits {
        didSet { budget = limits.connectionBudget }
    }
    var budget = ConnectionMachine.Budget()
    let poller: EpollSet
    private var listenSource: IOSource?
    private var pollerSource: IOSource?
    /// Whether the loop watches the poller. Quieted by asking for no events rather than by
    /// disabling the source: sd-event turns disabling into EPOLL_CTL_DEL and enabling into
    /// EPOLL_CTL_ADD, and adding one epoll set to another makes the kernel walk every member
    /// looking for loops (ep_loop_check): with 2,000 connections, 4 % of the loop thread.
    private var pollerArmed = true
    private var resumeTimer: TimerSource?
    var contentionTimer: TimerSource?
    var clockTimer: TimerSource?
    private(set) var connections: [Int: ClientConnection] = [:]
    private var nextNumber = 1
    private var perUser: [UInt32: Int] = [:]
    /// Connections accepted only to be told they are over a limit.
    private var refusing = 0
    private var acceptPaused = false
    /// When accepting was last tried (µs, monotonic).
    private var lastAcceptAt: UInt64 = 0
    static let acceptStarvation: UInt64 = 5_000

    /// Served in the next pass, in order.
    private var ready: [ClientConnection] = []
    private var servedThisPass: [ClientConnection] = []
    /// Connections that handled calls in the batch being gathered, and how many did in the last.
    var batchMembers: [ClientConnection] = []
    var lastBatchMembers = 0
    /// When a client with few calls in flight last made one: such a client waits for each
    /// reply, so between its calls it is not in any batch, yet still competes.
    var lastInteractiveCall: (time: UInt64, connection: Int)?
    /// An interactive client's call is in the batch being gathered.
    var interactiveInBatch = false
    var interactiveRecently: Bool { lastInteractiveCall.map { now() &- $0.time < interactiveMemory } ?? false }
    /// How long the last interactive client counts as competing after its call (µs).
    var interactiveMemory: UInt64 = VarlinkServer.shortestInteractiveMemory
    /// Calls in flight, and bytes queued behind them, up to which a client is interactive.
    static let interactiveWindow = 16
    static let interactiveBacklog = 4 << 10
    /// How long an interactive client counts as competing after its last call (µs): a few of
    /// its own gaps between calls, so that it still counts when it is starved (a client whose
    /// round trip grew past a fixed memory would stop counting, the bulk clients would be served
    /// uncontended, and its round trip would grow further), bounded by far less than a human's
    /// pause.
    static let shortestInteractiveMemory: UInt64 = 50_000
    static let longestInteractiveMemory: UInt64 = 1_000_000
    static let interactiveGapsRemembered: UInt64 = 4

    /// Inside `enforceGlobalLimits` (which steps connections, and so comes back here).
    private var enforcing = false
    /// With output to write at the next flush.
    var dirty: [ClientConnection] = []
    /// Replies held until their batch commits (with the journal entries of the same batches).
    let outbox: Outbox
    /// The connections with a fan-out Monitor stream, which each publish walks.
    let monitors = MonitorRegistry()
    /// Needing clock ticks (part of a message held, or ending).
    var timed: [ClientConnection] = []

    /// Bytes written for clients and not yet taken by them (replies still held for a commit
    /// wait on us, not on the client, and are bounded by each connection's high-water mark),
    /// and bytes of unfinished messages received.
    private(set) var unsentTotal = 0
    private(set) var partialTotal = 0
    var callsHandled: UInt64 = 0
    private(set) var passes: UInt64 = 0
    var readBuffer = [UInt8](repeating: 0, count: 65536)
    var logLimiter = RateLimiter()

    /// Set by the daemon: handles one call (holding its reply in the connection).
    var handleCall: ((VarlinkCall, ClientConnection) -> Void)?
    /// Set by the daemon: produces the next part of a stream.
    var produceStream: ((ClientConnection) -> Void)?
    /// Set by the daemon: asks for a loop pass.
    var requestPass: (() -> Void)?
    /// A connection was closed, for whatever reason (an attached app's process may be gone).
    var connectionClosed: ((ClientConnection) -> Void)?
    /// Set by the daemon: the batch replies made now depend on.
    var currentBatch: (() -> UInt64)?
    /// Set by the daemon: where structured entries go (the journal); stderr without it.
    var log: ((LogEntry) -> Void)?

    static let protocolViolationError = "io.scened.Manager.ProtocolViolation"
    /// Refused connections kept open at once to deliver their error; beyond, best effort.
    static let maxRefusing = 64
    /// A client whose output has not moved for this long (µs) is not reading: only such clients
    /// are cut off by MaxBufferedOutput.
    static let staleOutput: UInt64 = 200_000

    init(loop: EventLoop, listenFD: Int32, path: String, limits: ConnectionLimits, outbox: Outbox = Outbox()) throws {
        self.loop = loop
        self.outbox = outbox
        self.listenFD = listenFD
        self.path = path
        self.limits = limits
        poller = try EpollSet()
        budget = limits.connectionBudget
    }

    func start() throws {
        let me = Unmanaged.passUnretained(self)
        listenSource = try loop.addIO(fd: listenFD, events: .readable) { _ in me.takeUnretainedValue().acceptPending() }
        pollerSource = try loop.addIO(fd: poller.fd, events: .readable) { _ in
            // Only a wake-up: the pass collects. Quiet until then, so it cannot fire in a loop.
            let server = me.takeUnretainedValue()
            server.armPoller(false)
            server.requestPass?()
        }
        resumeTimer = try loop.addTimer(at: UInt64.max, accuracy: 10_000) { me.takeUnretainedValue().resumeAccepting() }
        resumeTimer?.disarm()
        contentionTimer = try loop.addTimer(at: UInt64.max, accuracy: 1_000) { me.takeUnretainedValue().contentionEnded() }
        contentionTimer?.disarm()
        clockTimer = try loop.addTimer(at: UInt64.max, accuracy: 50_000) { me.takeUnretainedValue().tickClocks() }
        clockTimer?.disarm()
    }

    var connectionCount: Int { connections.count }
    /// Something is left for another pass.
    var hasWork: Bool { !ready.isEmpty || !dirty.isEmpty }

    func now() -> UInt64 { loop.nowMonotonic }

    // MARK: - Accept

    /// Accepts what is waiting, up to `limit`. The listening socket is a loop source of its
    /// own, level-triggered, and wakes the loop again while more wait.
    func acceptPending(limit: Int = 64) {
        lastAcceptAt = now()
        for _ in 0..<limit {
            let fd: Int32
            do {
                guard let accepted = try UnixSocket.accept(listenFD) else { return }
                fd = accepted
            } catch {
                let code = error.errno
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    pauseAccepting(code)
                } else {
                    warn("accept on \(path): \(error)")
                }
                return
            }
            admit(fd)
        }
    }

    private func admit(_ fd: Int32) {
        var peer = UnixSocket.peerCredentials(fd).map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) } ?? .unknown
        peer.groups = UnixSocket.peerGroups(fd)
        var refusal: String?
        if connections.count - refusing >= limits.maxConnections {
            refusal = "MaxConnections"
        } else if perUser[peer.uid, default: 0] >= limits.maxConnectionsPerUser {
            refusal = "MaxConnectionsPerUser"
        }
        let error = refusal.map { limits.error($0, limits.explanation($0)).encoded() }
        if let refusal, let error, refusing >= Self.maxRefusing {
            // Too many refusals in flight to wait for each: say it once, best effort, and go.
            _ = error.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            Glibc.close(fd)
            reportLimit(refusal, peer: peer, "refused a client")
            return
        }
        let machine = ConnectionMachine(budget: budget, now: now(), refusedFor: refusal)
        var wireLimits = VarlinkConnection.Limits()
        wireLimits.maxMessageBytes = limits.maxMessageSize
        let conn = ClientConnection(number: nextNumber, fd: fd, peer: peer, limits: wireLimits, machine: machine,
                                    outbox: outbox, monitors: monitors)
        conn.lastWriteProgress = now()
        nextNumber += 1
        do {
            try poller.add(fd, token: UInt64(conn.number), events: Self.events(conn.machine.interest))
        } catch {
            warn("cannot watch a client socket: \(error)")
            Glibc.close(fd)
            return
        }
        conn.appliedInterest = conn.machine.interest
        connections[conn.number] = conn
        if let refusal, let error {
            refusing += 1
            conn.refused = true
            conn.wire.enqueue(error)
            reportLimit(refusal, peer: peer, "refused a client")
            step(conn, .outputAdded(bytes: error.count))
        } else {
            perUser[peer.uid, default: 0] += 1
            afterStep(conn)
        }
    }

    /// Out of descriptors: stop accepting (the listening socket would be ready for ever)
    /// until a connection closes or a moment has passed.
    private func pauseAccepting(_ code: Int32) {
        guard !acceptPaused else { return }
        acceptPaused = true
        try? listenSource?.setEnabled(false)
        resumeTimer?.reschedule(after: 250_000)
        warn("accept on \(path): \(String(cString: strerror(code))); not accepting until a descriptor frees (\(connections.count) clients connected)")
    }

    private func resumeAccepting() {
        guard acceptPaused else { return }
        acceptPaused = false
        resumeTimer?.disarm()
        try? listenSource?.setEnabled(true)
    }

    // MARK: - Passes

    /// Begins a pass: fresh per-pass budgets, and every client epoll reports ready.
    func beginPass() {
        passes += 1
        // The listening socket has one dispatch per loop iteration at the pass's priority, and
        // a pass re-requests itself for as long as a flooder has calls queued: a client
        // connecting beside such a flood waited up to a second to be accepted. Passes that
        // follow one another for longer than this accept a few themselves. (A higher priority
        // for the listener would let a storm of connections starve the clients already served.)
        if !acceptPaused, now() &- lastAcceptAt >= Self.acceptStarvation { acceptPending(limit: 8) }
        let served = servedThisPass
        servedThisPass.removeAll(keepingCapacity: true)
        for conn in served {
            conn.servedThisPass = false
            if !conn.isClosed { step(conn, .passBegan) }
        }
        poller.wait { token, events in
            guard let conn = connections[Int(truncatingIfNeeded: token)] else { return }
            if events.contains(.error) {
                step(conn, .socketError)
            } else if events.contains(.hangup) {
                step(conn, .hangUp)
            } else {
                if events.contains(.writable) { step(conn, .writable) }
                if events.contains(.readable) && !conn.isClosed { step(conn, .readable) }
            }
        }
        armPoller(true)
    }

    private func armPoller(_ armed: Bool) {
        guard armed != pollerArmed, let source = pollerSource else { return }
        // On a failure the state stays as it was, and the next pass tries again.
        if (try? source.setEvents(armed ? .readable : [])) != nil { pollerArmed = armed }
    }

    /// Gives each connection that was ready at the start of the pass one turn.
    func serve() {
        guard !ready.isEmpty else { return }
        // Interactive clients first: their call reserves the batch before bulk clients fill it.
        var turn = ready
        ready.removeAll(keepingCapacity: true)
        if turn.count > 1, turn.contains(where: { $0.interactive }) {
            turn = turn.filter { $0.interactive } + turn.filter { !$0.interactive }
        }
        // Contended: more than one client in this batch or the last one. A client waiting for
        // its reply is not in the batch being gathered, but still competes.
        // While an interactive client is about, the others get small passes and batches, so that
        // its replies never wait behind much of theirs.
        let interactive = interactiveRecently ? lastInteractiveCall?.connection : nil
        for conn in turn {
            conn.queued = false
            guard !conn.isClosed else { continue }
            conn.machine.contended = interactive != nil && interactive != conn.number && !conn.interactive
            conn.machine.batchReserved = interactiveInBatch
            if conn.machine.contended && interactiveInBatch && !conn.inBatch {
                // Held back from this batch: it must hear when the next one begins.
                conn.inBatch = true
                batchMembers.append(conn)
            }
            if !conn.servedThisPass {
                conn.servedThisPass = true
                servedThisPass.append(conn)
            }
            run(conn, conn.machine.serviceAction())
            if !conn.isClosed, conn.machine.mayProduce {
                produceStream?(conn)
                if !conn.isClosed, conn.stream != nil {
                    _ = conn.machine.on(.streamBehind(bytes: conn.streamBehindBytes))
                    _ = conn.machine.on(.streamHasMore(conn.streamHasMore))
                }
            }
            afterStep(conn)
        }
    }

    // MARK: - Stepping machines

    /// Feeds one event to a connection's machine and carries out what follows.
    func step(_ conn: ClientConnection, _ event: ConnectionMachine.Event) {
        guard !conn.isClosed else { return }
        run(conn, conn.machine.on(event))
        afterStep(conn)
    }

    func run(_ conn: ClientConnection, _ first: ConnectionMachine.Action) {
        var action = first
        while true {
            switch action {
            case .none:
                return
            case .read:
                action = read(conn)
            case .handleCalls:
                action = handleCalls(conn)
            case .write:
                markDirty(conn)
                return
            case .sendViolation:
                action = sendViolation(conn)
            case .sendLimitError(let limit, let cutOutput):
                action = sendLimitError(conn, limit, cutOutput: cutOutput)
            case .close:
                close(conn)
                return
            }
        }
    }

    /// Brings the server's lists, totals and epoll in line with the machine's state.
    func afterStep(_ conn: ClientConnection) {
        guard !conn.isClosed else { return }
        let m = conn.machine
        // The machine ended the stream (cut off, peer gone): nothing more may be produced.
        if !m.streaming && conn.stream != nil { conn.stream = nil }
        unsentTotal += m.outputBytes - conn.accountedUnsent
        conn.accountedUnsent = m.outputBytes
        partialTotal += m.partialBytes - conn.accountedPartial
        conn.accountedPartial = m.partialBytes
        if m.exceedsOutputLimit {
            step(conn, .limitExceeded("MaxOutputPerConnection", cutOutput: true, now: now()))
            return
        }
        // At once, not at the end of the pass: the totals never run past a limit by more than
        // one read or one message.
        if (partialTotal > limits.maxBufferedInput || unsentTotal > limits.maxBufferedOutput) && !enforcing {
            enforcing = true
            enforceGlobalLimits()
            enforcing = false
            if conn.isClosed { return }
        }
        let interest = m.interest
        if interest != conn.appliedInterest {
            if interest.registered {
                try? poller.modify(conn.fd, token: UInt64(conn.number), events: Self.events(interest))
            } else {
                poller.remove(conn.fd)
            }
            conn.appliedInterest = interest
        }
        if m.needsService && !conn.queued {
            conn.queued = true
            ready.append(conn)
            requestPass?()
        }
        // Out of budget outside its own turn (a parked launch settled, a stream ended): a
        // connection that was not served this pass, or not in this batch, would hear of no new
        // budget. Found as a Launch flood where one client's next calls never ran. A next pass
        // is asked for only when this pass's budget is what it waits for: waiting for the next
        // batch, passes meanwhile would spin; the batch's start wakes it (`batchBegan`).
        if m.waitsForBudget {
            if !conn.servedThisPass {
                conn.servedThisPass = true
                servedThisPass.append(conn)
                if m.passBudgetSpent { requestPass?() }
            }
            if !conn.inBatch {
                conn.inBatch = true
                batchMembers.append(conn)
            }
        }
        if m.needsClock && !conn.onClock {
            conn.onClock = true
            timed.append(conn)
            armClock()
        }
    }

    private func markDirty(_ conn: ClientConnection) {
        guard !conn.isDirty else { return }
        conn.isDirty = true
        dirty.append(conn)
        requestPass?()
    }

    static func events(_ interest: ConnectionMachine.Interest) -> IOEvents {
        var events: IOEvents = []
        if interest.read { events.insert(.readable) }
        if interest.write { events.insert(.writable) }
        return events
    }

    // MARK: - Closing

    func close(_ conn: ClientConnection) {
        if !conn.machine.isClosed { _ = conn.machine.on(.socketError) }
        guard connections[conn.number] != nil else { return }
        connections[conn.number] = nil
        poller.remove(conn.fd)
        Glibc.close(conn.fd)
        unsentTotal -= conn.accountedUnsent
        partialTotal -= conn.accountedPartial
        conn.accountedUnsent = 0
        conn.accountedPartial = 0
        conn.stream = nil
        conn.dropHeld()
        if conn.refused {
            refusing -= 1
        } else if let n = perUser[conn.peer.uid] {
            perUser[conn.peer.uid] = n > 1 ? n - 1 : nil
        }
        if acceptPaused { resumeAccepting() }
        connectionClosed?(conn)
    }

    func closeAll() {
        // Shutting down is not the death of the apps attached: they attach again after the
        // restart and carry on.
        connectionClosed = nil
        for conn in Array(connections.values) { close(conn) }
        listenSource?.cancel()
        listenSource = nil
        pollerSource?.cancel()
        pollerSource = nil
    }
}
