import ScenedTestSupport
import Testing
@testable import SceneCore

/// What the store would hold if it applied only the persistence effects: after every command it
/// must equal the engine's state, or a change was not announced.
struct Replica {
    var sessions: [SessionID: SceneSession] = [:]
    var apps: [AppID: AppRecord] = [:]
    var tasks: [TaskToken: BackgroundTask] = [:]
    var schedules: [ScheduleKey: ScheduledTask] = [:]
    var notifications: [NotificationID: PendingNotification] = [:]
    var opens: [OpenID: PendingOpen] = [:]
    var conditions: [SessionID: ActivationConditions] = [:]

    /// The persisted part of an app record (what `AppRecord`'s storage initializer takes).
    static func persisted(_ a: AppRecord) -> AppRecord {
        AppRecord(id: a.id, process: a.process, pendingDiscards: a.pendingDiscards, idleSince: a.idleSince,
                  backgroundEnteredAt: a.backgroundEnteredAt, launchedAt: a.launchedAt, launches: a.launches,
                  baseFootprint: a.baseFootprint, activeModes: a.activeModes)
    }

    /// Applies the effects; returns a problem if an effect names something the engine lacks.
    mutating func apply(_ effects: [Effect], from engine: LifecycleEngine) -> String? {
        for effect in effects {
            switch effect {
            case .event: break
            case .sessionChanged(let id):
                // A session changed and then discarded within one command is removed later.
                if let s = engine.sessions[id] { sessions[id] = s }
                else if !effects.contains(.sessionRemoved(id)) { return "sessionChanged(\(id)) for a session the engine lacks" }
            case .sessionRemoved(let id):
                if engine.sessions[id] != nil { return "sessionRemoved(\(id)) for a session the engine still holds" }
                sessions[id] = nil
            case .appChanged(let id):
                guard let a = engine.apps[id] else { return "appChanged(\(id)) for an unknown app" }
                apps[id] = Self.persisted(a)
            case .taskChanged(let t):
                if let task = engine.tasks[t] { tasks[t] = task }
                else if !effects.contains(.taskRemoved(t)) { return "taskChanged(\(t)) for a task the engine lacks" }
            case .taskRemoved(let t):
                if engine.tasks[t] != nil { return "taskRemoved(\(t)) for a task the engine still holds" }
                tasks[t] = nil
            case .scheduleChanged(let key):
                guard let task = engine.schedules[key] else { return "scheduleChanged(\(key)) for a schedule the engine lacks" }
                schedules[key] = task
            case .scheduleRemoved(let key):
                if engine.schedules[key] != nil && !effects.contains(.scheduleChanged(key)) {
                    return "scheduleRemoved(\(key)) for a schedule the engine still holds"
                }
                schedules[key] = nil
            case .notificationChanged(let id):
                if let n = engine.notifications[id] { notifications[id] = n }
                else if !effects.contains(.notificationRemoved(id)) { return "notificationChanged(\(id)) for one the engine lacks" }
            case .notificationRemoved(let id):
                if engine.notifications[id] != nil { return "notificationRemoved(\(id)) for one the engine still holds" }
                notifications[id] = nil
            case .openChanged(let id):
                guard let open = engine.pendingOpens[id] else {
                    if effects.contains(.openRemoved(id)) { continue }
                    return "openChanged(\(id)) for an open the engine lacks"
                }
                opens[id] = open
            case .openRemoved(let id):
                if engine.pendingOpens[id] != nil { return "openRemoved(\(id)) for an open the engine still holds" }
                opens[id] = nil
            case .conditionsChanged(let id):
                conditions[id] = engine.activationConditions[id]
            }
        }
        return nil
    }

    func differences(from engine: LifecycleEngine) -> String? {
        let engineSessions = Dictionary(uniqueKeysWithValues: engine.sessions.map { ($0.key, $0.value) })
        if sessions != engineSessions {
            let ids = Set(sessions.keys).union(engineSessions.keys).filter { sessions[$0] != engineSessions[$0] }
            return "persisted sessions differ from the engine's for \(ids.sorted())"
        }
        if tasks != engine.tasks { return "persisted tasks differ from the engine's" }
        if schedules != engine.schedules { return "persisted schedules differ from the engine's" }
        if notifications != engine.notifications { return "persisted notifications differ from the engine's" }
        if opens != engine.pendingOpens { return "persisted opens differ from the engine's" }
        if conditions != engine.activationConditions { return "persisted activation conditions differ from the engine's" }
        let engineApps = engine.apps.mapValues(Self.persisted)
        if apps != engineApps {
            let ids = Set(apps.keys).union(engineApps.keys).filter { apps[$0] != engineApps[$0] }
            return "persisted apps differ from the engine's for \(ids.sorted())"
        }
        return nil
    }

