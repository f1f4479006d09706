@testable import SceneCore

/// Background work (R34) for the random runs: what each command must emit or why it is
/// refused, written from context36 and R34 rather than from the engine; the state it leaves;
/// and the generator's draws of it.
extension CommandOracle {
    static func predictBackground(_ command: Command, in e: LifecycleEngine) -> Prediction {
        let c = e.configuration
        switch command {
        case .scheduleTask(let t):
            let n = t.identifier.utf8.count
            if n == 0 || n > 255 || t.kind == .notification { return .refused(.invalidArgument) }
            let count = e.schedules.keys.count(where: { $0.app == t.app })
            if e.schedules[t.key] == nil && count >= c.maxScheduledTasks { return .refused(.limit("MaxScheduledTasks")) }
            return .events([])

        case .cancelTask(let app, let identifier):
            if e.schedules[ScheduleKey(app: app, identifier: identifier)] == nil {
                return .refused(.exactly(.noSuchScheduledTask(app, identifier: identifier)))
            }
            return .events([])

        case .queueNotification(let app, _, _):
            let pending = e.notifications.values.count(where: { $0.app == app })
            let open = e.apps[app]?.wakes.count(where: { $0.kind == .notification }) ?? 0
            return pending + open >= c.maxPendingNotifications ? .refused(.limit("MaxPendingNotifications")) : .events([])

        case .wake(let r):
            return predictWake(r, in: e)

        case .endWake(let app, let subject, _):
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            guard a.wakes.contains(where: { $0.subject == subject }) else { return .refused(.notAwaitingWake) }
            let last = a.wakes.count == 1 && a.tasks.isEmpty && a.activeModes.isEmpty
            return .events(last && a.process == .running && !a.hasForegroundScene ? [P(.suspended)] : [])

        case .expireWakes(let app, let kind):
            if kind == .notification { return .refused(.invalidArgument) }
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            return .events(a.wakes.filter { $0.kind == kind && $0.expirationSentAt == nil }.map { _ in P(.backgroundTaskWillExpire) })

        case .beginActivity(let app, let modes), .endActivity(let app, let modes):
            if modes.isEmpty || modes.rawValue > 15 { return .refused(.invalidArgument) }
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            return a.process == .running ? .events([]) : .refused(.invalidTransition)

        default:
            preconditionFailure("\(command) is not background work")
        }
    }

    /// A wake: the app running or suspended, every item its own and named once, no task twice
    /// at once; then resumed (if suspended) and one event per item, tasks first.
    static func predictWake(_ r: WakeRequest, in e: LifecycleEngine) -> Prediction {
        if r.tasks.isEmpty && r.notifications.isEmpty { return .refused(.invalidArgument) }
        guard let a = e.apps[r.app] else { return .refused(.exactly(.noSuchApp(r.app))) }
        if a.process == .notRunning { return .refused(.invalidTransition) }
        for (i, t) in r.tasks.enumerated() {
            if e.schedules[ScheduleKey(app: r.app, identifier: t)] == nil {
                return .refused(.exactly(.noSuchScheduledTask(r.app, identifier: t)))
            }
            if r.tasks[..<i].contains(t) || a.wakes.contains(where: { $0.subject == .task(t) }) {
                return .refused(.invalidArgument)
            }
        }
        for (i, n) in r.notifications.enumerated() {
            if e.notifications[n]?.app != r.app || r.notifications[..<i].contains(n) { return .refused(.invalidArgument) }
        }
        let resumed = a.process == .suspended ? [P(.resumed)] : []
        return .events(resumed + r.tasks.map { _ in P(.performBackgroundTask) }
                       + r.notifications.map { _ in P(.didReceiveNotification) })
    }
}

extension RandomRun {
    /// The state a successful background command leaves.
    static func backgroundPostcondition(_ command: Command, before: LifecycleEngine, after: LifecycleEngine) -> String? {
        switch command {
        case .scheduleTask(let t):
            guard let stored = after.schedules[t.key], stored.submittedAt == after.clock, stored.kind == t.kind,
                  stored.earliestBegin == t.earliestBegin else { return "scheduleTask left \(String(describing: after.schedules[t.key]))" }
        case .cancelTask(let app, let identifier):
            if after.schedules[ScheduleKey(app: app, identifier: identifier)] != nil { return "cancelTask left the task" }
        case .wake(let r):
            let open = after.apps[r.app]?.wakes.map(\.subject) ?? []
            for t in r.tasks {
                if after.schedules[ScheduleKey(app: r.app, identifier: t)] != nil { return "wake left the row of \(t)" }
                if !open.contains(.task(t)) { return "wake did not open \(t)" }
            }
            for n in r.notifications {
                if after.notifications[n] != nil { return "wake left the row of \(n)" }
                if !open.contains(.notification(n)) { return "wake did not open \(n)" }
            }
            if after.apps[r.app]?.process != .running { return "a woken app is not running" }
        case .endWake(let app, let subject, _):
            if after.apps[app]?.wakes.contains(where: { $0.subject == subject }) == true { return "endWake left the item open" }
        case .beginActivity(let app, let modes):
            if after.apps[app]?.activeModes.isSuperset(of: modes) != true { return "beginActivity did not declare \(modes)" }
        case .endActivity(let app, let modes):
            if after.apps[app]?.activeModes.isDisjoint(with: modes) != true { return "endActivity left \(modes)" }
        default:
            break
        }
        return nil
    }
}

