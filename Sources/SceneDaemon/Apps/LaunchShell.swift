import Glibc
import ProcessKit
import SceneCore
import SceneInterface
import SystemdKit
import Varlink

/// The shell around `LaunchTable`: parks the calls that need a started app's process, feeds
/// the table what happened, and carries out what it returns with `AppLauncher`.
extension AppSupervisor {
    /// A started process's pidfd became readable (`DaemonInput.appExited`): its exit is
    /// carried out in the pass.
    func processExited(_ app: AppID) {
        if let status = launcher?.reap(app) { pendingExits.append((app, status)) }
    }

    /// A call that launches its app, for an app scened starts (`ExecStart=`) whose process
    /// is not attached: it waits (its connection takes no further call) until the process
    /// attaches, then runs as if it had just arrived; or it fails with LaunchFailed.
    /// `apps`: those the call concerns (as authorized).
    func parkForLaunch(_ apps: [AppID], _ c: MethodCall) throws(VarlinkError) -> Bool {
        guard apps.count == 1, let app = apps.first, let settings = appSettings[app], settings.launch.starts
        else { return false }
        let attached = attachments.attachment(of: app) != nil
        let process = host.engine.apps[app]?.process ?? .notRunning
        // A running app with no process of ours (restored so, or attached by hand before) is
        // left as it is, as an app scened does not start.
        guard !attached, process == .notRunning || launches.process(of: app) != nil,
              launches.mustWait(app, attached: attached) else { return false }
        parked[app, default: []].append((c.conn.number, c.call))
        c.conn.stream = .launching(app)
        carryOut(launches.launchWanted(app, limit: settings.launch.startLimit, now: host.clock.now()))
        return true
    }

    /// Each pass: exits noticed, deadlines passed, suspended apps that may now be frozen,
    /// waiting calls settled, emptied cgroups removed. Returns the waiting calls that go ahead,
    /// for the daemon to run as if just read.
    func superviseLaunches() -> [(ClientConnection, VarlinkCall)] {
        guard !launches.isEmpty || !launchOutcomes.isEmpty || launcher?.pendingCleanUps.isEmpty == false else { return [] }
        let now = host.clock.now()
        var resumed: [(ClientConnection, VarlinkCall)] = []
        if !pendingExits.isEmpty {
            let exits = pendingExits
            pendingExits = []
            for (app, status) in exits {
                if let p = launches.process(of: app) {
                    appLog(.info, app, "\(app)'s process (pid \(p.pid)) \(status).", id: MessageID.appProcess,
                           [("SCENED_EXIT_STATUS", status)])
                }
                shares.forget(app)
                let running = (host.engine.apps[app]?.process ?? .notRunning) != .notRunning
                carryOut(launches.exited(app, status: status, stillRunning: running, now: now))
            }
        }
        carryOut(launches.expire(now: now))
        for (app, p) in launches.processes where p.wantFrozen && !p.frozen {
            let owes = attachments.attachment(of: app).map { !$0.awaiting.isEmpty } ?? false
            carryOut(launches.settle(app, owesAnswer: owes))
        }
        if !launchOutcomes.isEmpty {
            let outcomes = launchOutcomes
            launchOutcomes = []
            for (app, failure, count) in outcomes { resumed += settleWaiters(app, failure, count) }
        }
        if let launcher { for app in launcher.pendingCleanUps { launcher.cleanUp(app) } }
        return resumed
    }

    /// The committed events of started apps, before they are published.
    func observeLaunches(_ events: [LifecycleEvent]) {
        let now = host.clock.now()
        for e in events where launches.process(of: e.app) != nil {
            carryOut(launches.observe(e, now: now))
        }
    }

    /// A wake just resumed `app` (uncommitted): thaw its process now (LaunchTable.thawForWake).
    func thawForWake(_ app: AppID) {
        guard !launches.isEmpty, launches.process(of: app) != nil else { return }
        carryOut(launches.thawForWake(app))
    }

    /// The started process of `app`, for GetApp and ListApps.
    func startedProcess(_ app: AppID) -> (pid: Int32, frozen: Bool)? {
        guard !launches.isEmpty, let p = launches.process(of: app) else { return nil }
        return (p.pid, p.frozen)
    }

