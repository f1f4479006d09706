import Glibc
import SystemdKit

/// Follows logind (org.freedesktop.login1) over sd-bus on the daemon's loop: the login
/// sessions (kept in `state`, which gives each user's verdict, rule R30), sleep and shutdown,
/// and the delay inhibitors that give the daemon time before either.
///
/// Every bus outcome is posted as `DaemonInput.login(Input)`; the daemon hands it to `handle`,
/// which returns what the daemon should act on. Nothing blocks: calls are asynchronous, and a
/// dropped bus is reconnected with a bounded backoff (`Settings.reconnectInitialUSec`
/// doubling to `reconnectMaxUSec`). When logind leaves the bus or the bus drops, its sessions
/// are kept for `keepSessionsUSec`, so that a restart of logind (which keeps its sessions)
/// does not wake every locked app for a moment; if it is not back and read by then, they are
/// forgotten (everyone free, as with no logind at all).
/// Signals are taken only from logind's current unique name, so another peer on the bus
/// cannot lock or unlock anyone by sending them to scened directly.
final class LogindClient {
    struct Settings: Equatable {
        var address: BusConnection.Address = .system
        var followIdle = false
        var reconnectInitialUSec: UInt64 = 500_000
        var reconnectMaxUSec: UInt64 = 30_000_000
        var callTimeoutUSec: UInt64 = 10_000_000
        var keepSessionsUSec: UInt64 = 5_000_000
        var inhibitReason = "Apps save their scenes' state first"
    }

    enum Signal: Equatable, Sendable {
        case sessionNew, sessionRemoved, prepareForSleep, prepareForShutdown
        case lock, unlock, propertiesChanged, nameOwnerChanged, disconnected
    }

    enum Call: Equatable, Sendable {
        case nameOwner, listSessions
        case properties(path: String)
        case inhibit(InhibitorKind)
    }

    /// What its bus and timer post (`DaemonInput.login`), for `handle`.
    enum Input {
        case signal(Signal, BusMessage)
        /// A reply to a call made under `generation` (stale ones are dropped).
        case reply(Call, generation: UInt64, BusReply)
        case reconnect
        /// logind has been gone for `keepSessionsUSec`.
        case forgetSessions
    }

    let loop: EventLoop
    let inbox: LoopInbox<DaemonInput>
    let settings: Settings
    /// The sessions and the verdicts; the daemon reads it (only the client changes it).
    var state: LoginState

    var connection: BusConnection?
    /// Bumped with every connection and every change of logind's owner.
    var generation: UInt64 = 0
    /// logind's unique name while it is on the bus.
    private(set) var owner: String?
    /// Session object path → session id (real logind escapes ids in paths).
    var sessionPaths: [String: String] = [:]
    /// Paths with a GetAll in flight, and those changed again since it was sent.
    var reading: Set<String> = []
    var rereadWanted: Set<String> = []
    /// A ListSessions in flight, and the reads of its sessions: until both are done, news of
    /// verdicts waits, so that a half-read snapshot never shows.
    var listPending = false
    var snapshotOutstanding: Set<String> = []

    private var inhibitors: [InhibitorKind: Int32] = [:]
    private var inhibitPending: Set<InhibitorKind> = []
    private var available: Bool?
    private var reportedVerdicts: LoginState.VerdictSnapshot
    private var reconnectTimer: TimerSource?
    private var forgetTimer: TimerSource?
    private var reconnectDelay: UInt64
    /// Connection attempts so far (start and each reconnect).
    private(set) var connectAttempts = 0
    /// GetAll calls sent so far (a flood of changes must not multiply them).
    var propertyReads = 0
    var news: [LoginNews] = []

    init(loop: EventLoop, inbox: LoopInbox<DaemonInput>, settings: Settings = Settings()) {
        self.loop = loop
        self.inbox = inbox
        self.settings = settings
        state = LoginState(followIdle: settings.followIdle)
        reportedVerdicts = state.verdicts
        reconnectDelay = settings.reconnectInitialUSec
    }

    deinit { stop() }

    /// Connects and subscribes. What it finds comes back through `handle`'s news (a bus
    /// refused at once is reported by the next `handle`, or by `takeNews()`).
    func start() {
        connect()
    }

    /// Closes the bus, drops the inhibitors and stops reconnecting.
    func stop() {
        reconnectTimer?.cancel()
        reconnectTimer = nil
        forgetTimer?.cancel()
        forgetTimer = nil
        connection?.close()
        connection = nil
        for kind in InhibitorKind.allCases { releaseInhibitor(kind) }
    }

    /// News gathered outside `handle` (by `start`).
    func takeNews() -> [LoginNews] {
        defer { news = [] }
        return news
    }

    func handle(_ input: Input) -> [LoginNews] {
        switch input {
        case .signal(let signal, let message): onSignal(signal, message)
        case .reply(let call, let generation, let reply):
            if generation == self.generation { onReply(call, reply) }
        case .reconnect: connect()
        case .forgetSessions: if owner == nil { forgetSessions() }
        }
        noteVerdicts()
        return takeNews()
    }

