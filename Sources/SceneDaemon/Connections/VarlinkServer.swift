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

    /// Which connections get a turn, hear of new budgets, flush or tick (by slot).
    var scheduler = PassScheduler()
    /// The connections by their scheduler slot.
    private(set) var bySlot: [ClientConnection?] = []
    /// Lists taken from the scheduler, their buffers kept between passes.
    private var turns: [Int] = []
    private var released: [Int] = []
    var flushing: [Int] = []
    var ticking: [Int] = []

    /// Inside `enforceGlobalLimits` (which steps connections, and so comes back here).
    private var enforcing = false
    /// Replies held until their batch commits (with the journal entries of the same batches).
    let outbox: Outbox
    /// The connections with a fan-out Monitor stream, which each publish walks.
    let monitors = MonitorRegistry()

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
    var hasWork: Bool { scheduler.hasWork }

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
        let conn = ClientConnection(number: nextNumber, slot: scheduler.admit(), fd: fd, peer: peer, limits: wireLimits,
                                    machine: machine, outbox: outbox, monitors: monitors)
        conn.lastWriteProgress = now()
        nextNumber += 1
        do {
            try poller.add(fd, token: UInt64(conn.number), events: Self.events(conn.machine.interest))
        } catch {
            warn("cannot watch a client socket: \(error)")
            Glibc.close(fd)
            scheduler.remove(conn.slot)
            return
        }
        conn.appliedInterest = conn.machine.interest
        connections[conn.number] = conn
        if conn.slot == bySlot.count { bySlot.append(conn) } else { bySlot[conn.slot] = conn }
        if let refusal, let error {
            refusing += 1
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
        scheduler.beginPass(releasing: &released)
        for slot in released {
            guard let conn = bySlot[slot] else { continue }
            conn.machine.passBegan()
            afterStep(conn)
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
        guard scheduler.hasReady else { return }
        let competing = scheduler.takeTurns(into: &turns, now: now())
        for slot in turns {
            guard let conn = bySlot[slot] else { continue }
            let (contended, reserved) = scheduler.beginTurn(slot, competing: competing)
            run(conn, conn.machine.on(.turnBegan(contended: contended, reserved: reserved)))
            if !conn.isClosed, conn.machine.mayProduce {
                produceStream?(conn)
                if !conn.isClosed, conn.stream != nil { noteStream(conn) }
            }
            afterStep(conn)
        }
    }

    /// Tells the machine where the connection's stream stands (neither report ever acts).
    func noteStream(_ conn: ClientConnection) {
        conn.machine.streamBehind(bytes: conn.streamBehindBytes)
        conn.machine.streamHasMore(conn.streamHasMore)
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
        let follow = scheduler.afterStep(conn.slot, needsService: m.needsService, waitsForBudget: m.waitsForBudget,
                                         passBudgetSpent: m.passBudgetSpent, needsClock: m.needsClock)
        if follow.contains(.requestPass) { requestPass?() }
        if follow.contains(.armClock) { armClock() }
    }

    private func markDirty(_ conn: ClientConnection) {
        if scheduler.markDirty(conn.slot) { requestPass?() }
    }

    static func events(_ interest: ConnectionMachine.Interest) -> IOEvents {
        var events: IOEvents = []
        if interest.read { events.insert(.readable) }
        if interest.write { events.insert(.writable) }
        return events
    }

    // MARK: - Batches and contention

    /// A new batch began gathering: the members the scheduler releases hear of a fresh budget.
    func batchBegan() {
        scheduler.batchBegan(now: now(), releasing: &released)
        releaseMembers()
    }

    /// No interactive call for a while: the held bulk clients go on.
    func contentionEnded() {
        scheduler.contentionEnded(now: now(), releasing: &released)
        releaseMembers()
    }

    private func releaseMembers() {
        for slot in released {
            guard let conn = bySlot[slot] else { continue }
            conn.machine.batchBegan()
            afterStep(conn)
        }
        if let deadline = scheduler.contentionDeadline { _ = contentionTimer?.reschedule(at: deadline) }
    }

    // MARK: - Closing

    /// Closes the socket; a machine not yet closed (the server shuts down) is closed first.
    func close(_ conn: ClientConnection) {
        // The machine's own `.close` comes back here.
        if !conn.machine.isClosed { return run(conn, conn.machine.on(.socketError)) }
        guard connections[conn.number] != nil else { return }
        connections[conn.number] = nil
        bySlot[conn.slot] = nil
        scheduler.remove(conn.slot)
        poller.remove(conn.fd)
        Glibc.close(conn.fd)
        unsentTotal -= conn.accountedUnsent
        partialTotal -= conn.accountedPartial
        conn.accountedUnsent = 0
        conn.accountedPartial = 0
        conn.stream = nil
        conn.dropHeld()
        if conn.machine.refused {
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