    /// Starts `app`'s process for a wake (R34): no call waits for it; once it attaches and is
    /// launched, the wake planner hands it its work.
    func launchForWake(_ app: AppID) {
        guard let settings = appSettings[app], settings.launch.starts, attachments.attachment(of: app) == nil,
              launches.mustWait(app, attached: false) else { return }
        carryOut(launches.launchWanted(app, limit: settings.launch.startLimit, now: host.clock.now()))
    }

    /// A process attached as `app`: a launch waiting for it has completed.
    func launchAttached(_ app: AppID) {
        let completes = launches.process(of: app).map { if case .starting = $0.phase { true } else { false } } ?? false
        carryOut(launches.attached(app))
        // Read before the waiting calls connect its scenes: what it holds now is its base.
        if completes, appSettings[app]?.launch.memory == .measured, let launcher {
            measure(app, launcher, host.clock.now())
        }
    }

    /// The app answered willTerminate or detached: a stop need not wait for its deadline.
    func launchFinished(_ app: AppID) {
        carryOut(launches.finished(app, now: host.clock.now()))
    }

    func carryOut(_ actions: [LaunchTable.Action]) {
        for action in actions {
            switch action {
            case .spawn(let app):
                spawn(app)
            case .freeze(let app):
                if let problem = launcher?.freeze(app) {
                    appLog(.warning, app, "Could not freeze \(app): \(problem).", id: MessageID.appProcess)
                }
            case .thaw(let app):
                if let problem = launcher?.thaw(app) {
                    appLog(.warning, app, "Could not thaw \(app): \(problem).", id: MessageID.appProcess)
                }
            case .signal(let app):
                launcher?.terminate(app)
            case .kill(let app):
                launcher?.kill(app)
            case .resumeWaiters(let app):
                launchOutcomes.append((app, nil, parked[app]?.count ?? 0))
            case .failWaiters(let app, let message):
                launchOutcomes.append((app, message, parked[app]?.count ?? 0))
                appLog(.err, app, "Launching \(app) failed: \(message).", id: MessageID.appProcess,
                       [("SCENED_LAUNCH_ERROR", message)])
            case .died(let app, let status):
                if let record = host.engine.apps[app], record.process != .notRunning {
                    _ = try? host.execute(.processDied(app, reason: .exited))
                }
                appLog(.notice, app, "\(app) terminated as exited: \(status).", id: MessageID.appProcess,
                       [("SCENED_EXIT_STATUS", status)])
            case .cleanUp(let app):
                launcher?.cleanUp(app)
            }
        }
    }

    /// At start, when some app is started by scened: the launcher is made now (what a dead
    /// scened left in its cgroups is killed), and an app the store has running whose process
    /// was scened's has none any more: terminated as exited, so that the store says what is
    /// true and the next launch starts a new process.
    func prepareLaunches() {
        guard appSettings.values.contains(where: { $0.launch.starts }) else { return }
        makeLauncher()
        if let launcher, !launcher.stale.isEmpty {
            Diagnostics.warning("killed what a previous scened left running in \(launcher.stale.joined(separator: ", "))")
        }
        for (app, settings) in appSettings where settings.launch.starts {
            guard let record = host.engine.apps[app], record.process != .notRunning,
                  attachments.attachment(of: app) == nil else { continue }
            _ = try? host.execute(.processDied(app, reason: .exited))
            appLog(.notice, app, "\(app) was running when scened last stopped, and its process with it: terminated as exited.",
                   id: MessageID.appProcess)
        }
    }

    private func makeLauncher() {
        guard launcher == nil else { return }
        let made = AppLauncher(loop: loop, inbox: inbox, cgroups: appCgroups)
        if let problem = made.cgroupProblem { Diagnostics.warning(problem) }
        launcher = made
    }