    /// Whether the delay inhibitor of `kind` is held.
    func holdsInhibitor(_ kind: InhibitorKind) -> Bool { inhibitors[kind] != nil }

    /// Lets logind go on (with sleep or shutdown) by closing the inhibitor's fd.
    func releaseInhibitor(_ kind: InhibitorKind) {
        guard let fd = inhibitors.removeValue(forKey: kind) else { return }
        close(fd)
    }

    // MARK: - Connection

    private func connect() {
        connectAttempts += 1
        connection?.close()
        connection = nil
        forgetLogind()
        generation += 1
        do {
            let bus = try BusConnection(settings.address, loop: loop)
            try subscribe(bus)
            connection = bus
            try send(Logind.getNameOwner, as: .nameOwner)
        } catch {
            connection?.close()
            connection = nil
            reportUnavailable("no system bus (\(error))")
            scheduleReconnect()
        }
    }

    private func subscribe(_ bus: BusConnection) throws(SystemdError) {
        let login1 = Logind.busName
        var rules: [(BusMatchRule?, Signal)] = [
            (.disconnected, .disconnected),
            (BusMatchRule(sender: Logind.driverName, path: Logind.driverPath, interface: Logind.driverName,
                          member: "NameOwnerChanged", arg0: login1), .nameOwnerChanged),
            (BusMatchRule(sender: login1, pathNamespace: Logind.sessionPathPrefix, interface: Logind.propertiesInterface,
                          member: "PropertiesChanged", arg0: Logind.sessionInterface), .propertiesChanged),
        ]
        for (member, signal) in [("SessionNew", Signal.sessionNew), ("SessionRemoved", .sessionRemoved),
                                 ("PrepareForSleep", .prepareForSleep), ("PrepareForShutdown", .prepareForShutdown)] {
            rules.append((BusMatchRule(sender: login1, path: Logind.managerPath, interface: Logind.managerInterface,
                                       member: member), signal))
        }
        for (member, signal) in [("Lock", Signal.lock), ("Unlock", .unlock)] {
            rules.append((BusMatchRule(sender: login1, pathNamespace: Logind.sessionPathPrefix,
                                       interface: Logind.sessionInterface, member: member), signal))
        }
        for case (let rule?, let signal) in rules {
            try bus.addMatch(rule, posting: { .login(.signal(signal, $0)) }, to: inbox)
        }
    }

    /// Calls `call` on the current connection; the reply comes back as `.reply(as, …)`.
    func send(_ call: BusMethodCall, as kind: Call) throws(SystemdError) {
        guard let connection else { throw SystemdError(errno: ENOTCONN, function: "LogindClient.send") }
        let generation = self.generation
        try connection.call(call, timeoutUSec: settings.callTimeoutUSec,
                            posting: { .login(.reply(kind, generation: generation, $0)) }, to: inbox)
    }

    private func scheduleReconnect() {
        let at = loop.nowMonotonic + reconnectDelay
        reconnectDelay = min(reconnectDelay * 2, settings.reconnectMaxUSec)
        if let reconnectTimer {
            reconnectTimer.reschedule(at: at)
        } else {
            reconnectTimer = try? loop.addTimer(at: at, accuracy: 50_000, posting: .login(.reconnect), to: inbox)
        }
    }

    private func onConnectionLost(_ reason: String) {
        forgetLogind()
        generation += 1
        reportUnavailable(reason)
        scheduleReconnect()
    }

    // MARK: - logind coming and going

    func onNameOwner(_ reply: BusReply) {
        // The broker answered: the bus works, so a later drop starts the backoff afresh.
        reconnectDelay = settings.reconnectInitialUSec
        switch reply {
        case .success(let message):
            guard let name = try? message.readString() else { return reportUnavailable("GetNameOwner: bad reply") }
            logindAppeared(name)
        case .failure(let error) where error.name == BusError.nameHasNoOwnerName:
            reportUnavailable("\(Logind.busName) is not on the bus")
        case .failure(let error):
            reportUnavailable("GetNameOwner: \(error)")
        }
    }

    func onNameOwnerChanged(_ message: BusMessage) {
        guard message.sender == Logind.driverName,
              let (name, _, new) = try? Logind.readNameOwnerChanged(message), name == Logind.busName else { return }
        if new.isEmpty {
            forgetLogind()
            generation += 1
            reportUnavailable("\(Logind.busName) left the bus")
        } else if new != owner {
            logindAppeared(new)
        }
    }

    /// logind (re)appeared as `name`: read everything afresh and take the inhibitors. The
    /// sessions known so far stay until the new list replaces them.
    private func logindAppeared(_ name: String) {
        forgetTimer?.disarm()
        for kind in InhibitorKind.allCases { releaseInhibitor(kind) }
        inhibitPending.removeAll()
        generation += 1
        owner = name
        reading.removeAll()
        rereadWanted.removeAll()
        snapshotOutstanding.removeAll()
        listPending = true
        do {
            try send(Logind.listSessions, as: .listSessions)
        } catch {
            listPending = false
            reportUnavailable("ListSessions: \(error)")
        }
        for kind in InhibitorKind.allCases { takeInhibitor(kind) }
    }

