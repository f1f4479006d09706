import Glibc
import SceneCore
import SystemdKit
import Varlink

/// The socket side of the daemon: accepts clients, and serves them in loop passes, round
/// robin, each within a budget. The executor of two pure parts: every decision about one
/// connection is its `ConnectionMachine`'s, and which connections get a turn, a fresh budget,
/// a flush or a tick is the `PassScheduler`'s (its lists make a pass cost what is ready rather
/// than what is connected). This class feeds them events and carries out what they answer —
/// reads, writes, closes, timers. One thread, no locks.
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
    /// looking for loops (ep_loop_check), which costs in proportion to the connections.
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
    private(set) var scheduler = PassScheduler()
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
    private(set) var monitors = MonitorRegistry()

    /// Bytes written for clients and not yet taken by them (replies still held for a commit
    /// wait on us, not on the client, and are bounded by each connection's high-water mark),
    /// and bytes of unfinished messages received.
    private(set) var unsentTotal = 0
    private(set) var partialTotal = 0
    var callsHandled: UInt64 = 0
    private(set) var passes: UInt64 = 0
    var readBuffer = [UInt8](repeating: 0, count: 65536)
    var logLimiter = RateLimiter()

    /// The batch replies made now depend on: told by the daemon whenever it changes.
    var currentBatch: UInt64 = 1
    /// Where structured entries go (the journal); stderr without one.
    let logger: JournalLogger?
    /// Something wants another pass (a connection queued, output to flush, a connection
    /// closed): the daemon asks with `takePassRequest` after each call into the server.
    private var passRequested = false
    /// Connections closed since the daemon last asked (`takeClosed`): an attached app's
    /// process may be gone with one.
    private var closed: [ClientConnection] = []
    /// Shutting down: closes are not reported (the apps attached are not dying).
    private var closingAll = false

    /// What the server's loop sources report (`DaemonInput.server`), for `handle`.
    enum Input {
        case listenReady
        case pollerReady
        case resumeAccepting
        case contentionEnded
        case clockTick
    }

    static let protocolViolationError = "io.scened.Manager.ProtocolViolation"
    /// Refused connections kept open at once to deliver their error; beyond, best effort.
    static let maxRefusing = 64
    /// A client whose output has not moved for this long (µs) is not reading: only such clients
    /// are cut off by MaxBufferedOutput.
    static let staleOutput: UInt64 = 200_000

    init(loop: EventLoop, listenFD: Int32, path: String, limits: ConnectionLimits, outbox: Outbox = Outbox(),
         logger: JournalLogger? = nil) throws {
        self.loop = loop
        self.outbox = outbox
        self.logger = logger
        self.listenFD = listenFD
        self.path = path
        self.limits = limits
        poller = try EpollSet()
        budget = limits.connectionBudget
    }

    /// Adds the server's loop sources; each posts its `Input` to `inbox`.
    func start(inbox: LoopInbox<DaemonInput>) throws {
        listenSource = try loop.addIO(fd: listenFD, events: .readable, posting: { _ in .server(.listenReady) }, to: inbox)
        pollerSource = try loop.addIO(fd: poller.fd, events: .readable, posting: { _ in .server(.pollerReady) }, to: inbox)
        resumeTimer = try disarmedTimer(accuracy: 10_000, .server(.resumeAccepting), inbox)
        contentionTimer = try disarmedTimer(accuracy: 1_000, .server(.contentionEnded), inbox)
        clockTimer = try disarmedTimer(accuracy: 50_000, .server(.clockTick), inbox)
    }

    private func disarmedTimer(accuracy: UInt64, _ input: DaemonInput, _ inbox: LoopInbox<DaemonInput>) throws -> TimerSource {
        let timer = try loop.addTimer(at: UInt64.max, accuracy: accuracy, posting: input, to: inbox)
        timer.disarm()
        return timer
    }

    /// One of its loop sources fired.
    func handle(_ input: Input) {
        switch input {
        case .listenReady: acceptPending()
        case .pollerReady: pollerWoke()
        case .resumeAccepting: resumeAccepting()
        case .contentionEnded: contentionEnded()
        case .clockTick: tickClocks()
        }
    }

    /// Only a wake-up: the pass collects. Quiet until then, so it cannot fire in a loop.
    private func pollerWoke() {
        armPoller(false)
        passRequested = true
    }

    /// Whether a pass is wanted since the last time (then the daemon triggers one).
    func takePassRequest() -> Bool {
        defer { passRequested = false }
        return passRequested || scheduler.hasWork
    }

    /// The connections closed since the last time.
    func takeClosed() -> [ClientConnection] {
        guard !closed.isEmpty else { return [] }
        defer { closed.removeAll() }
        return closed
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
                                    machine: machine, outbox: outbox)
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
        // a pass re-requests itself for as long as a flooder has calls queued, so passes that
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
            // A peer that closes with our output unread resets the connection: EPOLLERR
            // (ECONNRESET) comes beside EPOLLHUP, yet what it sent stays readable before the
            // error, so it is a hang-up like any other and its calls received still run.
            if events.contains(.hangup) {
                step(conn, .hangUp)
            } else if events.contains(.error) {
                step(conn, .socketError)
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

    /// Gives each connection that was ready at the start of the pass one turn. `service`
    /// answers its calls and produces its stream; it is used for this pass only.
    func serve(_ service: some ConnectionService) {
        guard scheduler.hasReady else { return }
        let competing = scheduler.takeTurns(into: &turns, now: now())
        for slot in turns {
            guard let conn = bySlot[slot] else { continue }
            let (contended, reserved) = scheduler.beginTurn(slot, competing: competing)
            run(conn, conn.machine.on(.turnBegan(contended: contended, reserved: reserved)), service)
            if !conn.isClosed, conn.machine.mayProduce {
                service.produce(conn)
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

    /// Carries out the machine's actions. Calls are handled only in a connection's turn (with
    /// a `service`); elsewhere they wait for it, as the scheduler queues the connection.
    func run(_ conn: ClientConnection, _ first: ConnectionMachine.Action, _ service: (some ConnectionService)? = NoService?.none) {
        var action = first
        while true {
            switch action {
            case .none:
                return
            case .read:
                action = read(conn)
            case .handleCalls:
                guard let service else { return }
                action = handleCalls(conn, service)
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
        monitors.sync(conn)
        let needsService = m.needsService, waitsForBudget = m.waitsForBudget, needsClock = m.needsClock
        // Most steps (a write that drained, a reply held) leave nothing for the scheduler.
        guard needsService || waitsForBudget || needsClock else { return }
        let follow = scheduler.afterStep(conn.slot, needsService: needsService, waitsForBudget: waitsForBudget,
                                         passBudgetSpent: m.passBudgetSpent, needsClock: needsClock)
        if follow.contains(.requestPass) { passRequested = true }
        if follow.contains(.armClock) { armClock() }
    }

    private func markDirty(_ conn: ClientConnection) {
        if scheduler.markDirty(conn.slot) { passRequested = true }
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
        monitors.sync(conn)
        conn.dropHeld()
        if conn.machine.refused {
            refusing -= 1
        } else if let n = perUser[conn.peer.uid] {
            perUser[conn.peer.uid] = n > 1 ? n - 1 : nil
        }
        if acceptPaused { resumeAccepting() }
        if !closingAll {
            closed.append(conn)
            passRequested = true
        }
    }

    func closeAll() {
        // Shutting down is not the death of the apps attached: they attach again after the
        // restart and carry on.
        closingAll = true
        closed.removeAll()
        for conn in Array(connections.values) { close(conn) }
        listenSource?.cancel()
        listenSource = nil
        pollerSource?.cancel()
        pollerSource = nil
    }
}

// MARK: - Commits and output

extension VarlinkServer {
    /// Batches up to `batch` are settled: their replies become output, or `failure`.
    func settle(through batch: UInt64, failure: VarlinkError?) {
        outbox.releaseReplies(through: batch, failure: failure) { number, bytes, count, held in
            guard let conn = connections[number], !conn.isClosed else { return }
            conn.wire.enqueue(bytes)
            step(conn, .repliesReleased(count: count, heldBytes: held, outputBytes: bytes.count))
        }
    }

    /// Writes what each connection with new output has.
    func flush() {
        while scheduler.hasDirty {
            scheduler.takeDirty(into: &flushing)
            for slot in flushing {
                guard let conn = bySlot[slot] else { continue }
                run(conn, write(conn))
                afterStep(conn)
            }
        }
    }

    /// A stream message that is already committed goes straight to the output, unless replies
    /// are still held (a monitor's first reply): then it waits behind them, in order.
    func appendOutput(_ conn: ClientConnection, _ bytes: [UInt8]) {
        guard !conn.isClosed, conn.machine.streaming else { return }
        if conn.hasHeldReplies {
            conn.holdBehindLast(bytes)
            afterStep(conn)
            return
        }
        conn.wire.enqueue(bytes)
        step(conn, .outputAdded(bytes: bytes.count))
    }

    /// The connection's open `more` call ended; its next calls may be handled.
    func streamEnded(_ conn: ClientConnection) {
        conn.stream = nil
        step(conn, .streamEnded)
    }

    /// The stream may have more to produce (a monitor fell behind, its backlog set), or is
    /// behind by another amount (which may take it over MaxOutputPerConnection).
    func streamChanged(_ conn: ClientConnection) {
        guard !conn.isClosed, conn.stream != nil else { return }
        noteStream(conn)
        afterStep(conn)
    }

    /// A monitor that is behind the live events is owed `bytes` more of them: only an addition,
    /// unless that takes it over MaxOutputPerConnection (then `afterStep` cuts it off).
    func streamFellBehind(_ conn: ClientConnection, by bytes: Int) {
        guard !conn.isClosed, conn.stream != nil else { return }
        conn.behindBytes += bytes
        conn.machine.streamBehind(bytes: conn.behindBytes)
        if conn.machine.exceedsOutputLimit { afterStep(conn) }
    }

    /// Every live monitor, for event fan-out: the connections with a fan-out Monitor stream (not
    /// an attached app's). One closed or ended during the walk is skipped (its stream is gone);
    /// one that starts meanwhile waits for the next publish.
    func forEachMonitor(_ body: (ClientConnection, MonitorStream) -> Void) {
        for conn in monitors.members.values {
            if case .monitor(let m) = conn.stream, !m.attached, conn.machine.streaming { body(conn, m) }
        }
    }
}

// MARK: - Socket actions

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
    func handleCalls(_ conn: ClientConnection, _ service: some ConnectionService) -> ConnectionMachine.Action {
        while conn.machine.mayHandleCalls {
            switch conn.wire.nextCall() {
            case .needMoreData:
                return conn.machine.on(.inputExhausted(partialBytes: conn.wire.bufferedInputCount))
            case .violation:
                return conn.machine.on(.protocolViolation(now: now()))
            case .call(let call):
                handle(call, on: conn, service)
            }
        }
        return .none
    }

    /// Runs one call, then tells the machine (which judges whether the client is interactive)
    /// and the scheduler (which enrols it in the batch and weighs the contention).
    private func handle(_ call: VarlinkCall, on conn: ClientConnection, _ service: some ConnectionService) {
        conn.machine.callBegins()
        service.handle(call, on: conn)
        callsHandled &+= 1
        // A handler may end its own connection; then its slot is no longer its.
        guard !conn.isClosed else { return }
        let t = now()
        let opensStream = conn.stream != nil
        let verdict = conn.machine.callHandled(opensStream: opensStream, oneway: call.oneway,
                                               queuedBytes: conn.wire.bufferedInputCount, now: t)
        scheduler.callHandled(conn.slot, interactive: verdict.interactive, previous: verdict.previous, at: t)
        if opensStream { conn.machine.streamHasMore(conn.streamHasMore) }
    }

    /// A call that waited (its app's process was starting) runs now, as if it had just been
    /// read; then the connection takes its next calls again.
    func resumeParked(_ conn: ClientConnection, _ call: VarlinkCall, _ service: some ConnectionService) {
        if case .launching(let app)? = conn.stream { conn.resumedAfterLaunch = app }
        conn.stream = nil
        conn.machine.callBegins()
        service.handle(call, on: conn)
        conn.resumedAfterLaunch = nil
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
        conn.holdRaw(violation.errorReply(errorName: Self.protocolViolationError), batch: currentBatch)
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
        conn.holdError(batch: currentBatch, error)
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

// MARK: - Logging

extension VarlinkServer {
    /// Logged at most `RateLimiter`'s burst per interval: a hostile client must not flood it.
    func warn(_ message: String) {
        let verdict = logLimiter.allow(now: now())
        guard verdict.allowed else { return }
        let suffix = verdict.suppressed > 0 ? " (\(verdict.suppressed) similar messages suppressed)" : ""
        Diagnostics.warning(message + suffix)
    }

    /// A journal entry (rate-limited like `warn`) for a client refused or cut off by a limit.
    func reportLimit(_ limit: String, peer: PeerCredentials, _ what: String, detail: String = "") {
        let verdict = logLimiter.allow(now: now())
        guard verdict.allowed else { return }
        let suffix = verdict.suppressed > 0 ? " (\(verdict.suppressed) similar messages suppressed)" : ""
        let message = "\(what) (pid \(peer.pid), uid \(peer.uid)): \(limit) exceeded\(detail)\(suffix)"
        guard let logger else { return Diagnostics.warning(message) }
        logger.send(LogEntry(priority: .warning, messageID: MessageID.clientLimit, message: message, fields: [
            ("SCENED_LIMIT", limit), ("SCENED_CLIENT_PID", String(peer.pid)),
            ("SCENED_CLIENT_UID", String(peer.uid)), ("SCENED_CLIENT_GID", String(peer.gid)),
        ]))
    }
}

/// Whoever answers the calls and produces the streams of the server's connections: handed to
/// `serve` and `resumeParked` for their duration and never kept, so the server holds no
/// reference to the parts that answer calls.
protocol ConnectionService {
    func handle(_ call: VarlinkCall, on conn: ClientConnection)
    func produce(_ conn: ClientConnection)
}

/// The absence of a service, for steps outside a connection's turn.
enum NoService: ConnectionService {
    func handle(_ call: VarlinkCall, on conn: ClientConnection) {}
    func produce(_ conn: ClientConnection) {}
}
