import Glibc
import SceneCore
import SceneInterface
import SceneStore
import SystemdKit
import Varlink

/// The running daemon: the executor of its layer. It owns the loop and every part, and is the
/// only one that acts on what wakes it (`DaemonInput`, posted by the parts' loop sources to
/// its inbox) and on what the parts return (a commit's `Progress`, a reclaim `Outcome`, a
/// handler's `DaemonRequest`). The parts never call it or each other back.
///
/// Work happens in passes: a pass serves the clients that are ready (each within its budget,
/// round robin), runs the reclaim policy, hands what changed to the commit thread as one batch
/// (unless one is in flight: then the batch keeps growing, group commit), and writes what can
/// be written. When a batch is written its events go to the attached apps; when it is durable
/// its events are published (monitors, journal) and only then are the replies that depend on
/// it released (reply-after-commit), and the next batch goes to the commit thread at once.
/// WATCHDOG=1 is sent from completed passes only.
final class Daemon {
    let options: DaemonOptions
    private(set) var settings: DaemonSettings
    private(set) var configFiles: [String]
    let loader: ConfigLoader
    let loop: EventLoop
    let inbox = LoopInbox<DaemonInput>()
    let host: EngineHost
    let server: VarlinkServer
    let apps: AppSupervisor
    let feeds: StreamFeeds
    let dispatcher: MethodDispatcher
    /// What the server hands each connection's calls and stream to, in its turn.
    private let service: CallService
    let logger: JournalLogger
    let reclaim: ReclaimRunner
    let system: SystemEvents
    let background: BackgroundWork
    /// The apps started because stored Opens wait for them (`stepRouting`).
    var openLaunches = OpenLaunches()
    let socketPath: String
    /// Unlinked at exit when we bound it ourselves (never a socket-activated one).
    let ownsSocket: Bool
    private var timers = Timers()
    private var watchdog = ServingWatchdog(interval: nil)
    /// Committed batches whose events are still to be published (`publishCommitted`);
    /// `delivered`: the attached apps already have them.
    private var unpublished: [(events: [LifecycleEvent], starts: [Int], delivered: Bool)] = []
    /// The batch in flight was written and its events went to the attached apps then.
    private var deliveredInFlight = false
    private var status: StatusReporter
    /// Set when the last reload failed, shown in STATUS= until the next good one.
    private var reloadError: String?
    /// The test hook's livelock: until when (µs, monotonic; 0: for ever).
    private var livelockUntil: UInt64?

    /// The daemon's own loop sources.
    private struct Timers {
        var pass: DeferSource?
        var commitDone: IOSource?
        var engine: TimerSource?
        var reclaim: TimerSource?
        var heartbeat: TimerSource?
        var heartbeatPeriod: UInt64 = 0
        /// The earliest deadline an attached app must answer by, and when it is armed for.
        var app: TimerSource?
        var appDue: Timestamp?
        /// Reads the memory of started apps, while there are any.
        var measure: TimerSource?
        var measureArmed = false
        var status: TimerSource?
        var livelock: DeferSource?
        /// A lock's move to the background, a stop's or a sleep's bound.
        var system: TimerSource?
        var systemDue: Timestamp?
        /// The next scheduled background task, or a wake's launch given up.
        var background: TimerSource?
        var backgroundDue: Timestamp?
    }

    static let version = "0.1.0"

    init(options: DaemonOptions, config: ConfigLoader.Result, loader: ConfigLoader, loop: EventLoop,
         host: EngineHost, listenFD: Int32, socketPath: String, ownsSocket: Bool) throws {
        self.options = options
        let settings = config.settings
        self.settings = settings
        configFiles = config.files
        self.loader = loader
        self.loop = loop
        self.host = host
        self.socketPath = socketPath
        self.ownsSocket = ownsSocket
        logger = JournalLogger(level: settings.logLevel)
        status = StatusReporter(interval: UInt64(max(settings.statusInterval, 0)))
        reclaim = ReclaimRunner(host: host, logger: logger, policy: ReclaimPolicy(configuration: settings.reclaimConfiguration),
                                budget: settings.memoryBudget, watermarks: settings.watermarks,
                                hold: TimeSpan(microseconds: settings.pressureHold),
                                simulated: settings.pressureSources.contains(.simulated))
        // One outbox: replies and journal entries wait in it for their batches to commit.
        server = try VarlinkServer(loop: loop, listenFD: listenFD, path: socketPath, limits: settings.limits,
                                   outbox: logger.outbox, logger: logger)
        apps = AppSupervisor(host: host, server: server, logger: logger, loop: loop, inbox: inbox,
                             settings: settings, socketPath: socketPath)
        feeds = StreamFeeds(host: host, server: server, apps: apps, policy: settings.accessPolicy)
        system = SystemEvents(host: host, logger: logger, settings: settings)
        background = BackgroundWork(settings: settings)
        dispatcher = try MethodDispatcher(
            MethodDispatcher.Parts(host: host, server: server, apps: apps, feeds: feeds, reclaim: reclaim, logger: logger,
                                   system: system, background: background),
            loader: loader, options: options, settings: settings, configFiles: config.files, version: Self.version,
            startedAt: Clock.monotonic.now(), testHooks: TestingInterface.enabled)
        service = CallService(dispatcher: dispatcher, feeds: feeds)
    }

