import Glibc
import SceneCore
import SceneStore
import SystemdKit
import Varlink

/// The running daemon: one sd-event loop that owns the Manager, the socket and the store.
///
/// Each wake-up handles whatever is ready (calls, timers), then a low-priority deferred step
/// commits everything changed in one transaction, publishes the committed events, and only
/// then writes the replies (reply-after-commit with group commit).
final class Daemon {
    let options: DaemonOptions
    let settings: DaemonSettings
    let loop: EventLoop
    let manager: Manager
    let listener: VarlinkListener
    let service: ManagerVarlink
    let socketPath: String
    /// Unlinked at exit when we bound it ourselves (never a socket-activated one).
    let ownsSocket: Bool
    private var engineTimer: TimerSource?
    private var finishStep: DeferSource?
    private var finishing = false
    private var status: StatusReporter!

    static let version = "0.1.0"

    init(options: DaemonOptions, settings: DaemonSettings, loop: EventLoop, manager: Manager,
         listenFD: Int32, socketPath: String, ownsSocket: Bool) throws {
        self.options = options
        self.settings = settings
        self.loop = loop
        self.manager = manager
        self.socketPath = socketPath
        self.ownsSocket = ownsSocket
        listener = VarlinkListener(loop: loop, listenFD: listenFD, path: socketPath)
        service = try ManagerVarlink(manager: manager, listener: listener, version: Self.version,
                                     startedAt: Clock.monotonic.now())
    }

    func start() throws {
        let me = Unmanaged.passUnretained(self)
        listener.handleCall = { call, conn in me.takeUnretainedValue().service.handle(call, on: conn) }
        listener.requestFlush = { me.takeUnretainedValue().requestFinish() }
        listener.produceStream = { conn in me.takeUnretainedValue().service.produce(conn) }
        // Numerically larger = less urgent: runs once every ready socket has been handled.
        finishStep = try loop.addDefer(priority: 100) { me.takeUnretainedValue().finishIteration() }
        engineTimer = try loop.addTimer(at: UInt64.max, priority: 0) { me.takeUnretainedValue().onEngineTimer() }
        engineTimer?.disarm()
        for signo in [SIGTERM, SIGINT] {
            _ = try loop.addSignal(signo) { _ in me.takeUnretainedValue().shutdown() }
        }
        status = StatusReporter(loop: loop, interval: UInt64(max(settings.statusInterval, 0))) {
            me.takeUnretainedValue().statusLine()
        }
        try listener.start()
        // Restored state may have deadlines already past: fire them now, with their events.
        manager.tick()
        finishIteration()
    }

    func run() throws -> Int32 {
        _ = loop.enableWatchdog()
        _ = ServiceManager.notify("READY=1\nSTATUS=\(statusLine())")
        Diagnostics.info("serving \(socketPath); \(manager.engine.sessions.count) sessions of \(manager.engine.apps.count) apps restored")
        let code = try loop.run()
        finishIteration()
        listener.closeAll()
        if ownsSocket { unlink(socketPath) }
        manager.store?.close()
        return code
    }

    private func shutdown() {
        _ = ServiceManager.notify("STOPPING=1\nSTATUS=Shutting down...")
        loop.exit(code: 0)
    }

    private func requestFinish() {
        guard !finishing else { return }
        finishStep?.trigger()
    }

    private func onEngineTimer() {
        manager.tick()
        requestFinish()
    }

    /// The end of a loop iteration: commit, publish, release replies, re-arm the engine's timer.
    private func finishIteration() {
        finishing = true
        defer { finishing = false }
        var failure: VarlinkError?
        switch manager.commit() {
        case .nothing:
            break
        case .committed(let events):
            service.publish(events)
            status.changed()
        case .failed(let error):
            Diagnostics.error("commit failed, changes of this iteration rolled back: \(error)")
            failure = Self.storageFailure(error)
            status.changed()
        }
        listener.flush(failure: failure)
        rearmEngineTimer()
    }

    private func rearmEngineTimer() {
        guard let timer = engineTimer else { return }
        if let due = manager.engine.nextDeadline {
            timer.reschedule(at: manager.clock.monotonic(at: due))
        } else {
            timer.disarm()
        }
    }

    static func storageFailure(_ error: StoreError) -> VarlinkError {
        var p = JSONObject()
        p["message"] = .string(error.description)
        return VarlinkError(name: ManagerInterface.name + ".StorageFailure", parameters: p)
    }

    func statusLine() -> String {
        let engine = manager.engine
        let live = engine.liveSessionCount
        var running = 0
        for app in engine.apps.values where app.process == .running { running += 1 }
        return "\(engine.sessions.count) sessions (\(live) live, \(engine.sessions.count - live) archived) of \(engine.apps.count) apps (\(running) running); \(listener.connectionCount) clients"
    }
}