    /// logind is gone (or the bus): its inhibitors and any sleep end with it, its sessions
    /// after `keepSessionsUSec`. A shutdown does not end: logind stops during one, and the
    /// daemon's stop must go on.
    private func forgetLogind() {
        owner = nil
        for kind in InhibitorKind.allCases { releaseInhibitor(kind) }
        inhibitPending.removeAll()
        keepSessionsForAWhile()
        reading.removeAll()
        rereadWanted.removeAll()
        snapshotOutstanding.removeAll()
        listPending = false
        if state.sleeping {
            state.sleeping = false
            news.append(.prepareForSleep(false))
        }
    }

    /// Arms the forget timer unless it is already running (reconnect attempts do not extend
    /// it) or there is nothing to forget.
    private func keepSessionsForAWhile() {
        guard !state.sessions.isEmpty, forgetTimer?.isArmed != true else { return }
        guard settings.keepSessionsUSec > 0 else { return forgetSessions() }
        let at = loop.nowMonotonic + settings.keepSessionsUSec
        if let forgetTimer {
            forgetTimer.reschedule(at: at)
        } else {
            forgetTimer = try? loop.addTimer(at: at, accuracy: 50_000, posting: .login(.forgetSessions), to: inbox)
            if forgetTimer == nil { forgetSessions() }
        }
    }

    func forgetSessions() {
        forgetTimer?.disarm()
        state.removeAllSessions()
        sessionPaths.removeAll()
    }

    func snapshotMayBeComplete() {
        guard !listPending && snapshotOutstanding.isEmpty && owner != nil else { return }
        if available != true {
            available = true
            news.append(.available)
        }
    }

    func reportUnavailable(_ reason: String) {
        guard available != false else { return }
        available = false
        news.append(.unavailable(reason: reason))
    }

    private func noteVerdicts() {
        guard !listPending && snapshotOutstanding.isEmpty else { return }
        let now = state.verdicts
        if now != reportedVerdicts {
            reportedVerdicts = now
            news.append(.verdictsChanged)
        }
    }

    // MARK: - Inhibitors

    private func takeInhibitor(_ kind: InhibitorKind) {
        guard owner != nil, inhibitors[kind] == nil, !inhibitPending.contains(kind) else { return }
        do {
            try send(Logind.inhibit(kind, why: settings.inhibitReason), as: .inhibit(kind))
            inhibitPending.insert(kind)
        } catch {
            Diagnostics.warning("logind: cannot ask for the \(kind.rawValue) delay inhibitor: \(error)")
        }
    }

    func onInhibit(_ kind: InhibitorKind, _ reply: BusReply) {
        inhibitPending.remove(kind)
        switch reply {
        case .success(let message):
            do {
                let fd = try message.readFileDescriptor()
                releaseInhibitor(kind)
                inhibitors[kind] = fd
            } catch {
                Diagnostics.warning("logind: the \(kind.rawValue) inhibitor reply carries no fd: \(error)")
            }
        case .failure(let error):
            Diagnostics.warning("logind refused the \(kind.rawValue) delay inhibitor: \(error)")
        }
    }

    // MARK: - Dispatch

    private func onSignal(_ signal: Signal, _ message: BusMessage) {
        switch signal {
        case .disconnected:
            // sd-bus's own message; the broker stamps every remote one with the peer's name.
            guard message.sender == BusMatchRule.localSender else { return }
            onConnectionLost("the bus connection closed")
        case .nameOwnerChanged: onNameOwnerChanged(message)
        default:
            // Only logind's own signals count (see the type's comment).
            guard let owner, message.sender == owner else { return }
            onLogindSignal(signal, message)
        }
    }

    private func onLogindSignal(_ signal: Signal, _ message: BusMessage) {
        switch signal {
        case .prepareForSleep:
            guard let starting = try? message.readBool() else { return }
            state.sleeping = starting
            news.append(.prepareForSleep(starting))
            if !starting { takeInhibitor(.sleep) }
        case .prepareForShutdown:
            guard let starting = try? message.readBool() else { return }
            state.shuttingDown = starting
            news.append(.prepareForShutdown(starting))
            if !starting { takeInhibitor(.shutdown) }
        case .sessionNew, .sessionRemoved, .lock, .unlock, .propertiesChanged:
            onSessionSignal(signal, message)
        case .disconnected, .nameOwnerChanged:
            break
        }
    }

    private func onReply(_ call: Call, _ reply: BusReply) {
        switch call {
        case .nameOwner: onNameOwner(reply)
        case .listSessions: onListSessions(reply)
        case .properties(let path): onProperties(path, reply)
        case .inhibit(let kind): onInhibit(kind, reply)
        }
    }
}
