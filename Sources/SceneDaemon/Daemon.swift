import Glibc
import SceneCore
import SceneStore
import SystemdKit
import Varlink

/// The running daemon: one sd-event loop that owns the Manager, the socket and the store.
///
/// Each wake-up handles whatever is ready (calls, timers), then a low-priority deferred step
/// runs the reclaim policy, commits everything changed in one transaction, publishes the
/// committed events (monitors, journal), and only then writes the replies (reply-after-commit
/// with group commit).
final class Daemon {
    let options: DaemonOptions
    private(set) var settings: DaemonSettings
    private(set) var configFiles: [String]
    let loader: ConfigLoader
    let loop: EventLoop
    let manager: Manager
    let listener: VarlinkListener
    let service: ManagerVarlink
    let logger: JournalLogger
    let monitor: PressureMonitor
    let reclaim: ReclaimController
    let socketPath: String
    /// Unlinked at exit when we bound it ourselves (never a socket-activated one).
    let ownsSocket: Bool
    private var engineTimer: TimerSource?
    private var commitDone: IOSource?
    private var reclaimTimer: TimerSource?
    private var finishStep: DeferSource?
    private var finishing = false
    /// Work was queued while finishing (a paused client resumed and sent more): run again.
    private var finishAgain = false
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
        monitor = PressureMonitor(budget: settings.memoryBudget, watermarks: settings.watermarks,
                                  hold: TimeSpan(microseconds: settings.pressureHold),
                                  simulated: settings.pressureSources.contains(.simulated))
        reclaim = ReclaimController(manager: manager, monitor: monitor, logger: logger,
                                    policy: ReclaimPolicy(configuration: settings.reclaimConfiguration))
        listener = VarlinkListener(loop: loop, listenFD: listenFD, path: socketPath)
        listener.maxConnections = settings.maxConnections
        service = try ManagerVarlink(manager: manager, listener: listener, version: Self.version,
                                     startedAt: Clock.monotonic.now(), testHooks: TestingInterface.enabled)
    }

    func start() throws {
        let me = Unmanaged.passUnretained(self)
        service.daemon = self
        listener.handleCall = { call, conn in me.takeUnretainedValue().service.handle(call, on: conn) }
        listener.requestFlush = { me.takeUnretainedValue().requestFinish() }
        listener.currentBatch = { me.takeUnretainedValue().manager.gathering }
        if let writer = manager.writer {
            // Medium priority: a finished commit releases replies before new calls are read.
            commitDone = try loop.addIO(fd: writer.completionFD, events: .readable, priority: -10) { _ in
                me.takeUnretainedValue().onCommitFinished()
            }
        }
        listener.produceStream = { conn in me.takeUnretainedValue().service.produce(conn) }
        // Numerically larger = less urgent: runs once every ready socket has been handled.
        finishStep = try loop.addDefer(priority: 100) { me.takeUnretainedValue().finishIteration() }
        engineTimer = try loop.addTimer(at: UInt64.max, accuracy: 1_000, priority: 0) { me.takeUnretainedValue().onTimer() }
        engineTimer?.disarm()
        reclaimTimer = try loop.addTimer(at: UInt64.max, accuracy: 1_000, priority: 0) { me.takeUnretainedValue().onTimer() }
        reclaimTimer?.disarm()
        for signo in [SIGTERM, SIGINT] {
            try loop.addSignal(signo) { _ in me.takeUnretainedValue().shutdown() }
        }
        try loop.addSignal(SIGHUP) { _ in _ = me.takeUnretainedValue().reload() }
        reclaim.wakeAt = { at in me.takeUnretainedValue().armReclaimTimer(at) }
        reclaim.onLevelChange = { me.takeUnretainedValue().status.changed() }
        status = StatusReporter(loop: loop, interval: UInt64(max(settings.statusInterval, 0))) {
            me.takeUnretainedValue().statusLine()
        }
        applyPSI()
        try listener.start()
        // Restored state may have deadlines already past: fire them now, with their events.
        manager.tick()
        finishIteration()
    }

    func run() throws -> Int32 {
        _ = loop.enableWatchdog()
        status.sendNow("READY=1\n")
        logger.daemon(.info, MessageID.daemonReady,
                      "scened \(Self.version) ready on \(socketPath); \(Format.count(manager.engine.sessions.count, "session")) of \(Format.count(manager.engine.apps.count, "app")) restored.",
                      [("SCENED_SOCKET", socketPath), ("SCENED_SESSIONS", String(manager.engine.sessions.count))])
        let code = try loop.run()
        // A clean, committed shutdown: everything gathered is committed before exiting.
        finishIteration()
        while manager.isCommitting || manager.hasPending {
            apply(manager.drain())
            apply(manager.startCommit())
        }
        listener.flush()
        listener.closeAll()
        monitor.psi?.stop()
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

    private func requestFinish() {
        if finishing {
            finishAgain = true
            return
        }
        finishStep?.trigger()
    }

    private func onTimer() {
        manager.tick()
        requestFinish()
    }

    /// The end of a loop iteration: reclaim, hand the batch to the writer (or settle it at once
    /// if it changed nothing), let paused clients go on, write what can be written, re-arm
    /// timers.
    private func finishIteration() {
        finishing = true
        finishAgain = false
        defer {
            finishing = false
            if finishAgain { finishStep?.trigger() }
        }
        reclaim.evaluate()
        apply(manager.startCommit())
        listener.endTurn()
        listener.flush()
        rearmEngineTimer()
    }

    /// The writer finished a batch: publish it and release its replies, then start the next.
    private func onCommitFinished() {
        guard let finished = manager.writer?.takeFinished() else { return }
        apply(manager.finishCommit(finished.result))
        requestFinish()
    }

    /// Carries out what a commit settled.
    private func apply(_ progress: Manager.Progress) {
        switch progress {
        case .nothing:
            return
        case .committed(let through, let events, let starts):
            if !events.isEmpty {
                service.publish(events)
                logger.log(batch: through, events, commandStarts: starts, pressure: reclaim.level)
                reclaim.noteActivations(events)
                status.changed()
            }
            logger.release(through: through)
            listener.settle(through: through, failure: nil)
        case .failed(let through, let error):
            logger.daemon(.err, MessageID.storageFailure,
                          "Commit to \(error.path) failed; those changes were not made and their callers were told: \(error.message)",
                          [("SCENED_STORE", error.path)])
            Diagnostics.error("commit failed, uncommitted changes dropped: \(error)")
            logger.release(through: through)
            listener.settle(through: through, failure: Self.storageFailure(error))
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

    private func armReclaimTimer(_ at: Timestamp?) {
        guard let timer = reclaimTimer else { return }
        if let at { timer.reschedule(at: manager.clock.monotonic(at: at)) } else { timer.disarm() }
    }

    static func storageFailure(_ error: StoreError) -> VarlinkError {
        var p = JSONObject()
        p["message"] = .string(error.description)
        return VarlinkError(name: ManagerInterface.name + ".StorageFailure", parameters: p)
    }

    // MARK: - Pressure

    private func applyPSI() {
        let wanted = settings.pressureSources.contains(.psi)
        if wanted {
            if let psi = monitor.psi, psi.settings == settings.psiSettings { return }
            monitor.psi?.stop()
            let psi = PSISource(loop: loop, settings: settings.psiSettings)
            let me = Unmanaged.passUnretained(self)
            psi.onChange = { me.takeUnretainedValue().requestFinish() }
            monitor.psi = psi
            psi.start()
        } else if let psi = monitor.psi {
            psi.stop()
            monitor.psi = nil
        }
    }

    /// Operator override (SetPressure / ClearPressure).
    func setPressureOverride(_ level: PressureLevel?, duration: Int64?) {
        if let level, level > .normal {
            let until = duration.map { manager.clock.now() + TimeSpan(microseconds: $0) }
            monitor.override = PressureMonitor.Override(level: level, until: until)
        } else {
            monitor.override = nil
        }
        requestFinish()
        // Evaluate now so that the reply already shows the new level.
        reclaim.evaluate()
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
        listener.maxConnections = new.maxConnections
        monitor.reconfigure(budget: new.memoryBudget, watermarks: new.watermarks,
                            hold: TimeSpan(microseconds: new.pressureHold),
                            simulated: new.pressureSources.contains(.simulated))
        reclaim.policy.configuration = new.reclaimConfiguration
        applyPSI()
        requestFinish()
    }

    // MARK: - Status

    func statusLine() -> String {
        let engine = manager.engine
        let live = engine.liveSessionCount
        var running = 0
        for app in engine.apps.values where app.process == .running { running += 1 }
        var line = "\(engine.sessions.count) sessions (\(live) live, \(engine.sessions.count - live) archived) of \(engine.apps.count) apps (\(running) running); pressure \(reclaim.level.name), \(Format.bytes(monitor.usage)) of \(Format.bytes(monitor.budget)); \(listener.connectionCount) clients"
        if let reloadError { line = "Reload failed (old configuration in force): \(reloadError); " + line }
        return line
    }
}
