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
            logger.daemon(.info, MessageID.systemStop,
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

    /// Each pass: what the stop and sleep wait for may be done.
    func stepSystem() {
        guard system.stop.isStopping || system.sleep.nextDeadline != nil else { return }
        let now = host.clock.now()
        let settled = !host.isCommitting && !host.hasPending
        let owes = apps.attachments.owesAnswers
        var moved = false
        if system.stop.isStopping {
            let view = StopMachine.View(now: now, settled: settled, owesAnswers: owes,
                                        startedAppsLeft: !apps.launches.isEmpty)
            let actions = system.stop.step(view)
            moved = !actions.isEmpty
            carryOut(stop: actions)
        }
        if system.sleep.nextDeadline != nil {
            let view = SleepMachine.View(now: now, settled: settled, owesAnswers: owes,
                                         frozen: settled && apps.launches.frozenAsWanted && freezesComplete)
            let actions = system.sleep.step(view)
            moved = moved || !actions.isEmpty
            carryOut(sleep: actions)
        }
        // A step taken may let the next one be taken at once (nothing to wait for); answers,
        // exits, commits and deadlines bring the other passes.
        if moved { requestPass() }
    }

    /// Every process scened froze is frozen as the kernel reports it: sleep must not let go
    /// of its inhibitor while an app still runs code (R31).
    private var freezesComplete: Bool {
        guard let launcher = apps.launcher else { return true }
        return apps.launches.processes.allSatisfy { !$0.value.frozen || launcher.freezeComplete($0.key) }
    }

    /// A commit settled while a stop or a sleep waits for it.
    var systemWaitsForCommit: Bool { system.stop.isStopping || system.sleep.nextDeadline != nil }

    func carryOut(stop actions: [StopMachine.Action]) {
        for action in actions {
            switch action {
            case .holdAll: system.setStopping(true)
            case .terminateStartedApps: terminateStartedApps()
            case .extendTimeout(let usec): _ = ServiceManager.notify("EXTEND_TIMEOUT_USEC=\(usec)")
            case .killLeft:
                terminateStartedApps()
                apps.killStartedApps()
            case .releaseInhibitor:
                stopFinished()
                releaseInhibitor(sleep: false)
            case .exit:
                stopFinished()
                loop.exit(code: 0)
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

    private func stopFinished() {
        guard let began = system.stop.began else { return }
        let took = host.clock.now() - began
        logger.daemon(.info, MessageID.systemStop, "Stop prepared in \(took.formatted): the scenes' state is saved.",
                      [("SCENED_STOP_USEC", String(took.microseconds))])
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
        logger.daemon(.info, MessageID.systemFollow, message, [("SCENED_LOGIN", state)])
    }

    /// logind waits InhibitDelayMaxSec= (5 s by default) for delay inhibitors: sleep's chain
    /// must be done within it.
    static let sleepBound = TimeSpan.milliseconds(4_500)

    func releaseInhibitor(sleep: Bool) {
        system.login?.releaseInhibitor(sleep ? .sleep : .shutdown)
    }
}