    func start() throws {
        reclaim.reconfigure(grace: settings.reclaimGrace)
        try addSources()
        inbox.open { input in self.handle(input) }
        applyPSI()
        applyLogin()
        apps.prepareLaunches()
        server.currentBatch = host.gathering
        try server.start(inbox: inbox)
        // Restored state may have deadlines already past: fire them now, with their events.
        host.tick()
        pass()
    }

    /// The daemon's loop sources, each posting its `DaemonInput`.
    private func addSources() throws {
        if let writer = host.writer {
            // Before any pass: a finished commit releases replies and starts the next batch.
            timers.commitDone = try loop.addIO(fd: writer.completionFD, events: .readable, priority: -10,
                                               posting: { _ in .commitFinished }, to: inbox)
        }
        timers.pass = try loop.addDefer(priority: 0, posting: .pass, to: inbox)
        timers.engine = try disarmedTimer(accuracy: 1_000, posting: .engineTimer)
        timers.reclaim = try disarmedTimer(accuracy: 1_000, posting: .reclaimTimer)
        timers.app = try disarmedTimer(accuracy: 1_000, posting: .appDeadline)
        timers.measure = try disarmedTimer(accuracy: 10_000, posting: .measure)
        timers.system = try disarmedTimer(accuracy: 1_000, posting: .systemTimer)
        timers.background = try disarmedTimer(accuracy: 1_000, posting: .backgroundTimer)
        for signo in [SIGTERM, SIGINT] { try loop.addSignal(signo, posting: .stop, to: inbox) }
        try loop.addSignal(SIGHUP, posting: .reload, to: inbox)
        watchdog = ServingWatchdog(interval: ServiceManager.watchdogInterval())
        if let period = watchdog.heartbeat {
            // An idle daemon has no passes of its own: ask for one often enough to ping.
            timers.heartbeatPeriod = period
            timers.heartbeat = try loop.addTimer(at: loop.nowMonotonic + period, accuracy: period / 10,
                                                 posting: .heartbeat, to: inbox)
        }
    }

    private func disarmedTimer(accuracy: UInt64, priority: Int64 = 0, posting input: DaemonInput) throws -> TimerSource {
        let timer = try loop.addTimer(at: UInt64.max, accuracy: accuracy, priority: priority, posting: input, to: inbox)
        timer.disarm()
        return timer
    }

    func run() throws -> Int32 {
        sendStatus(prefix: "READY=1\n")
        if watchdog.passCompleted(now: loop.nowMonotonic) { ServiceManager.notify("WATCHDOG=1") }
        logger.daemon(.info, MessageID.daemonReady,
                      "scened \(Self.version) ready on \(socketPath); \(Format.count(host.engine.sessions.count, "session")) of \(Format.count(host.engine.apps.count, "app")) restored.",
                      [("SCENED_SOCKET", socketPath), ("SCENED_SESSIONS", String(host.engine.sessions.count))])
        let code = try inbox.run(loop)
        finish()
        return code
    }

    /// A clean, committed shutdown: everything gathered is committed before exiting.
    private func finish() {
        pass()
        apps.endStartedApps()
        while host.isCommitting || host.hasPending {
            for progress in host.drain() { apply(progress) }
            apply(host.startCommit())
        }
        server.flush()
        publishCommitted()
        server.flush()
        server.closeAll()
        apps.awaitStartedApps()
        reclaim.psi?.stop()
        system.login?.stop()
        if ownsSocket { unlink(socketPath) }
        logger.daemon(.info, MessageID.daemonStopped,
                      "scened stopped with \(Format.count(host.engine.sessions.count, "session")) of \(Format.count(host.engine.apps.count, "app")).",
                      [("SCENED_SESSIONS", String(host.engine.sessions.count))])
    }

