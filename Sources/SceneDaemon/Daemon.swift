import Glibc
import SceneCore
import SceneInterface
import SceneStore
import SystemdKit
import Varlink

/// The running daemon: one sd-event loop that owns the Manager, the socket and the store.
///
/// Work happens in passes: a pass serves the clients that are ready (each within its budget,
/// round robin), runs the reclaim policy, hands what changed to the commit thread as one batch
/// (unless one is in flight: then the batch keeps growing, group commit), and writes what can
/// be written. When a batch is committed its events are published (monitors, journal) and
/// only then are the replies that depend on it released (reply-after-commit), and the next
/// batch goes to the commit thread at once. WATCHDOG=1 is sent from completed passes only.
final class Daemon {
    let options: DaemonOptions
    private(set) var settings: DaemonSettings
    private(set) var configFiles: [String]
    let loader: ConfigLoader
    let loop: EventLoop
    let manager: Manager
    let server: VarlinkServer
    let service: ManagerVarlink
    let logger: JournalLogger
    let reclaim: ReclaimRunner
    let socketPath: String
    /// Unlinked at exit when we bound it ourselves (never a socket-activated one).
    let ownsSocket: Bool
    private var engineTimer: TimerSource?
    private var commitDone: IOSource?
    private var reclaimTimer: TimerSource?
    private var passStep: DeferSource?
    private var heartbeat: TimerSource?
    /// The earliest deadline an attached app must answer by.
    private var appTimer: TimerSource?
    private var appTimerDue: Timestamp?
    /// Reads the memory of started apps, while there are any.
    private var measureTimer: TimerSource?
    private var measureArmed = false
    private var watchdog = ServingWatchdog(interval: nil)
    /// Committed batches whose events are still to be published (`publishCommitted`).
    private var unpublished: [(events: [LifecycleEvent], starts: [Int])] = []
    /// Test hook: a source that is always ready, to show that the watchdog sees a livelock.
    private var livelock: DeferSource?
    private var status: StatusReporter!
    /// Set when the last reload failed, shown in STATUS= until the next good one.
    private var reloadError: String?
    private var reloads = 0

    static let version = "0.1.0"

    init(options: DaemonOptions, config: ConfigLoader.Result, loader: ConfigLoader, loop: EventLoop,
         manager: Manager, listenFD: Int32, socketPath: String, ownsSocket: Bool) throws {
        self.options = options
        settings = config.settings
        configFiles = config.files
        self.loader = loader
        self.loop = loop
        self.manager = manager
        self.socketPath = socketPath
        self.ownsSocket = ownsSocket
        logger = JournalLogger(level: settings.logLevel)
        reclaim = ReclaimRunner(manager: manager, logger: logger, policy: ReclaimPolicy(configuration: settings.reclaimConfiguration),
                                budget: settings.memoryBudget, watermarks: settings.watermarks,
                                hold: TimeSpan(microseconds: settings.pressureHold),
                                simulated: settings.pressureSources.contains(.simulated))
        // One outbox: replies and journal entries wait in it for their batches to commit.
        server = try VarlinkServer(loop: loop, listenFD: listenFD, path: socketPath, limits: settings.limits,
                                   outbox: logger.outbox)
        service = try ManagerVarlink(manager: manager, server: server, version: Self.version,
                                     startedAt: Clock.monotonic.now(), policy: settings.accessPolicy,
                                     testHooks: TestingInterface.enabled)
    }