    private func spawn(_ app: AppID) {
        guard let settings = appSettings[app] else {
            carryOut(launches.spawnFailed(app, "\(app) has no ExecStart= any more", now: host.clock.now()))
            return
        }
        makeLauncher()
        guard let launcher else { return }
        let launch = settings.launch
        var spec = LaunchSpec(executable: launch.command[0], arguments: launch.command, environment: [])
        let me = geteuid()
        let user = UserDatabase.entry(uid: settings.uid ?? me)
        if me == 0, let uid = settings.uid, uid != 0 {
            // Root starts the app as its owner; anyone else starts it as itself.
            spec.uid = uid
            spec.gid = settings.gid ?? user?.gid ?? uid
        } else if let uid = settings.uid, uid != me {
            carryOut(launches.spawnFailed(app, "User=\(settings.user ?? String(uid)): only root can start an app as another user", now: host.clock.now()))
            return
        }
        spec.workingDirectory = launch.workingDirectory ?? user?.home
        spec.environment = launch.environment(app: app, socket: socketPath, home: user?.home, user: user?.name)
        // Its output goes where a service's would: to the journal under its app id when
        // scened logs to the journal, else to scened's own stderr.
        let stream = Journal.isConnectedToJournal() ? Journal.streamFD(identifier: app.rawValue) : nil
        spec.stdoutFD = stream ?? 2
        spec.stderrFD = stream ?? 2
        defer { if let stream { close(stream) } }
        do {
            let pid = try launcher.spawn(app, spec)
            launches.spawned(app, pid: pid, timeouts: LaunchTable.Timeouts(
                attach: launch.attachTimeout, stop: launch.stopTimeout, willTerminate: attachments.deadlines.willTerminate),
                             now: host.clock.now())
            appLog(.info, app, "Started \(app): pid \(pid), \(launch.command.joined(separator: " ")).", id: MessageID.appProcess)
        } catch {
            carryOut(launches.spawnFailed(app, error.message, now: host.clock.now()))
        }
    }

    /// The first `count` calls that waited for `app`'s launch (those parked when it settled;
    /// later ones wait for the next) go ahead (returned), or get LaunchFailed.
    private func settleWaiters(_ app: AppID, _ failure: String?, _ count: Int) -> [(ClientConnection, VarlinkCall)] {
        guard var waiting = parked[app], count > 0 else { return [] }
        var resumed: [(ClientConnection, VarlinkCall)] = []
        let settled = waiting.prefix(count)
        waiting.removeFirst(min(count, waiting.count))
        parked[app] = waiting.isEmpty ? nil : waiting
        for (number, call) in settled {
            guard let conn = server.connections[number], !conn.isClosed, case .launching(let a)? = conn.stream, a == app
            else { continue }
            if let failure {
                if !call.oneway {
                    var p = JSONObject([("app", .string(app.rawValue))])
                    p["message"] = .string("\(app) could not be launched: \(failure)")
                    _ = conn.holdError(batch: host.gathering, VarlinkError(name: ManagerInterface.name + ".LaunchFailed", parameters: p))
                }
                server.streamEnded(conn)
            } else {
                resumed.append((conn, call))
            }
        }
        return resumed
    }

    /// At a clean shutdown, before the last commit: the processes scened started end with it
    /// (the service manager would kill them with its cgroup anyway), so their apps are
    /// terminated as exited, for the store to say what is true, and the processes get SIGTERM.
    func endStartedApps() {
        guard let launcher else { return }
        for (app, _) in launches.processes {
            if let record = host.engine.apps[app], record.process != .notRunning {
                _ = try? host.execute(.processDied(app, reason: .exited))
            }
            launcher.terminate(app)
        }
    }

    /// A stop that ran out of time: whatever is left of the started apps is killed now.
    func killStartedApps() {
        guard let launcher else { return }
        for app in launches.processes.keys { launcher.kill(app) }
    }

    /// After the connections are closed (an app waiting for an answer gets none and exits):
    /// up to `wait` for the processes to go, then SIGKILL for what is left; the cgroups go.
    func awaitStartedApps(wait: TimeSpan = .seconds(2)) {
        guard let launcher else { return }
        launcher.waitForExits(upTo: wait)
        for (app, _) in launches.processes { launcher.kill(app) }
        launcher.waitForExits(upTo: .milliseconds(500))
        for app in launcher.pendingCleanUps { launcher.cleanUp(app) }
        launcher.removeBase()
    }
}