    // MARK: - What wakes the daemon

    /// The one place that acts on the daemon's inputs.
    private func handle(_ input: DaemonInput) {
        switch input {
        case .pass: pass()
        case .commitFinished: onCommitFinished()
        case .engineTimer, .reclaimTimer: onTimer()
        case .appDeadline: onAppDeadline()
        case .measure: onMeasure()
        case .heartbeat: onHeartbeat()
        case .stop: beginStop(forShutdown: false)
        case .systemTimer: onSystemTimer()
        case .backgroundTimer: onBackgroundTimer()
        case .reload: reload()
        case .statusDue: onStatusDue()
        case .livelock: onLivelock()
        case .psi(let input): onPSI(input)
        case .login(let input): onLogin(input)
        case .appExited(let app): onAppExited(app)
        case .server(let input): onServer(input)
        }
    }

    private func onServer(_ input: VarlinkServer.Input) {
        server.handle(input)
        if server.takePassRequest() { requestPass() }
    }


    func requestPass() {
        timers.pass?.trigger()
    }

    private func onTimer() {
        host.tick()
        requestPass()
    }

    /// A one-shot timer that fired is disarmed: the next pass arms it again.
    private func onAppDeadline() {
        timers.appDue = nil
        requestPass()
    }

    private func onMeasure() {
        timers.measureArmed = false
        apps.measureStartedApps()
        requestPass()
    }

    private func onHeartbeat() {
        timers.heartbeat?.reschedule(after: timers.heartbeatPeriod)
        requestPass()
    }

    private func onPSI(_ input: PSISource.Input) {
        if reclaim.psi?.handle(input) == true { requestPass() }
    }

    private func onAppExited(_ app: AppID) {
        apps.processExited(app)
        requestPass()
    }

    // MARK: - Passes

    /// One pass: serve the ready clients, reclaim, start a commit if none is in flight, write,
    /// re-arm the timers, and — having served — feed the watchdog.
    private func pass() {
        // The loop's cached time is that of the wake-up: read the clock itself.
        let began = Clock.monotonic.now()
        defer { host.metrics.passLatency.record(microseconds: Clock.monotonic.now() &- began) }
        server.beginPass()
        server.serve(service)
        carryOutRequests()
        apps.superviseApps()
        _ = system.endInterruptions(closedIn: server)
        // Calls that waited for their app's launch run as if just read.
        for (conn, call) in apps.superviseLaunches() { server.resumeParked(conn, call, service) }
        carryOutRequests()
        measureBeforeDecision()
        evaluateReclaim()
        stepBackground()
        stepRouting()
        startCommit()
        server.enforceGlobalLimits()
        server.flush()
        publishCommitted()
        server.flush()
        rearmEngineTimer()
        rearmAppTimer()
        rearmMeasureTimer()
        stepSystem()
        rearmSystemTimer()
        rearmBackgroundTimer()
        if watchdog.passCompleted(now: loop.nowMonotonic) { ServiceManager.notify("WATCHDOG=1") }
        if server.takePassRequest() || apps.wantsPass { requestPass() }
    }

    /// Hands the gathered changes to the commit thread (or settles a batch that changed
    /// nothing at once), unless a batch is in flight.
    private func startCommit() {
        guard !host.isCommitting else { return }
        apply(host.startCommit())
        if host.isCommitting { watchdog.commitStarted(now: loop.nowMonotonic) }
        server.batchBegan()
    }

    /// The writer wrote a batch: its events go to the attached apps at once (a woken app waits
    /// for them, and nothing else here needs to come first). It finished one: release its
    /// replies, start the next one at once (the loop need not wait for a pass to keep the
    /// commit thread busy), write the replies, and only then publish its events to the monitors.
    private func onCommitFinished() {
        // Drains the pipe first: a read answered after this still signals again.
        let progress = host.writer?.takeProgress()
        if progress?.written != nil {
            apply(host.commitWritten())
            server.flush()
        }
        feeds.readsFinished()
        reportQuarantined()
        guard let finished = progress?.finished else {
            server.flush()
            if server.takePassRequest() || apps.wantsPass { requestPass() }
            return
        }
        watchdog.commitFinished()
        apply(host.finishCommit(finished.result))
        evaluateReclaim()
        startCommit()
        server.flush()
        publishCommitted()
        server.flush()
        if server.takePassRequest() || apps.wantsPass || systemWaitsForCommit { requestPass() }
    }