    func start() throws {
        let me = Unmanaged.passUnretained(self)
        service.daemon = self
        service.attachments.deadlines = settings.appDeadlines
        service.appSettings = settings.apps
        service.socketPath = socketPath
        service.appCgroups = settings.appCgroups
        reclaim.reconfigure(grace: settings.reclaimGrace)
        reclaim.takesNotice = { app in
            // A suspended app runs no code (and a started one is frozen): it saved its state as
            // it entered the background and gets no notice, as iOS gives none to suspended apps.
            let service = me.takeUnretainedValue().service
            return service.attachments.attachment(of: app) != nil && service.manager.engine.apps[app]?.process == .running
        }
        reclaim.sendNotices = { notices in me.takeUnretainedValue().service.sendNotices(notices) }
        server.handleCall = { call, conn in me.takeUnretainedValue().service.handle(call, on: conn) }
        server.requestPass = { me.takeUnretainedValue().requestPass() }
        server.currentBatch = { me.takeUnretainedValue().manager.gathering }
        server.produceStream = { conn in me.takeUnretainedValue().service.produce(conn) }
        server.connectionClosed = { conn in me.takeUnretainedValue().service.connectionClosed(conn) }
        server.log = { entry in me.takeUnretainedValue().logger.send(entry) }
        if let writer = manager.writer {
            // Before any pass: a finished commit releases replies and starts the next batch.
            commitDone = try loop.addIO(fd: writer.completionFD, events: .readable, priority: -10) { _ in
                me.takeUnretainedValue().onCommitFinished()
            }
        }
        passStep = try loop.addDefer(priority: 0) { me.takeUnretainedValue().pass() }
        engineTimer = try loop.addTimer(at: UInt64.max, accuracy: 1_000, priority: 0) { me.takeUnretainedValue().onTimer() }
        engineTimer?.disarm()
        reclaimTimer = try loop.addTimer(at: UInt64.max, accuracy: 1_000, priority: 0) { me.takeUnretainedValue().onTimer() }
        reclaimTimer?.disarm()
        appTimer = try loop.addTimer(at: UInt64.max, accuracy: 1_000, priority: 0) {
            let daemon = me.takeUnretainedValue()
            // A one-shot timer that fired is disarmed: the next pass arms it again.
            daemon.appTimerDue = nil
            daemon.requestPass()
        }
        appTimer?.disarm()
        measureTimer = try loop.addTimer(at: UInt64.max, accuracy: 10_000, priority: 0) {
            let daemon = me.takeUnretainedValue()
            daemon.measureArmed = false
            daemon.service.measureStartedApps()
            daemon.requestPass()
        }
        measureTimer?.disarm()
        reclaim.onReclaimed = { app, bytes in
            let daemon = me.takeUnretainedValue()
            daemon.service.noteReclaimed(app, bytes: bytes, settle: daemon.reclaim.policy.configuration.settle)
        }
        reclaim.awaitingRelease = { me.takeUnretainedValue().service.shares.awaitingRelease }
        for signo in [SIGTERM, SIGINT] {
            try loop.addSignal(signo) { _ in me.takeUnretainedValue().shutdown() }
        }
        try loop.addSignal(SIGHUP) { _ in _ = me.takeUnretainedValue().reload() }
        reclaim.wakeAt = { at in me.takeUnretainedValue().armReclaimTimer(at) }
        reclaim.onLevelChange = { me.takeUnretainedValue().status.changed() }
        status = StatusReporter(loop: loop, interval: UInt64(max(settings.statusInterval, 0))) {
            me.takeUnretainedValue().statusLine()
        }
        watchdog = ServingWatchdog(interval: ServiceManager.watchdogInterval())
        if let period = watchdog.heartbeat {
            // An idle daemon has no passes of its own: ask for one often enough to ping.
            heartbeat = try loop.addTimer(at: loop.nowMonotonic + period, accuracy: period / 10, priority: 0) {
                let daemon = me.takeUnretainedValue()
                daemon.heartbeat?.reschedule(after: period)
                daemon.requestPass()
            }
        }
        applyPSI()
        service.prepareLaunches()
        try server.start()
        // Restored state may have deadlines already past: fire them now, with their events.
        manager.tick()
        pass()
    }

    func run() throws -> Int32 {
        status.sendNow("READY=1\n")
        if watchdog.passCompleted(now: loop.nowMonotonic) { ServiceManager.notify("WATCHDOG=1") }
        logger.daemon(.info, MessageID.daemonReady,
                      "scened \(Self.version) ready on \(socketPath); \(Format.count(manager.engine.sessions.count, "session")) of \(Format.count(manager.engine.apps.count, "app")) restored.",
                      [("SCENED_SOCKET", socketPath), ("SCENED_SESSIONS", String(manager.engine.sessions.count))])
        let code = try loop.run()
        // A clean, committed shutdown: everything gathered is committed before exiting.
        pass()
        service.endStartedApps()
        while manager.isCommitting || manager.hasPending {
            apply(manager.drain())
            apply(manager.startCommit())
        }
        server.flush()
        publishCommitted()
        server.flush()
        server.closeAll()
        service.awaitStartedApps()
        reclaim.psi?.stop()
        if ownsSocket { unlink(socketPath) }
        logger.daemon(.info, MessageID.daemonStopped,
                      "scened stopped with \(Format.count(manager.engine.sessions.count, "session")) of \(Format.count(manager.engine.apps.count, "app")).",
                      [("SCENED_SESSIONS", String(manager.engine.sessions.count))])
        return code
    }

    private func shutdown() {
        _ = ServiceManager.notify("STOPPING=1\nSTATUS=Shutting down...")
        loop.exit(code: 0)
    }