    /// The snapshot a store would load after a restart.
    func snapshot(counters engine: LifecycleEngine) -> EngineSnapshot {
        EngineSnapshot(apps: apps.values.sorted { $0.id < $1.id }, sessions: sessions.values.sorted { $0.id < $1.id },
                       tasks: tasks.values.sorted { $0.token < $1.token }, clock: engine.clock,
                       nextSequence: engine.nextSequence, nextSessionNumber: engine.nextSessionNumber,
                       nextTaskNumber: engine.nextTaskNumber,
                       schedules: schedules.values.sorted { $0.key < $1.key },
                       notifications: notifications.values.sorted { $0.id < $1.id },
                       nextNotificationNumber: engine.nextNotificationNumber,
                       pendingOpens: opens.values.sorted { $0.id < $1.id }, nextOpenNumber: engine.nextOpenNumber,
                       activationConditions: conditions)
    }
}

/// One engine driven by arbitrary commands, with every check applied after every command.
struct RandomRun {
    var engine: LifecycleEngine
    var checker: ConformanceChecker
    var replica = Replica()
    var eventCounts: [EventName: Int] = [:]
    var errorCounts: [String: Int] = [:]
    var commandsApplied = 0
    var backgroundCounts = BackgroundCounts()

    init(configuration: EngineConfiguration) {
        engine = LifecycleEngine(configuration: configuration)
        checker = ConformanceChecker(options: .init(timing: configuration, strict: true, consecutiveSequence: true))
    }