    /// Publishes the events of the batches settled since the last time, once their replies
    /// are written and the next batch is under way: fanning events out to many monitors never
    /// delays the answers of the callers who made the changes, nor the next commit. Events
    /// still go out batch by batch, in order, and a reply still means committed.
    private func publishCommitted() {
        guard !unpublished.isEmpty else { return }
        let batches = unpublished
        unpublished.removeAll(keepingCapacity: true)
        for batch in batches {
            publish(batch.events, delivered: batch.delivered)
            host.recycle(events: batch.events, commandStarts: batch.starts)
        }
        host.releaseSavedData()
    }

    private func publish(_ events: [LifecycleEvent], delivered: Bool) {
        guard !events.isEmpty else { return }
        host.metrics.observe(events)
        if !delivered { deliverToAttached(events) }
        feeds.publish(events)
    }

    /// A written batch's events to the attached apps, in commit order.
    private func deliverToAttached(_ events: [LifecycleEvent]) {
        guard !events.isEmpty else { return }
        // Before the app's process gets them: a resumed app is thawed first.
        if !apps.launches.isEmpty { apps.observeLaunches(events) }
        apps.publishToAttached(events)
    }

    /// Carries out what a commit settled.
    private func apply(_ progress: EngineHost.Progress) {
        // Replies the server makes itself (a protocol violation's error) follow the others.
        server.currentBatch = host.gathering
        switch progress {
        case .nothing:
            return
        case .written(let events):
            deliverToAttached(events)
            deliveredInFlight = true
        case .committed(let through, let events, let starts):
            let delivered = deliveredInFlight
            deliveredInFlight = false
            if !events.isEmpty {
                logger.log(batch: through, events, commandStarts: starts, pressure: reclaim.level)
                reclaim.noteActivations(events)
                reclaim.rememberSessions(events)
                statusChanged()
            }
            logger.release(through: through)
            server.settle(through: through, failure: nil)
            // Published (and then recycled) once the replies are written: `publishCommitted`.
            unpublished.append((events, starts, delivered))
        case .failed(let through, let error):
            deliveredInFlight = false
            logger.daemon(.err, MessageID.storageFailure,
                          "Commit to \(error.path) failed; those changes were not made and their callers were told: \(error.message)",
                          [("SCENED_STORE", error.path)])
            Diagnostics.error("commit failed, uncommitted changes dropped: \(error)")
            logger.release(through: through)
            server.settle(through: through, failure: Self.storageFailure(error))
            statusChanged()
        case .unsynced(let error):
            unsynced(error)
        }
    }

    /// A batch written but not made durable: its events are with the attached apps and in the
    /// log, yet the disk may not hold it (Linux may drop the pages a failed sync could not
    /// write, and a second sync would then report success). Neither its replies nor
    /// StorageFailure ("not made") would be true: scened exits, as a crash would, and its
    /// callers see their connections close unanswered; the service manager restarts it from
    /// what the store holds.
    private func unsynced(_ error: StoreError) -> Never {
        logger.daemon(.crit, MessageID.storageFailure,
                      "Commit to \(error.path) was written but could not be made durable; exiting, its callers unanswered: \(error.message)",
                      [("SCENED_STORE", error.path)])
        Diagnostics.fatal("a written commit could not be synced, exiting: \(error)")
    }

    private func reportQuarantined() {
        let rows = host.takeQuarantined()
        guard !rows.isEmpty else { return }
        for entry in QuarantineReport.entries(for: rows) { logger.send(entry) }
    }

    static func storageFailure(_ error: StoreError) -> VarlinkError {
        var p = JSONObject()
        p["message"] = .string(error.description)
        return VarlinkError(name: ManagerInterface.name + ".StorageFailure", parameters: p)
    }

    // MARK: - Reclaim

    private func evaluateReclaim() {
        carryOut(reclaim.evaluate(awaitingRelease: apps.shares.awaitingRelease, takesNotice: apps.takesNotice))
    }

    /// What an evaluation (or an answered notice) leaves to do.
    private func carryOut(_ outcome: ReclaimRunner.Outcome) {
        let settle = reclaim.policy.configuration.settle
        for freed in outcome.reclaimed { apps.noteReclaimed(freed.app, bytes: freed.bytes, settle: settle) }
        if !outcome.notices.isEmpty { apps.sendNotices(outcome.notices) }
        if outcome.levelChanged { statusChanged() }
        if outcome.evaluated { armReclaimTimer(outcome.wake) }
    }

