import SceneCore
import SystemdKit

/// The daemon carrying out what the system does: a stop (R32) and sleep (R31), step by step
/// as `StopMachine` and `SleepMachine` decide at each pass.
extension Daemon {
    /// SIGTERM or SIGINT (a stop, a restart, a shutdown), or logind's PrepareForShutdown.
    func beginStop(forShutdown: Bool) {
        let timeout = TimeSpan(microseconds: settings.stopTimeout)
        let actions = system.stop.begin(now: host.clock.now(), timeout: timeout, forShutdown: forShutdown)
        if system.stop.isStopping && !forShutdown {
            _ = ServiceManager.notify("STOPPING=1\nSTATUS=Stopping: saving the scenes' state...")
        }
        if actions.contains(.holdAll) {
            let foreground = host.engine.foregroundActiveSceneCount
            logger.daemon(.info, MessageID.daemonStopped,
                          "Stopping\(forShutdown ? " for the machine's shutdown" : ""): \(Format.count(foreground, "active scene")) to the background, \(Format.count(apps.launches.processes.count, "started app")) to end, within \(timeout.formatted).",
                          [("SCENED_STOP_TIMEOUT_USEC", String(timeout.microseconds))])
        }
        carryOut(stop: actions)
        requestPass()
    }

    func onSystemTimer() {
        systemTimerFired()
        system.applyHolds()
        requestPass()
    }

    /// A stop or a sleep waits for the loop to settle: a finished commit may be what it waits for.
    var systemAwaitsSettling: Bool { system.stop.isStopping || system.sleep.nextDeadline != nil }

    /// Each pass: what the stop and sleep wait for may be done. True if a machine moved on: its
    /// next step may be due at once, and only a pass takes it (not the deadline's timer).
    @discardableResult
    func stepSystem() -> Bool {
        guard systemAwaitsSettling else { return false }
        let stopPhase = system.stop.phase
        let sleepPhase = system.sleep.phase
        let now = host.clock.now()
        let settled = !host.isCommitting && !host.hasPending
        let owes = apps.attachments.owesAnswers
        if system.stop.isStopping {
            let view = StopMachine.View(now: now, settled: settled, owesAnswers: owes,
                                        startedAppsLeft: !apps.launches.isEmpty)
            carryOut(stop: system.stop.step(view))
        }
        if system.sleep.nextDeadline != nil {
            let view = SleepMachine.View(now: now, settled: settled, owesAnswers: owes,
                                         frozen: settled && apps.launches.frozenAsWanted)
            carryOut(sleep: system.sleep.step(view))
        }
        return system.stop.phase != stopPhase || system.sleep.phase != sleepPhase
    }

    func carryOut(stop actions: [StopMachine.Action]) {
        for action in actions {
            switch action {
            case .holdAll: system.setStopping(true)
            case .terminateStartedApps: terminateStartedApps()
            case .extendTimeout(let usec): _ = ServiceManager.notify("EXTEND_TIMEOUT_USEC=\(usec)")
            case .killLeft:
                terminateStartedApps()
                apps.killStartedApps()
            case .releaseInhibitor: releaseInhibitor(sleep: false)
            case .exit: loop.exit(code: 0)
            }
        }
    }

    func carryOut(sleep actions: [SleepMachine.Action]) {
        for action in actions {
            switch action {
            case .hold(let on): system.setSleeping(on)
            case .suspendApps: system.sleep.noteSuspended(suspendForSleep())
            case .releaseInhibitor: releaseInhibitor(sleep: true)
            case .resumeApps(let list):
                for app in list where host.engine.apps[app]?.process == .suspended {
                    _ = try? host.execute(.resume(app, cause: .sleep))
                }
            }
        }
    }

    /// R32: every app scened started ends with willTerminate (if running) and reason shutdown.
    private func terminateStartedApps() {
        for app in apps.launches.processes.keys.sorted() where host.engine.apps[app].map({ $0.process != .notRunning }) == true {
            _ = try? host.execute(.terminate(app, cause: .shutdown))
        }
    }

    /// R31: every running app with no scene in the foreground; the apps suspended.
    private func suspendForSleep() -> [AppID] {
        var suspended: [AppID] = []
        for app in host.engine.apps.values where app.process == .running && !app.hasForegroundScene {
            if (try? host.execute(.suspend(app.id, cause: .sleep))) != nil { suspended.append(app.id) }
        }
        return suspended
    }
}

/// logind: its client started and stopped with `[System] FollowLogin=`, and its news.
extension Daemon {
    func applyLogin() {
        guard settings.followLogin else {
            system.login?.stop()
            system.login = nil
            system.loginState = "off"
            return
        }
        if let login = system.login {
            login.state.followIdle = settings.followIdle
            return
        }
        var loginSettings = LogindClient.Settings()
        loginSettings.followIdle = settings.followIdle
        let login = LogindClient(loop: loop, inbox: inbox, settings: loginSettings)
        system.login = login
        login.start()
        act(on: login.takeNews())
    }

    func onLogin(_ input: LogindClient.Input) {
        guard let login = system.login else { return }
        act(on: login.handle(input) + login.takeNews())
        requestPass()
    }

    private func act(on news: [LoginNews]) {
        for item in news {
            switch item {
            case .verdictsChanged: system.updateLocks()
            case .prepareForSleep(true):
                carryOut(sleep: system.sleep.prepare(now: host.clock.now(), bound: Self.sleepBound))
            case .prepareForSleep(false): carryOut(sleep: system.sleep.resumed())
            case .prepareForShutdown(true): beginStop(forShutdown: true)
            case .prepareForShutdown(false): if system.stop.cancelShutdown() { system.setStopping(false) }
            case .available: loginChanged(to: "followed", "Following logind's sessions, sleep and shutdown.")
            case .unavailable(let reason):
                loginChanged(to: "unavailable: \(reason)", "Not following logind, running without it: \(reason).")
                system.updateLocks()
            }
        }
    }

    private func loginChanged(to state: String, _ message: String) {
        system.loginState = state
        logger.daemon(.info, MessageID.daemonReady, message, [("SCENED_LOGIN", state)])
    }

    /// logind waits InhibitDelayMaxSec= (5 s by default) for delay inhibitors: sleep's chain
    /// must be done within it.
    static let sleepBound = TimeSpan.milliseconds(4_500)

    func releaseInhibitor(sleep: Bool) {
        system.login?.releaseInhibitor(sleep ? .sleep : .shutdown)
    }
}