    /// Applies one command at `now`; returns the first problem found, or nil.
    mutating func apply(_ command: Command, at now: Timestamp, fullCheck: Bool) -> String? {
        commandsApplied += 1
        let before = engine
        // What the timers alone do at `now`: the command must start with exactly this (timers
        // fire in handle before the command), and is predicted from the state it leaves.
        var probe = engine
        var timerEffects: [Effect] = []
        do { try probe.handle(.tick, now: now, effects: &timerEffects) } catch { return "tick refused: \(error)" }

        var effects: [Effect] = []
        var result: CommandResult?
        var failure: LifecycleError?
        do { result = try engine.handle(command, now: now, effects: &effects) } catch { failure = error }

        guard effects.count >= timerEffects.count, Array(effects.prefix(timerEffects.count)) == timerEffects else {
            return "the effects do not start with the timers due at \(now): \(events(timerEffects)) vs \(events(effects))"
        }
        let timerEvents = events(timerEffects)
        let own = Array(effects.dropFirst(timerEffects.count))
        let ownEvents = events(own)
        for e in timerEvents { eventCounts[e.name, default: 0] += 1 }
        for e in ownEvents { eventCounts[e.name, default: 0] += 1 }
        if let problem = Self.checkTimerStamps(timerEvents, before: before) { return problem }
        backgroundCounts.note(command, failed: failure != nil, before: before, probe: probe, events: timerEvents + ownEvents)

        switch (CommandOracle.predict(command, in: probe), failure) {
        case (.refused(let expected), let error?):
            errorCounts["\(error)".prefix(while: { $0 != ":" && $0 != "(" }).description, default: 0] += 1
            if !expected.matches(error) { return "refused with \(error), expected \(expected)" }
            if !own.isEmpty { return "a refused command had effects of its own: \(own)" }
            // What `snapshot` holds, compared without sorting (ErrorTests compare snapshots).
            if engine.sessions != probe.sessions || engine.apps != probe.apps || engine.tasks != probe.tasks
                || engine.clock != probe.clock || engine.nextSequence != probe.nextSequence
                || engine.nextSessionNumber != probe.nextSessionNumber || engine.nextTaskNumber != probe.nextTaskNumber
                || engine.schedules != probe.schedules || engine.notifications != probe.notifications
                || engine.nextNotificationNumber != probe.nextNotificationNumber || engine.nextScheduleDue != probe.nextScheduleDue
                || engine.pendingOpens != probe.pendingOpens || engine.nextOpenNumber != probe.nextOpenNumber
                || engine.activationConditions != probe.activationConditions {
                return "a refused command changed the engine"
            }
        case (.refused(let expected), nil):
            return "succeeded with \(ownEvents), expected refusal \(expected)"
        case (.events(let expected), let error?):
            return "refused with \(error), expected \(expected)"
        case (.events(let expected), nil):
            let actual = ownEvents.map(CommandOracle.Predicted.init)
            if actual != expected { return "emitted \(actual), expected \(expected)" }
            if let apps = CommandOracle.apps(of: command, in: probe), ownEvents.map(\.app) != apps {
                return "memory warnings went to \(ownEvents.map(\.app)), expected \(apps)"
            }
            switch command {
            case .connect:
                if result != .session(SessionID(engine.nextSessionNumber - 1)) { return "connect returned \(String(describing: result))" }
            case .open:
                let stored = engine.pendingOpens.count > probe.pendingOpens.count
                if stored ? result != .open(OpenID(probe.nextOpenNumber))
                          : result != ownEvents.last.flatMap({ $0.session }).map(CommandResult.session) {
                    return "open returned \(String(describing: result))"
                }
            case .beginTask:
                if result != .task(TaskToken(probe.nextTaskNumber)) { return "beginTask returned \(String(describing: result))" }
            case .queueNotification:
                if result != .notification(NotificationID(probe.nextNotificationNumber)) {
                    return "queueNotification returned \(String(describing: result))"
                }
            default:
                if result != .done { return "\(command) returned \(String(describing: result))" }
            }
            if let problem = Self.postcondition(command, before: probe, after: engine) { return problem }
        }
        // Command events carry the clock: never earlier than anything before (never backwards).
        if let e = ownEvents.first(where: { $0.time != engine.clock }) { return "\(e) stamped \(e.time), clock \(engine.clock)" }
        if engine.clock != max(before.clock, now) { return "clock \(engine.clock) after a command at \(now) (was \(before.clock))" }

        if case .setHolds(let policy) = command, failure == nil { checker.noteHolds(policy) }
        let violations = checker.check(events(effects)) + checker.disagreements(with: engine)
            + ConformanceChecker.consistencyViolations(of: engine)
        if !violations.isEmpty { return "violations: \(violations)" }

        if let problem = replica.apply(effects, from: engine) { return problem }
        if fullCheck, let problem = replica.differences(from: engine) { return problem }
        // The index kept entry by entry against the one a restore builds at once: the same
        // entries, and each agrees with its own buckets, sums and arrivals.
        if fullCheck, engine.candidates != CandidateIndex.build(engine.sessions) || !engine.candidates.isConsistent()
            || !CandidateIndex.build(engine.sessions).isConsistent() {
            return "the candidate index (\(engine.candidates.count) entries) differs from the background scenes"
        }
        return nil
    }

    /// Timer events carry the time they were due, computed from the state before the command.
    static func checkTimerStamps(_ timerEvents: [LifecycleEvent], before: LifecycleEngine) -> String? {
        let config = before.configuration
        var sentNow: [TaskToken: Timestamp] = [:]
        var wakeSentNow: [AppID: [String: Timestamp]] = [:]
        for e in timerEvents {
            guard let app = before.apps[e.app] else { return "timer event for unknown app: \(e)" }
            if e.cause == .background && e.name == .suspended {
                // The last open item of a wake closed unanswered (R34).
                let closes = app.wakes.compactMap { item -> Timestamp? in
                    if item.kind == .notification { return item.deadline }
                    return (item.expirationSentAt ?? wakeSentNow[e.app]?[LifecycleEngine.name(of: item.subject)])
                        .map { $0 + config.expirationGrace }
                }
                if !closes.contains(e.time) { return "\(e) at \(e.time) is no wake item's closing time (\(closes))" }
                continue
            }
            if e.cause != .timer { return "timer event \(e) has cause \(e.cause)" }
            if e.name == .backgroundTaskWillExpire, case .wake(let detail) = e.detail {
                guard let item = app.wakes.first(where: { $0.subject == .task(detail.identifier) }),
                      item.expirationSentAt == nil, item.deadline == e.time else {
                    return "\(e) at \(e.time) is not its wake item's deadline"
                }
                wakeSentNow[e.app, default: [:]][detail.identifier] = e.time
                continue
            }
            switch e.name {
            case .suspended:
                guard let idle = app.idleSince, e.time == idle + config.suspendDelay else {
                    return "\(e) at \(e.time); idle since \(app.idleSince.map(\.description) ?? "never")"
                }
            case .backgroundTaskWillExpire:
                guard case .task(let token, _) = e.detail, let task = before.tasks[token],
                      task.expirationSentAt == nil, let entered = app.backgroundEnteredAt,
                      e.time == max(entered + config.backgroundTaskBudget, task.beganAt) else {
                    return "\(e) at \(e.time) is not its task's expiry"
                }
                sentNow[token] = e.time
            case .terminated:
                guard case .terminated(.backgroundTaskExpired, _) = e.detail else { return "unexpected timer event \(e)" }
                let due = app.tasks.compactMap { t in
                    (before.tasks[t]?.expirationSentAt ?? sentNow[t]).map { $0 + config.expirationGrace }
                }.min()
                if due != e.time { return "\(e) at \(e.time), its grace ran out at \(due.map(\.description) ?? "never")" }
            default:
                return "unexpected timer event \(e)"
            }
        }
        return nil
    }