    /// What handlers asked for while serving.
    private func carryOutRequests() {
        for request in dispatcher.takeRequests() {
            switch request {
            case .apply(let result): applyConfiguration(result)
            case .reloadFailed(let error): reloadRefused(error)
            case .reclaim(let outcome): carryOut(outcome)
            case .livelock(let seconds): startLivelock(seconds: seconds)
            }
        }
    }

    private func applyPSI() {
        let wanted = settings.pressureSources.contains(.psi)
        if wanted {
            if let psi = reclaim.psi, psi.settings == settings.psiSettings { return }
            reclaim.psi?.stop()
            let psi = PSISource(loop: loop, inbox: inbox, settings: settings.psiSettings)
            reclaim.psi = psi
            psi.start()
        } else if let psi = reclaim.psi {
            psi.stop()
            reclaim.psi = nil
        }
    }

    // MARK: - Timers

    private func rearmEngineTimer() {
        guard let timer = timers.engine else { return }
        if let due = host.engine.nextDeadline {
            timer.reschedule(at: host.clock.monotonic(at: due))
        } else {
            timer.disarm()
        }
    }

    /// The system's timer: re-armed when the earliest of its deadlines moved.
    private func rearmBackgroundTimer() {
        guard let timer = timers.background else { return }
        var due = background.nextDeadline
        if let retry = openLaunches.nextRetry, due.map({ retry < $0 }) ?? true { due = retry }
        guard due != timers.backgroundDue else { return }
        timers.backgroundDue = due
        if let due { timer.reschedule(at: host.clock.monotonic(at: due)) } else { timer.disarm() }
    }

    func backgroundTimerFired() { timers.backgroundDue = nil }

    private func rearmSystemTimer() {
        guard let timer = timers.system else { return }
        let due = system.nextDeadline
        guard due != timers.systemDue else { return }
        timers.systemDue = due
        if let due { timer.reschedule(at: host.clock.monotonic(at: due)) } else { timer.disarm() }
    }

    func systemTimerFired() { timers.systemDue = nil }

    private func rearmAppTimer() {
        guard let timer = timers.app else { return }
        let due = apps.nextDeadline
        // Every pass asks; the timer is touched only when the earliest deadline moved.
        guard due != timers.appDue else { return }
        timers.appDue = due
        if let due {
            timer.reschedule(at: host.clock.monotonic(at: due))
        } else {
            timer.disarm()
        }
    }

    /// Under pressure a decision uses a fresh reading (at most 100 ms old).
    private func measureBeforeDecision() {
        guard reclaim.level > .normal || reclaim.override != nil, apps.measuresApps else { return }
        let now = host.clock.now()
        if let last = apps.lastMeasuredAt, now < last + .milliseconds(100) { return }
        apps.measureStartedApps()
    }

    /// Every MeasureIntervalSec= while started apps are measured; every 100 ms while a
    /// reclaim waits for their freed memory to show.
    private func rearmMeasureTimer() {
        guard let timer = timers.measure, !timers.measureArmed, apps.measuresApps else { return }
        let interval: UInt64 = apps.shares.awaitingRelease ? 100_000 : UInt64(max(100_000, settings.measureInterval))
        timer.reschedule(at: loop.nowMonotonic + interval)
        timers.measureArmed = true
    }

    private func armReclaimTimer(_ at: Timestamp?) {
        guard let timer = timers.reclaim else { return }
        if let at { timer.reschedule(at: host.clock.monotonic(at: at)) } else { timer.disarm() }
    }

    // MARK: - Reload

    /// SIGHUP: re-reads the configuration and applies what can change at run time. On an
    /// error the configuration in force stays, and the error is logged and shown in STATUS=.
    /// (Reload over Varlink loads in the handler and asks for the same two steps.)
    private func reload() {
        do {
            applyConfiguration(try loader.load())
        } catch {
            reloadRefused(error)
        }
    }

    private func reloadRefused(_ error: ConfigError) {
        _ = ServiceManager.notify("RELOADING=1\nMONOTONIC_USEC=\(Clock.monotonic.now())\nSTATUS=Reloading configuration...")
        reloadError = "\(error)"
        logger.daemon(.err, MessageID.configurationReload,
                      "Reload refused, the configuration in force stays: \(error)",
                      [("SCENED_CONFIG_ERROR", "\(error)")])
        sendStatus(prefix: "READY=1\n")
    }