extension CommandGenerator {
    /// Background work, aimed mostly at apps that have some: scheduling, notifying, waking
    /// (after launching a not-running app for it, as the daemon does), answering, expiring,
    /// declaring modes; now and then a bogus identifier or an empty request.
    mutating func backgroundCommand(_ engine: LifecycleEngine) -> Command {
        let app = app(allowGhost: false)
        switch rng.below(100) {
        case 0..<20:
            let identifier = rng.chance(3) ? (rng.chance(50) ? "" : String(repeating: "i", count: 256)) : "t\(rng.below(5))"
            let kind: WakeKind = rng.chance(2) ? .notification : rng.chance(50) ? .refresh : .processing
            let begin = now + .milliseconds(Int64(rng.below(60_000)) - 5_000)
            return .scheduleTask(ScheduledTask(app: app, identifier: identifier, kind: kind, earliestBegin: begin,
                                               submittedAt: .zero))
        case 20..<25:
            return .cancelTask(app, identifier: "t\(rng.below(6))")
        case 25..<42:
            return .queueNotification(app: app, payload: "{\"k\":\(rng.below(100))}", priority: rng.chance(30) ? .high : .normal)
        case 42..<70:
            return wakeCommand(engine)
        case 70..<82:
            return endWakeCommand(engine)
        case 82..<90:
            let busy = engine.apps.values.filter { !$0.wakes.isEmpty }.map(\.id).sorted()
            if rng.chance(30) { return .suspend(rng.pick(busy) ?? app, cause: .sleep) }
            return .expireWakes(rng.pick(busy) ?? app, kind: rng.chance(10) ? .notification : rng.chance(50) ? .refresh : .processing)
        case 90..<95:
            return .beginActivity(app, BackgroundModes(rawValue: UInt8(rng.below(17))))
        default:
            let declared = engine.apps.values.filter { !$0.activeModes.isEmpty }.map(\.id).sorted()
            return .endActivity(rng.pick(declared) ?? app, BackgroundModes(rawValue: UInt8(1 + rng.below(15))))
        }
    }

    mutating func wakeCommand(_ engine: LifecycleEngine) -> Command {
        let withWork = engine.apps.values.filter { !$0.scheduled.isEmpty || !$0.pendingNotifications.isEmpty }
            .map(\.id).sorted()
        guard let id = rng.chance(90) ? rng.pick(withWork) : app(allowGhost: true) else {
            return .wake(WakeRequest(app: app(allowGhost: false)))
        }
        let record = engine.apps[id]
        if record?.process == .notRunning && rng.chance(70) { return .launch(id, cause: .background) }
        var request = WakeRequest(app: id)
        for t in record?.scheduled ?? [] where rng.chance(60) { request.tasks.append(t) }
        for n in record?.pendingNotifications ?? [] where rng.chance(60) && request.notifications.count < 3 {
            request.notifications.append(n)
        }
        if rng.chance(4) { request.tasks.append(rng.chance(50) ? "t9" : request.tasks.first ?? "t0") }
        if rng.chance(4) { request.notifications.append(NotificationID(UInt64(1 + rng.below(Int(engine.nextNotificationNumber))))) }
        return .wake(request)
    }

    mutating func endWakeCommand(_ engine: LifecycleEngine) -> Command {
        let busy = engine.apps.values.filter { !$0.wakes.isEmpty }.sorted { $0.id < $1.id }
        guard let a = rng.pick(busy), let item = rng.pick(a.wakes), rng.chance(92) else {
            let subject: WakeItem.Subject = rng.chance(50) ? .task("t\(rng.below(5))") : .notification(NotificationID(UInt64(rng.below(9))))
            return .endWake(app(allowGhost: true), subject, success: rng.chance(50))
        }
        return .endWake(a.id, item.subject, success: rng.chance(80))
    }
}

/// How often a random run went through the corners of background work.
struct BackgroundCounts: CustomStringConvertible {
    var suspendedAfterWake = 0
    var closedByTimer = 0
    var closedBySleep = 0
    var expiredEarly = 0

    mutating func note(_ command: Command, failed: Bool, before: LifecycleEngine, probe: LifecycleEngine,
                       events: [LifecycleEvent]) {
        for e in events where e.cause == .background {
            if e.name == .suspended { suspendedAfterWake += 1 }
            if e.name == .backgroundTaskWillExpire { expiredEarly += 1 }
        }
        for (id, a) in before.apps where !a.wakes.isEmpty {
            let left = probe.apps[id]?.wakes.map(\.subject) ?? []
            closedByTimer += a.wakes.count(where: { !left.contains($0.subject) })
        }
        if case .suspend(let app, .sleep) = command, !failed { closedBySleep += probe.apps[app]?.wakes.count ?? 0 }
    }

    var description: String {
        "suspended after a wake \(suspendedAfterWake), closed by timer \(closedByTimer), by sleep \(closedBySleep), expired early \(expiredEarly)"
    }
}