    /// The state a successful command leaves.
    static func postcondition(_ command: Command, before: LifecycleEngine, after: LifecycleEngine) -> String? {
        func scene(_ id: SessionID) -> String { after.sessions[id].map { "\($0.condition) \($0.sceneState)" } ?? "gone" }
        switch command {
        case .connect(let r):
            let id = SessionID(after.nextSessionNumber - 1)
            let held = before.holds.hold(for: r.app).level != .none
            let want: SceneActivationState = r.background ? .background : held ? .foregroundInactive : .foregroundActive
            guard let s = after.sessions[id], s.condition == .live, s.sceneState == want, s.app == r.app,
                  s.userInfo == r.userInfo, s.footprint == r.footprint, s.sceneInstance == 1 else { return "connect left \(scene(id))" }
        case .activate(let id):
            let held = after.sessions[id].map { after.holds.hold(for: $0.app).level != .none } ?? false
            guard let s = after.sessions[id], s.condition == .live,
                  s.sceneState == (held ? .foregroundInactive : .foregroundActive) else { return "activate left \(scene(id))" }
            if let old = before.sessions[id], old.condition == .archived, s.sceneInstance != old.sceneInstance + 1 {
                return "reconnection did not make a new scene instance"
            }
        case .deactivate(let id):
            if after.sessions[id]?.sceneState != .foregroundInactive { return "deactivate left \(scene(id))" }
        case .background(let id):
            if after.sessions[id]?.sceneState != .background { return "background left \(scene(id))" }
        case .disconnect(let id, _):
            guard let s = after.sessions[id], s.condition == .archived else { return "disconnect left \(scene(id))" }
        case .discard(let id, _):
            if !after.wasDiscarded(id) { return "discard left \(scene(id))" }
        case .terminate(let app, _), .launch(let app, _), .suspend(let app, _):
            let want: ProcessState
            switch command {
            case .terminate: want = .notRunning
            case .launch: want = .running
            default: want = .suspended
            }
            if after.apps[app]?.process != want { return "\(command) left the app \(String(describing: after.apps[app]?.process))" }
        case .endTask(let t):
            if after.tasks[t] != nil { return "endTask left the task" }
        case .scheduleTask, .cancelTask, .wake, .endWake, .beginActivity, .endActivity:
            if let problem = backgroundPostcondition(command, before: before, after: after) { return problem }
        case .saveState(let id, let data):
            if after.sessions[id]?.restoration != data { return "saveState did not save" }
        case .saveUserInfo(let id, let info):
            if after.sessions[id]?.userInfo != info { return "saveUserInfo did not save" }
        case .setFootprint(let id, let bytes):
            if after.sessions[id]?.footprint != bytes { return "setFootprint did not save" }
        default:
            break
        }
        // Only the command's own session moves (side-by-side scenes, §2.4), apart from
        // termination, which archives every scene of its app.
        let own: SessionID?
        switch command {
        case .activate(let id), .deactivate(let id), .background(let id), .disconnect(let id, _), .discard(let id, _): own = id
        default: own = nil
        }
        // Stored Opens delivered at a launch move their scenes too.
        let delivered = before.pendingOpens.count > after.pendingOpens.count
        if own != nil && !delivered {
            for (id, s) in before.sessions where id != own {
                guard let t = after.sessions[id] else { return "\(command) removed \(id)" }
                if t.sceneState != s.sceneState || t.condition != s.condition { return "\(command) moved another scene, \(id)" }
            }
        }
        return nil
    }
}