    private func applyConfiguration(_ result: ConfigLoader.Result) {
        _ = ServiceManager.notify("RELOADING=1\nMONOTONIC_USEC=\(Clock.monotonic.now())\nSTATUS=Reloading configuration...")
        for warning in result.warnings { Diagnostics.warning(warning) }
        var new = result.settings
        if let socket = options.socketPath { new.socketPath = socket }
        if new.socketPath != settings.socketPath {
            Diagnostics.warning("Socket= changed; it takes effect at the next start")
        }
        if new.durability != settings.durability || new.eventLogSize != settings.eventLogSize {
            Diagnostics.warning("[Store] settings take effect at the next start")
        }
        apply(new, files: result.files)
        reloadError = nil
        logger.daemon(.info, MessageID.configurationReload,
                      "Configuration reloaded from \(result.files.isEmpty ? "defaults" : result.files.joined(separator: ", ")).",
                      [("SCENED_CONFIG_FILES", result.files.joined(separator: " "))])
        sendStatus(prefix: "READY=1\n")
    }

    private func apply(_ new: DaemonSettings, files: [String]) {
        var kept = new
        kept.durability = settings.durability
        kept.eventLogSize = settings.eventLogSize
        settings = kept
        configFiles = files
        host.reconfigure(engine: new.engineConfiguration)
        logger.level = new.logLevel
        status.interval = UInt64(max(new.statusInterval, 0))
        server.limits = new.limits
        dispatcher.configure(kept, files: files)
        feeds.policy = new.accessPolicy
        apps.configure(new)
        system.configure(new)
        background.configure(new)
        applyLogin()
        system.updateLocks()
        reclaim.reconfigure(grace: new.reclaimGrace)
        reclaim.reconfigure(new.reclaimConfiguration, budget: new.memoryBudget, watermarks: new.watermarks,
                            hold: TimeSpan(microseconds: new.pressureHold),
                            simulated: new.pressureSources.contains(.simulated))
        applyPSI()
        requestPass()
    }

    // MARK: - Test hooks

    /// An always-ready source above the pass: the loop keeps iterating but serves no one, as
    /// in the first release's wedge. For `seconds` (0: for ever).
    private func startLivelock(seconds: Int) {
        Diagnostics.warning("test hook: livelocking the event loop" + (seconds > 0 ? " for \(seconds) s" : ""))
        livelockUntil = seconds == 0 ? 0 : loop.nowMonotonic + UInt64(max(0, seconds)) * 1_000_000
        timers.livelock = try? loop.addDefer(priority: -100, posting: .livelock, to: inbox)
        timers.livelock?.trigger()
    }

    private func onLivelock() {
        if let until = livelockUntil, until == 0 || loop.nowMonotonic < until {
            timers.livelock?.trigger()
        } else {
            timers.livelock?.cancel()
            timers.livelock = nil
            livelockUntil = nil
        }
    }

    // MARK: - Status

    /// Something STATUS= shows changed: sent now, or when the interval ends.
    private func statusChanged() {
        switch status.changed(now: Clock.monotonic.now()) {
        case .sendNow:
            sendStatus()
        case .arm(let at):
            if timers.status == nil {
                timers.status = try? loop.addTimer(at: at, priority: 50, posting: .statusDue, to: inbox)
            } else {
                timers.status?.reschedule(at: at)
            }
        case .wait:
            return
        }
    }

    private func onStatusDue() {
        status.timerFired()
        sendStatus()
    }

    private func sendStatus(prefix: String = "") {
        if let message = status.message(statusLine(), now: Clock.monotonic.now(), prefix: prefix) {
            _ = ServiceManager.notify(message)
        }
    }

    func statusLine() -> String {
        let engine = host.engine
        let live = engine.liveSessionCount
        var running = 0
        for app in engine.apps.values where app.process == .running { running += 1 }
        var line = "\(engine.sessions.count) sessions (\(live) live, \(engine.sessions.count - live) archived) of \(engine.apps.count) apps (\(running) running); pressure \(reclaim.level.name), \(ByteSize.format(reclaim.usage)) of \(ByteSize.format(reclaim.budget)); \(server.connectionCount) clients"
        if let reloadError { line = "Reload failed (old configuration in force): \(reloadError); " + line }
        return line
    }
}

/// The server's `ConnectionService`: calls go to the dispatcher, streams to the feeds.
private struct CallService: ConnectionService {
    let dispatcher: MethodDispatcher
    let feeds: StreamFeeds

    func handle(_ call: VarlinkCall, on conn: ClientConnection) { dispatcher.handle(call, on: conn) }
    func produce(_ conn: ClientConnection) { feeds.produce(conn) }
}
