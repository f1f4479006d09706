import SceneCore

/// The apps scened starts itself (`ExecStart=`): where each one's process is in its life, and
/// what must happen to it next. Pure: the shell reports what it saw (a launch wanted, a spawn,
/// an attach, the life-cycle events committed, an exit, the time) and carries out the actions
/// that come back (spawn, freeze, thaw, signal, kill, answer the calls waiting for a launch).
///
/// A process goes starting → running → stopping → gone. It is frozen while its app is
/// suspended and owes no answer (a frozen process could not give one), thawed when it resumes.
struct LaunchTable {
    enum Phase: Equatable, Sendable {
        /// Spawned, not attached yet; the launch fails at the deadline.
        case starting(deadline: Timestamp)
        /// Attached (it may have detached since and still be running).
        case running
        /// Its app was terminated: SIGTERM at `signalAt` (nil once sent), everything left
        /// killed at `killAt` (nil once done).
        case stopping(signalAt: Timestamp?, killAt: Timestamp?)
    }

    struct Process: Equatable, Sendable {
        let app: AppID
        let pid: Int32
        var phase: Phase
        let timeouts: Timeouts
        /// The app is suspended: freeze once nothing is owed.
        var wantFrozen = false
        var frozen = false
        /// Launches asked for while this one stops: start again once it is gone.
        var relaunch = false
    }

    struct Timeouts: Equatable, Sendable {
        var attach: TimeSpan
        var stop: TimeSpan
        /// What the app has to answer willTerminate (the attachment's bound).
        var willTerminate: TimeSpan
    }

    enum Action: Equatable, Sendable {
        case spawn(AppID)
        case freeze(AppID)
        case thaw(AppID)
        /// SIGTERM to every process of the app.
        case signal(AppID)
        /// SIGKILL to every process of the app that is left.
        case kill(AppID)
        /// The calls waiting for this launch go ahead.
        case resumeWaiters(AppID)
        /// The calls waiting for this launch fail with this message.
        case failWaiters(AppID, String)
        /// The app's process is gone while its app still runs: the engine must be told
        /// (terminated as exited), with why for the journal.
        case died(AppID, String)
        /// Nothing of the app is left: its cgroup may go.
        case cleanUp(AppID)
    }

    private(set) var processes: [AppID: Process] = [:]
    /// Launches asked for and not yet spawned (the shell spawns at once; this is the gap).
    private(set) var spawning: Set<AppID> = []
    /// When each app's recent launches failed, for the start limit.
    private(set) var failures: [AppID: [Timestamp]] = [:]

    /// As systemd's StartLimitIntervalSec=/StartLimitBurst=: an app whose launches failed this
    /// many times within the interval is not started again until the interval has passed
    /// since the oldest of them, so that a caller repeating a launch that cannot succeed does
    /// not make scened fork in a loop.
    struct StartLimit: Equatable, Sendable {
        var interval = TimeSpan.seconds(10)
        var burst = 5
    }

    var isEmpty: Bool { processes.isEmpty && spawning.isEmpty }

    /// Every process whose app is suspended is frozen (sleep waits for it, R31).
    var frozenAsWanted: Bool { processes.values.allSatisfy { !$0.wantFrozen || $0.frozen || $0.phase != .running } }

    func process(of app: AppID) -> Process? { processes[app] }

    /// Whether a call that launches `app` must wait for its process: it has one starting, or
    /// one on its way out (the new one follows), or none yet.
    func mustWait(_ app: AppID, attached: Bool) -> Bool {
        if attached { return false }
        guard let p = processes[app] else { return true }
        switch p.phase {
        case .starting, .stopping: return true
        case .running: return false
        }
    }

    /// A call needs `app` launched and no process of it is attached.
    mutating func launchWanted(_ app: AppID, limit: StartLimit, now: Timestamp) -> [Action] {
        if spawning.contains(app) { return [] }
        if processes[app] == nil, let recent = failures[app] {
            let kept = recent.filter { now < $0 + limit.interval }
            failures[app] = kept.isEmpty ? nil : kept
            if kept.count >= limit.burst {
                let retry = kept[0] + limit.interval
                return [.failWaiters(app, "start limit hit: \(kept.count) failed launches within \(limit.interval.formatted); the next may be tried in \((retry - now).formatted)")]
            }
        }
        if let p = processes[app] {
            if case .stopping = p.phase { processes[app]!.relaunch = true }
            return []
        }
        spawning.insert(app)
        return [.spawn(app)]
    }

    mutating func spawned(_ app: AppID, pid: Int32, timeouts: Timeouts, now: Timestamp) {
        spawning.remove(app)
        processes[app] = Process(app: app, pid: pid, phase: .starting(deadline: now + timeouts.attach), timeouts: timeouts)
    }

    mutating func spawnFailed(_ app: AppID, _ message: String, now: Timestamp) -> [Action] {
        spawning.remove(app)
        failures[app, default: []].append(now)
        return [.failWaiters(app, message), .cleanUp(app)]
    }

    /// A process attached as the app (the one started, or one it started).
    mutating func attached(_ app: AppID) -> [Action] {
        guard var p = processes[app], case .starting = p.phase else { return [] }
        p.phase = .running
        processes[app] = p
        return [.resumeWaiters(app)]
    }