    func requestPass() {
        passStep?.trigger()
    }

    private func onTimer() {
        manager.tick()
        requestPass()
    }

    /// One pass: serve the ready clients, reclaim, start a commit if none is in flight, write,
    /// re-arm the timers, and — having served — feed the watchdog.
    private func pass() {
        server.beginPass()
        server.serve()
        service.superviseApps()
        service.superviseLaunches()
        measureBeforeDecision()
        reclaim.evaluate()
        startCommit()
        server.enforceGlobalLimits()
        server.flush()
        publishCommitted()
        server.flush()
        rearmEngineTimer()
        rearmAppTimer()
        rearmMeasureTimer()
        if watchdog.passCompleted(now: loop.nowMonotonic) { ServiceManager.notify("WATCHDOG=1") }
        if server.hasWork { requestPass() }
    }

    /// Hands the gathered changes to the commit thread (or settles a batch that changed
    /// nothing at once), unless a batch is in flight.
    private func startCommit() {
        guard !manager.isCommitting else { return }
        apply(manager.startCommit())
        if manager.isCommitting { watchdog.commitStarted(now: loop.nowMonotonic) }
        server.batchBegan()
    }

    /// The writer finished a batch: release its replies, start the next one at once (the loop
    /// need not wait for a pass to keep the commit thread busy), write the replies, and only
    /// then publish its events to the monitors.
    private func onCommitFinished() {
        // Drains the pipe first: a read answered after this still signals again.
        let finished = manager.writer?.takeFinished()
        service.readsFinished()
        guard let finished else {
            server.flush()
            return
        }
        watchdog.commitFinished()
        apply(manager.finishCommit(finished.result))
        reclaim.evaluate()
        startCommit()
        server.flush()
        publishCommitted()
        server.flush()
    }

    /// Publishes the events of the batches settled since the last time to the monitors, once
    /// their replies are written and the next batch is under way: fanning events out to many
    /// monitors (100 of them, say, most behind and only counting what they are owed) never
    /// delays the answers of the callers who made the changes, nor the next commit. Events
    /// still go out batch by batch, in order, and a reply still means committed.
    private func publishCommitted() {
        guard !unpublished.isEmpty else { return }
        let batches = unpublished
        unpublished.removeAll(keepingCapacity: true)
        for batch in batches {
            service.publish(batch.events)
            manager.recycle(events: batch.events, commandStarts: batch.starts)
        }
        manager.releaseSavedData()
    }

    /// Carries out what a commit settled.
    private func apply(_ progress: Manager.Progress) {
        switch progress {
        case .nothing:
            return
        case .committed(let through, let events, let starts):
            if !events.isEmpty {
                logger.log(batch: through, events, commandStarts: starts, pressure: reclaim.level)
                reclaim.noteActivations(events)
                reclaim.rememberSessions(events)
                status.changed()
            }
            logger.release(through: through)
            server.settle(through: through, failure: nil)
            // Published (and then recycled) once the replies are written: `publishCommitted`.
            unpublished.append((events, starts))
        case .failed(let through, let error):
            logger.daemon(.err, MessageID.storageFailure,
                          "Commit to \(error.path) failed; those changes were not made and their callers were told: \(error.message)",
                          [("SCENED_STORE", error.path)])
            Diagnostics.error("commit failed, uncommitted changes dropped: \(error)")
            logger.release(through: through)
            server.settle(through: through, failure: Self.storageFailure(error))
            status.changed()
        }
    }

    private func rearmEngineTimer() {
        guard let timer = engineTimer else { return }
        if let due = manager.engine.nextDeadline {
            timer.reschedule(at: manager.clock.monotonic(at: due))
        } else {
            timer.disarm()
        }
    }

    private func rearmAppTimer() {
        guard let timer = appTimer else { return }
        var due = service.attachments.nextDeadline()
        if !service.launches.isEmpty, let launch = service.launches.nextDeadline(), due.map({ launch < $0 }) ?? true {
            due = launch
        }
        // Every pass asks; the timer is touched only when the earliest deadline moved.
        guard due != appTimerDue else { return }
        appTimerDue = due
        if let due {
            timer.reschedule(at: manager.clock.monotonic(at: due))
        } else {
            timer.disarm()
        }
    }

    /// Under pressure a decision uses a fresh reading (at most 100 ms old).
    private func measureBeforeDecision() {
        guard reclaim.level > .normal || reclaim.override != nil, service.measuresApps else { return }
        let now = manager.clock.now()
        if let last = service.lastMeasuredAt, now < last + .milliseconds(100) { return }
        service.measureStartedApps()
    }

