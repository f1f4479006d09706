/// Background tasks and the timers: suspension after the delay, task expiration, and the kill of
/// an app whose task outlives its grace (R21, R24).
extension LifecycleEngine {
    static let maxTaskNameBytes = 255

    mutating func beginTask(_ request: BeginTaskRequest, effects: inout [Effect]) throws(LifecycleError) -> TaskToken {
        guard request.name.utf8.count <= Self.maxTaskNameBytes else {
            throw .invalidArgument(name: "name", reason: "longer than \(Self.maxTaskNameBytes) bytes")
        }
        let appID: AppID
        if let sid = request.session {
            let session = try openSession(sid)
            if let given = request.app, given != session.app {
                throw .invalidArgument(name: "app", reason: "session \(sid) belongs to \(session.app), not \(given)")
            }
            appID = session.app
        } else if let given = request.app {
            appID = given
        } else {
            throw .invalidArgument(name: "session", reason: "a task needs a session or an app")
        }
        guard let slot = apps.slot(of: appID) else { throw .noSuchApp(appID) }
        let app = apps.records[slot]
        guard app.process == .running else {
            throw .invalidTransition(InvalidTransition(
                command: "begin a background task for", app: appID, session: request.session, state: app.process.name,
                reason: app.process == .suspended ? "a suspended app runs no code" : "the app is not running"))
        }
        let token = TaskToken(nextTaskNumber)
        nextTaskNumber += 1
        tasks[token] = BackgroundTask(token: token, app: appID, session: request.session, name: request.name,
                                      beganAt: clock, expirationSentAt: nil)
        apps.records[slot].tasks.append(token)
        refreshActivity(slot, effects: &effects)
        effects.append(.taskChanged(token))
        effects.append(.appChanged(appID))
        return token
    }

    mutating func endTask(_ token: TaskToken, effects: inout [Effect]) throws(LifecycleError) {
        guard let task = tasks[token] else { throw .noSuchTask(token) }
        tasks[token] = nil
        let slot = apps.slot(of: task.app)!
        if let i = apps.records[slot].tasks.firstIndex(of: token) { apps.records[slot].tasks.remove(at: i) }
        refreshActivity(slot, effects: &effects)
        effects.append(.taskRemoved(token))
        effects.append(.appChanged(task.app))
    }

    // MARK: - Deadlines

    /// When the app must next be looked at, derived from its state alone. Static, over the two
    /// tables it reads: a method on `self` called from a mutating one copied the whole engine.
    static func deadline(of app: AppRecord, tasks: [TaskToken: BackgroundTask],
                         configuration: EngineConfiguration) -> Timestamp? {
        guard app.process == .running else { return nil }
        var earliest: Timestamp?
        func consider(_ t: Timestamp) { if earliest == nil || t < earliest! { earliest = t } }
        if let idle = app.idleSince { consider(idle + configuration.suspendDelay) }
        if let due = wakeDeadline(of: app, configuration: configuration) { consider(due) }
        if let entered = app.backgroundEnteredAt, !app.tasks.isEmpty {
            let expiry = entered + configuration.backgroundTaskBudget
            for token in app.tasks {
                if let sent = tasks[token]!.expirationSentAt {
                    consider(sent + configuration.expirationGrace)
                } else {
                    consider(max(expiry, tasks[token]!.beganAt))
                }
            }
        }
        return earliest
    }

    /// Queues a wake-up for the app's deadline unless an earlier or equal one is already queued.
    mutating func schedule(_ slot: Int) {
        guard let due = Self.deadline(of: apps.records[slot], tasks: tasks, configuration: configuration) else { return }
        if let queued = apps.records[slot].scheduledWake, queued <= due { return }
        apps.records[slot].scheduledWake = due
        deadlines.push(.init(time: due, app: apps.records[slot].id, slot: slot))
    }

    /// Fires everything due up to `now`, in time order, moving the clock to each deadline so that
    /// events carry the time they were due.
    mutating func advance(to now: Timestamp, effects: inout [Effect]) {
        while let next = deadlines.earliest, next.time <= now {
            _ = deadlines.popEarliest()
            guard apps.records[next.slot].scheduledWake == next.time else { continue }
            apps.records[next.slot].scheduledWake = nil
            if next.time > clock { clock = next.time }
            fireDue(next.slot, effects: &effects)
            schedule(next.slot)
        }
        if now > clock { clock = now }
    }

    mutating func fireDue(_ slot: Int, effects: inout [Effect]) {
        guard apps.records[slot].process == .running else { return }
        // A task still open one grace period after its expiration handler ran: the app is killed
        // with no willTerminate (R24).
        for token in apps.records[slot].tasks {
            if let sent = tasks[token]!.expirationSentAt, sent + configuration.expirationGrace <= clock {
                endProcess(slot, reason: .backgroundTaskExpired, cause: .timer, effects: &effects)
                return
            }
        }
        if !apps.records[slot].wakes.isEmpty && fireWakes(slot, effects: &effects) { return }
        if let entered = apps.records[slot].backgroundEnteredAt {
            let expiry = entered + configuration.backgroundTaskBudget
            for token in apps.records[slot].tasks {
                let task = tasks[token]!
                if task.expirationSentAt == nil && max(expiry, task.beganAt) <= clock {
                    tasks[token]!.expirationSentAt = clock
                    emit(.backgroundTaskWillExpire, app: slot, session: task.session, state: .process(.running),
                         cause: .timer, detail: .task(token, name: task.name), effects: &effects)
                    effects.append(.taskChanged(token))
                }
            }
        }
        if let idle = apps.records[slot].idleSince, idle + configuration.suspendDelay <= clock {
            suspend(slot, cause: .timer, effects: &effects)
        }
    }
}