/// Draws random commands over a fixed set of apps, mostly aimed at sessions and tasks that
/// exist, sometimes at discarded or unknown ones, with random advances of the clock.
struct CommandGenerator {
    var rng: SplitMix64
    let apps: [AppID]
    let ghost = AppID("org.example.ghost")!
    var now: Timestamp = .zero
    var open: [SessionID] = []
    var knownSessions: UInt64 = 1
    /// Also draw what the system does (holds, sleep, a stop: R28–R33). Off, the draws are
    /// exactly those of the generator before system events existed.
    var systemEvents = false
    /// Also draw background work (R34): schedules, notifications, wakes, modes. Off, the draws
    /// are exactly those of the generator before background work existed (wakes are not stored,
    /// so the restore tests that replay a restored engine against the original keep it off).
    var backgroundWork = false
    var backgroundPercent = 10
    /// Also draw routing (Open, activation conditions). Off, the draws are those of the
    /// generator before routing existed.
    var routing = false
    var routingPercent = 12

    init(seed: UInt64, appCount: Int) {
        rng = SplitMix64(seed: seed)
        apps = (0..<appCount).map { AppID("com.example.app\($0)")! }
    }

    mutating func refresh(from engine: LifecycleEngine) {
        open.removeAll { engine.sessions.index(forKey: $0) == nil }
        while knownSessions < engine.nextSessionNumber {
            let id = SessionID(knownSessions)
            if engine.sessions.index(forKey: id) != nil { open.append(id) }
            knownSessions += 1
        }
    }

    mutating func session(_ engine: LifecycleEngine) -> SessionID {
        let r = rng.below(100)
        if r < 85, !open.isEmpty { return rng.pick(open)! }
        if r < 96, engine.nextSessionNumber > 1 { return SessionID(1 + UInt64(rng.below(Int(engine.nextSessionNumber - 1)))) }
        return SessionID(engine.nextSessionNumber + UInt64(rng.below(3)))
    }

    mutating func app(allowGhost: Bool) -> AppID {
        allowGhost && rng.chance(3) ? ghost : rng.pick(apps)!
    }

    mutating func token(_ engine: LifecycleEngine) -> TaskToken {
        let r = rng.below(100)
        if r < 80, !engine.tasks.isEmpty { return rng.pick(engine.tasks.keys.sorted())! }
        if r < 92, engine.nextTaskNumber > 1 { return TaskToken(1 + UInt64(rng.below(Int(engine.nextTaskNumber - 1)))) }
        return TaskToken(engine.nextTaskNumber + UInt64(rng.below(3)))
    }

    mutating func cause() -> EventCause {
        switch rng.below(10) {
        case 0..<5: .request
        case 5..<9: .reclaim(ReclaimNote(level: "critical", usageBefore: 2, usageAfter: 1, budget: 1, score: nil, reason: "random"))
        default: .cap("random")
        }
    }

    mutating func advance() -> TimeSpan {
        switch rng.below(100) {
        case 0..<40: .zero
        case 40..<70: .milliseconds(Int64(1 + rng.below(999)))
        case 70..<90: .milliseconds(Int64(1_000 + rng.below(5_500)))
        case 90..<98: .milliseconds(Int64(6_000 + rng.below(30_000)))
        default: .seconds(Int64(35 + rng.below(90)))
        }
    }

    /// Usually below `limit`; now and then exactly the largest footprint allowed, or just over it.
    mutating func footprint(below limit: Int) -> UInt64 {
        switch rng.below(100) {
        case 0: SceneSession.maxFootprint
        case 1: SceneSession.maxFootprint + 1 + UInt64(rng.below(1 << 30))
        default: UInt64(rng.below(limit))
        }
    }