    /// Every MeasureIntervalSec= while started apps are measured; every 100 ms while a
    /// reclaim waits for their freed memory to show.
    private func rearmMeasureTimer() {
        guard let timer = measureTimer, !measureArmed, service.measuresApps else { return }
        let interval: UInt64 = service.shares.awaitingRelease ? 100_000 : UInt64(max(100_000, settings.measureInterval))
        timer.reschedule(at: loop.nowMonotonic + interval)
        measureArmed = true
    }

    private func armReclaimTimer(_ at: Timestamp?) {
        guard let timer = reclaimTimer else { return }
        if let at { timer.reschedule(at: manager.clock.monotonic(at: at)) } else { timer.disarm() }
    }

    static func storageFailure(_ error: StoreError) -> VarlinkError {
        var p = JSONObject()
        p["message"] = .string(error.description)
        return VarlinkError(name: ManagerInterface.name + ".StorageFailure", parameters: p)
    }

    // MARK: - Reload

    /// Re-reads the configuration and applies what can change at run time. On an error the
    /// configuration in force stays, and the error is logged and shown in STATUS=.
    func reload() -> Result<[String], ConfigError> {
        let monotonic = Clock.monotonic.now()
        _ = ServiceManager.notify("RELOADING=1\nMONOTONIC_USEC=\(monotonic)\nSTATUS=Reloading configuration...")
        let result: ConfigLoader.Result
        do {
            result = try loader.load()
        } catch {
            reloadError = "\(error)"
            logger.daemon(.err, MessageID.configurationReload,
                          "Reload refused, the configuration in force stays: \(error)",
                          [("SCENED_CONFIG_ERROR", "\(error)")])
            status.sendNow("READY=1\n")
            return .failure(error)
        }
        for warning in result.warnings { Diagnostics.warning(warning) }
        var new = result.settings
        if let socket = options.socketPath { new.socketPath = socket }
        if new.socketPath != settings.socketPath {
            Diagnostics.warning("Socket= changed; it takes effect at the next start")
        }
        if new.durability != settings.durability || new.eventLogSize != settings.eventLogSize {
            Diagnostics.warning("[Store] settings take effect at the next start")
        }
        apply(new)
        configFiles = result.files
        reloadError = nil
        reloads += 1
        logger.daemon(.info, MessageID.configurationReload,
                      "Configuration reloaded from \(result.files.isEmpty ? "defaults" : result.files.joined(separator: ", ")).",
                      [("SCENED_CONFIG_FILES", result.files.joined(separator: " "))])
        status.sendNow("READY=1\n")
        return .success(result.files)
    }

    private func apply(_ new: DaemonSettings) {
        var kept = new
        kept.durability = settings.durability
        kept.eventLogSize = settings.eventLogSize
        settings = kept
        manager.reconfigure(engine: new.engineConfiguration)
        logger.level = new.logLevel
        status.interval = UInt64(max(new.statusInterval, 0))
        server.limits = new.limits
        service.policy = new.accessPolicy
        service.attachments.deadlines = new.appDeadlines
        service.appSettings = new.apps
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
    func startLivelock(seconds: Int) {
        let until = loop.nowMonotonic + UInt64(max(0, seconds)) * 1_000_000
        let me = Unmanaged.passUnretained(self)
        Diagnostics.warning("test hook: livelocking the event loop" + (seconds > 0 ? " for \(seconds) s" : ""))
        livelock = try? loop.addDefer(priority: -100) {
            let daemon = me.takeUnretainedValue()
            if seconds == 0 || daemon.loop.nowMonotonic < until {
                daemon.livelock?.trigger()
            } else {
                daemon.livelock?.cancel()
                daemon.livelock = nil
            }
        }
        livelock?.trigger()
    }

    // MARK: - Status

    func statusLine() -> String {
        let engine = manager.engine
        let live = engine.liveSessionCount
        var running = 0
        for app in engine.apps.values where app.process == .running { running += 1 }
        var line = "\(engine.sessions.count) sessions (\(live) live, \(engine.sessions.count - live) archived) of \(engine.apps.count) apps (\(running) running); pressure \(reclaim.level.name), \(ByteSize.format(reclaim.usage)) of \(ByteSize.format(reclaim.budget)); \(server.connectionCount) clients"
        if let reloadError { line = "Reload failed (old configuration in force): \(reloadError); " + line }
        return line
    }
}