    /// A committed life-cycle event of the app, in commit order.
    mutating func observe(_ e: LifecycleEvent, now: Timestamp) -> [Action] {
        guard var p = processes[e.app] else { return [] }
        switch e.name {
        case .suspended:
            p.wantFrozen = true
            processes[e.app] = p
            return []
        case .resumed:
            p.wantFrozen = false
            let wasFrozen = p.frozen
            p.frozen = false
            processes[e.app] = p
            return wasFrozen ? [.thaw(e.app)] : []
        case .terminated:
            guard case .terminated(let reason, _) = e.detail else { return [] }
            if case .stopping = p.phase { return [] }
            p.wantFrozen = false
            var actions: [Action] = []
            if reason.deliversWillTerminate && !p.frozen {
                // It was told (willTerminate): it has that long to finish, then SIGTERM.
                let signalAt = now + p.timeouts.willTerminate
                p.phase = .stopping(signalAt: signalAt, killAt: signalAt + p.timeouts.stop)
            } else if reason == .exited && !p.frozen {
                // It quit (Detach) or closed its attach: it should be on its way out.
                p.phase = .stopping(signalAt: nil, killAt: now + p.timeouts.stop)
                actions.append(.signal(e.app))
            } else {
                // Hung, out of background time, or suspended (a frozen process runs no code
                // and gets no willTerminate): killed, as iOS kills such processes.
                p.phase = .stopping(signalAt: nil, killAt: nil)
                actions.append(.kill(e.app))
            }
            processes[e.app] = p
            return actions
        default:
            return []
        }
    }

    /// A wake resumed the app in the batch being gathered: thawed now, so that the kernel's
    /// thaw overlaps the commit; its `resumed` event, observed after the commit, then finds
    /// it running. Until the event arrives the process has nothing to read and waits.
    mutating func thawForWake(_ app: AppID) -> [Action] {
        guard var p = processes[app], p.frozen || p.wantFrozen else { return [] }
        let wasFrozen = p.frozen
        p.wantFrozen = false
        p.frozen = false
        processes[app] = p
        return wasFrozen ? [.thaw(app)] : []
    }

    /// The app answered willTerminate or detached while stopping: no need to wait any longer.
    mutating func finished(_ app: AppID, now: Timestamp) -> [Action] {
        guard var p = processes[app], case .stopping(.some, _) = p.phase else { return [] }
        p.phase = .stopping(signalAt: nil, killAt: now + p.timeouts.stop)
        processes[app] = p
        return [.signal(app)]
    }

    /// Freezes a process whose app is suspended once it owes no answer.
    mutating func settle(_ app: AppID, owesAnswer: Bool) -> [Action] {
        guard var p = processes[app], p.wantFrozen, !p.frozen, !owesAnswer, p.phase == .running else { return [] }
        p.frozen = true
        processes[app] = p
        return [.freeze(app)]
    }

    /// The process the table knows for `app` exited (its pidfd said so); `stillRunning` is
    /// whether the engine still has the app running or suspended.
    mutating func exited(_ app: AppID, status: String, stillRunning: Bool, now: Timestamp) -> [Action] {
        guard let p = processes.removeValue(forKey: app) else { return [] }
        // Anything it started goes with it: no process of a terminated app outlives it.
        var actions: [Action] = [.kill(app)]
        switch p.phase {
        case .starting:
            failures[app, default: []].append(now)
            actions.append(.failWaiters(app, "the process (pid \(p.pid)) \(status) before it attached"))
        case .running, .stopping:
            // Stopping too: the engine must not keep an app running whose process is gone.
            if stillRunning { actions.append(.died(app, "its process (pid \(p.pid)) \(status)")) }
        }
        actions.append(.cleanUp(app))
        if p.relaunch {
            spawning.insert(app)
            actions.append(.spawn(app))
        }
        return actions
    }

    /// Deadlines passed: attaches that did not come, stops that take too long.
    mutating func expire(now: Timestamp) -> [Action] {
        var actions: [Action] = []
        // Written back after the walk, and only what changed: storing into `processes` while
        // iterating it copied the whole table on every pass (it showed in a profile of
        // `scened-bench wake` with one started app).
        var changed: [(AppID, Process)] = []
        for (app, var p) in processes {
            switch p.phase {
            case .starting(let deadline) where deadline <= now:
                failures[app, default: []].append(now)
                p.phase = .stopping(signalAt: nil, killAt: nil)
                actions += [.kill(app), .failWaiters(app, "the process (pid \(p.pid)) did not attach within \(p.timeouts.attach.formatted)")]
            case .stopping(let signalAt, let killAt):
                var s = signalAt, k = killAt
                if let at = s, at <= now {
                    s = nil
                    actions.append(.signal(app))
                }
                if s == nil, let at = k, at <= now {
                    k = nil
                    if p.frozen { p.frozen = false }
                    actions.append(.kill(app))
                }
                guard s != signalAt || k != killAt else { continue }
                p.phase = .stopping(signalAt: s, killAt: k)
            default:
                continue
            }
            changed.append((app, p))
        }
        for (app, p) in changed { processes[app] = p }
        return actions
    }

    func nextDeadline() -> Timestamp? {
        var next: Timestamp?
        func consider(_ t: Timestamp?) {
            guard let t else { return }
            if next == nil || t < next! { next = t }
        }
        for p in processes.values {
            switch p.phase {
            case .starting(let deadline): consider(deadline)
            case .stopping(let signalAt, let killAt): consider(signalAt ?? killAt)
            case .running: break
            }
        }
        return next
    }
}