    /// The next command and its time.
    mutating func next(_ engine: LifecycleEngine) -> (Command, Timestamp) {
        refresh(from: engine)
        now = now + advance()
        // Now and then a command stamped before the clock: it must run at the clock.
        let time = rng.chance(1) ? now - .seconds(1) : now
        if systemEvents && rng.chance(10) { return (systemCommand(engine), time) }
        if backgroundWork && rng.chance(backgroundPercent) { return (backgroundCommand(engine), time) }
        if routing && rng.chance(routingPercent) { return (routingCommand(engine), time) }
        let crowded = open.count > 40
        let roll = rng.below(crowded ? 110 : 100)
        let command: Command
        switch roll {
        case 0..<10:
            var request = ConnectRequest(app: app(allowGhost: false))
            request.background = rng.chance(30)
            if rng.chance(20) { request.userInfo = UserInfo(json: "{\"n\":\(rng.below(1000))}") }
            request.footprint = footprint(below: 1 << 20)
            request.role = rng.pick(SessionRole.allCases)!
            if rng.chance(2) { request.configurationName = rng.chance(50) ? "" : String(repeating: "x", count: 256) }
            else if rng.chance(30) { request.configurationName = "Config \(rng.below(3))" }
            command = .connect(request)
        case 10..<26: command = .activate(session(engine))
        case 26..<32: command = .deactivate(session(engine))
        case 32..<44: command = .background(session(engine))
        case 44..<50: command = .disconnect(session(engine), cause: cause())
        case 50..<54: command = .discard(session(engine), cause: cause())
        case 54..<56: command = .terminate(app(allowGhost: true), cause: cause())
        case 56: command = .processDied(app(allowGhost: true), reason: rng.chance(50) ? .exited : .hung)
        case 57..<59: command = .launch(app(allowGhost: false))
        case 59..<63:
            let data: RestorationData? = switch rng.below(3) {
            case 0: nil
            case 1: .json("{\"v\":\(rng.below(100))}")
            default: .bytes([UInt8(rng.below(256)), UInt8(rng.below(256))])
            }
            command = .saveState(session(engine), data)
        case 63..<65: command = .saveUserInfo(session(engine), UserInfo(json: "{\"u\":\(rng.below(100))}"))
        case 65..<67: command = .setFootprint(session(engine), footprint(below: 1 << 24))
        case 67: command = .setProtected(session(engine), rng.chance(50))
        case 68: command = .setAppFootprint(app(allowGhost: true), footprint(below: 1 << 24))
        case 69..<76:
            var request = BeginTaskRequest(name: "task")
            switch rng.below(10) {
            case 0..<5: request.session = session(engine)
            case 5..<8: request.app = app(allowGhost: true)
            case 8: request.session = session(engine); request.app = app(allowGhost: false)
            default: if rng.chance(50) { request.name = String(repeating: "n", count: 256); request.app = app(allowGhost: false) }
            }
            command = .beginTask(request)
        case 76..<82: command = .endTask(token(engine))
        case 82..<84:
            command = .memoryWarning(apps: rng.chance(50) ? nil : (0..<rng.below(4)).map { _ in app(allowGhost: true) },
                                     cause: cause())
        case 84..<86: command = .suspend(app(allowGhost: true), cause: cause())
        case 86..<100: command = .tick
        default: command = .discard(session(engine), cause: .request)
        }
        return (command, time)
    }
}

extension CommandGenerator {
    mutating func hold() -> Hold {
        let causes: [EventCause] = [.interruption, .lock, .session, .idle, .sleep, .shutdown]
        switch rng.below(10) {
        case 0..<4: return .none
        case 4..<7: return Hold(.inactive, cause: rng.pick(causes)!)
        default: return Hold(.background, cause: rng.pick(causes)!)
        }
    }

    /// What the system does: new holds (often lifted again), sleep's suspension and resumption,
    /// a stop's termination.
    mutating func systemCommand(_ engine: LifecycleEngine) -> Command {
        switch rng.below(10) {
        case 0..<6:
            var policy = HoldPolicy(system: hold(), standard: hold())
            for app in apps where rng.chance(30) { policy.apps[app] = hold() }
            if rng.chance(40) { policy = HoldPolicy() }
            return .setHolds(policy)
        case 6..<8: return .suspend(app(allowGhost: true), cause: .sleep)
        case 8: return .resume(app(allowGhost: true), cause: .sleep)
        default: return .terminate(app(allowGhost: true), cause: .shutdown)
        }
    }
}
