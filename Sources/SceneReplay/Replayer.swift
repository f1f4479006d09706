import SceneCore

/// How to replay a trace.
public struct ReplaySettings: Sendable {
    public var order: VictimOrder
    /// The base budget, replacing the trace's (absolute budget lines are rescaled so that their
    /// ratio to the trace's first one is kept). nil: the trace's budget lines, unlimited before
    /// the first one.
    public var budget: UInt64?
    /// The policy's settings; `budget` is set by the replayer.
    public var reclaim: ReclaimConfiguration
    public var engine: EngineConfiguration
    /// The pressure gauge's hold time before a level drops.
    public var hold: TimeSpan
    /// After the last event, keep deciding at the policy's and the gauge's times for at most this
    /// long (until pressure is over).
    public var tail: TimeSpan
    /// Ack latency above which a victim counts as slow (the 2 s warning grace of §3.5; reporting
    /// only).
    public var slowAckMs: Int64
    /// Record the usage line and the actions for a chart.
    public var recordTimeline: Bool

    public init(order: VictimOrder = .ours, budget: UInt64? = nil, reclaim: ReclaimConfiguration = ReclaimConfiguration(),
                engine: EngineConfiguration = .standard, hold: TimeSpan = .seconds(4), tail: TimeSpan = .seconds(300),
                slowAckMs: Int64 = 2000, recordTimeline: Bool = false) {
        self.order = order
        self.budget = budget
        self.reclaim = reclaim
        self.engine = engine
        self.hold = hold
        self.tail = tail
        self.slowAckMs = slowAckMs
        self.recordTimeline = recordTimeline
    }
}

/// A monotonic clock in nanoseconds, injected to time `decide` (the library reads no clock).
public typealias NanosecondClock = () -> UInt64

/// What the replayer saw at one decision; handed to an observer (tests check invariants on it).
public struct DecisionRecord {
    public var time: Timestamp
    public var level: PressureLevel
    /// Whether the level came from an explicit `pressure` line rather than the gauge.
    public var external: Bool
    public var usageBefore: UInt64
    public var usageAfter: UInt64
    public var budget: UInt64?
    public var lowTarget: UInt64
    public var plan: ReclaimPlan
    /// The engine and the policy as they were when `decide` was called.
    public var engineBefore: LifecycleEngine
    public var policyBefore: ReclaimPolicy
}

/// One point of the usage line, and one marked action, for the chart.
public struct TimelinePoint: Sendable, Equatable {
    public var time: Int64
    public var usage: UInt64
    /// nil: unlimited.
    public var budget: UInt64?

    public init(time: Int64, usage: UInt64, budget: UInt64?) {
        self.time = time
        self.usage = usage
        self.budget = budget
    }
}

public struct TimelineMark: Sendable, Equatable {
    public enum Kind: String, Sendable { case disconnect, terminate, warning, suspend, discard }
    public var time: Int64
    public var kind: Kind
    public var usage: UInt64

    public init(time: Int64, kind: Kind, usage: UInt64) {
        self.time = time
        self.kind = kind
        self.usage = usage
    }
}

public struct ReplayResult: Sendable {
    public var metrics: ReplayMetrics
    public var points: [TimelinePoint] = []
    public var marks: [TimelineMark] = []
    /// Trace-level problems worth showing (first few refusals).
    public var notes: [String] = []
    /// With a timeline: one line per restore and per victim.
    public var log: [String] = []

    public init(metrics: ReplayMetrics) { self.metrics = metrics }
}

/// Drives the real `ReclaimPolicy` on a `LifecycleEngine` with a virtual clock, following a
/// trace (reclaim-policy.md §3.7).
///
/// One engine and one `ReclaimController` per run — SceneCore's, the one the daemon runs.
/// Each trace scene becomes a session, of an app of its own unless the line names one. The
/// controller is evaluated after every trace event and at the time it asks to be woken; it
/// decides for itself whether to consult the policy (as in the daemon). Its level comes from
/// its gauge (usage against the current budget, with hysteresis and hold), raised by an
/// explicit `pressure` line, which acts as an operator's override until the next such line.
/// Its commands run on the engine, and the metrics are counted from what the engine does, not
/// from what the plan says.
public struct Replayer {
    public let trace: Trace
    public let settings: ReplaySettings
    let clock: NanosecondClock?
    /// Called after every decision with what it saw.
    var observer: ((DecisionRecord) -> Void)?
    /// Called with everything the replay feeds the engine and the controller, in order, so
    /// that another driver (the daemon's, in a test) can be fed exactly the same.
    var inputObserver: ((ReplayInput, Timestamp) -> Void)?
    /// Called with every reclaim command the controller asked for, and whether the engine took it.
    var stepObserver: ((Command, Bool, Timestamp) -> Void)?

    var engine: LifecycleEngine
    var controller: ReclaimController
    var metrics: ReplayMetrics
    var result: ReplayResult

    var sessionOf: [String: SessionID] = [:]
    var sceneOf: [SessionID: String] = [:]
    var openLine: [String: TraceScene] = [:]
    var appOf: [String: AppID] = [:]
    var namedApps: [String: AppID] = [:]
    var appBase: [String: UInt64] = [:]
    var acks: [String: AckProfile] = [:]
    /// Sessions a cap discarded, by scene name, to reopen cold if the trace uses them again.
    var capDiscarded: Set<String> = []

    /// The base budget (nil = unlimited) and the current scale on it.
    var baseBudget: UInt64?
    var scale = 1.0
    let firstTraceBudget: UInt64?
    var eventIndex = 0
    let oracle: NextUseOracle?

    var wake: Timestamp?
    var inEpisode = false
    var episodeOnset = Timestamp.zero
    var relieved = false
    var reclaimedAt: [SessionID: Timestamp] = [:]
    var lastSampleTime = Timestamp.zero
    var lastUsage: UInt64 = 0
    var lastBudget: UInt64?
    var measureOnly = false
    /// Tests: replaces the OPT oracle with a rank per scene, asked at every decision (higher
    /// goes first), turning the `.opt` order into any other order, fixed or adaptive.
    var rankOverride: ((String) -> Int)?

    public init(trace: Trace, settings: ReplaySettings, clock: NanosecondClock? = nil) {
        self.trace = trace
        self.settings = settings
        self.clock = clock
        engine = LifecycleEngine(configuration: settings.engine)
        var reclaim = settings.reclaim
        reclaim.budget = .max
        controller = ReclaimController(policy: ReclaimPolicy(configuration: reclaim, order: settings.order),
                                       gauge: PressureGauge(watermarks: settings.reclaim.watermarks, hold: settings.hold))
        metrics = ReplayMetrics(policy: settings.order)
        result = ReplayResult(metrics: metrics)
        var first: UInt64?
        for e in trace.events {
            if case .budget(.bytes(let b)) = e.kind {
                first = b
                break
            }
        }
        firstTraceBudget = first
        baseBudget = settings.budget
        oracle = settings.order == .opt ? NextUseOracle(trace) : nil
    }

    /// Replays `trace` once with `settings`.
    public static func run(_ trace: Trace, settings: ReplaySettings, clock: NanosecondClock? = nil,
                           observer: ((DecisionRecord) -> Void)? = nil,
                           inputs: ((ReplayInput, Timestamp) -> Void)? = nil,
                           steps: ((Command, Bool, Timestamp) -> Void)? = nil) -> ReplayResult {
        var replayer = Replayer(trace: trace, settings: settings, clock: clock)
        replayer.observer = observer
        replayer.inputObserver = inputs
        replayer.stepObserver = steps
        replayer.run()
        return replayer.result
    }

    /// The working set: peak resident bytes of the trace with an unlimited budget, no explicit
    /// pressure and no reclaim.
    public static func workingSet(of trace: Trace, engine: EngineConfiguration = .standard) -> UInt64 {
        var replayer = Replayer(trace: trace, settings: ReplaySettings(engine: engine))
        replayer.measureOnly = true
        replayer.run()
        return replayer.metrics.peakBytes
    }

    // MARK: - The run

    mutating func run() {
        let events = trace.events
        for (index, event) in events.enumerated() {
            let t = Self.timestamp(event.time)
            runWakes(before: t)
            eventIndex = index
            apply(event, at: t)
            sample(at: t)
            switch event.kind {
            case .meta, .ackProfile: break
            default: if !measureOnly { decide(at: t) }
            }
        }
        let end = Self.timestamp(events.last?.time ?? 0)
        eventIndex = events.count
        if !measureOnly {
            let horizon = end + settings.tail
            while let w = wake, w <= horizon {
                decide(at: w)
            }
        }
        let finish = max(end, lastSampleTime)
        sample(at: finish)
        if inEpisode && !relieved { metrics.unrelievedEpisodes += 1 }
        metrics.budget = settings.budget ?? firstTraceBudget
        result.metrics = metrics
    }

    static func timestamp(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    mutating func runWakes(before t: Timestamp) {
        while let w = wake, w < t {
            decide(at: w)
        }
    }

    /// The budget now, nil = unlimited.
    var currentBudget: UInt64? {
        guard let base = baseBudget else { return nil }
        return UInt64((Double(base) * scale).rounded())
    }

    var lowTarget: UInt64 {
        guard let b = currentBudget else { return .max }
        return UInt64(Double(b) * settings.reclaim.watermarks.low)
    }

    /// Integrates the overshoot up to `t`, then takes the new usage (peak, relief).
    mutating func sample(at t: Timestamp) {
        if t > lastSampleTime {
            if let b = lastBudget, lastUsage > b {
                metrics.overshoot += Double(lastUsage - b) * (t - lastSampleTime).seconds
            }
            lastSampleTime = t
        }
        let usage = engine.residentBytes
        let budget = currentBudget
        if usage > metrics.peakBytes { metrics.peakBytes = usage }
        if let b = budget, usage > b, usage - b > metrics.peakOverBudget { metrics.peakOverBudget = usage - b }
        if inEpisode && !relieved && usage <= lowTarget {
            relieved = true
            metrics.timesToRelief.append((t - episodeOnset).microseconds / 1000)
        }
        if settings.recordTimeline && (usage != lastUsage || budget != lastBudget || result.points.isEmpty) {
            result.points.append(TimelinePoint(time: t.microseconds / 1000, usage: usage, budget: budget))
        }
        lastUsage = usage
        lastBudget = budget
    }

    // MARK: - Trace events

    mutating func command(_ c: Command, at t: Timestamp) -> Bool {
        inputObserver?(.command(c), t)
        var effects: [Effect] = []
        do {
            try engine.handle(c, now: t, effects: &effects)
            return true
        } catch {
            metrics.traceRefusals += 1
            if result.notes.count < 5 { result.notes.append("t=\(t.microseconds / 1000) ms: \(error)") }
            return false
        }
    }

    mutating func appID(for scene: TraceScene) -> AppID {
        if let name = scene.app {
            if let id = namedApps[name] { return id }
            let id = AppID("trace.app\(namedApps.count + 1)")!
            namedApps[name] = id
            return id
        }
        if let id = appOf[scene.name] { return id }
        let id = AppID("trace.scene\(appOf.count + 1)")!
        appOf[scene.name] = id
        return id
    }

    mutating func open(_ scene: TraceScene, at t: Timestamp) {
        let app = appID(for: scene)
        let request = ConnectRequest(app: app, footprint: scene.bytes, background: true,
                                     restoreCostMs: scene.restoreMs, isProtected: scene.isProtected)
        var effects: [Effect] = []
        inputObserver?(.command(.connect(request)), t)
        guard case .session(let id)? = try? engine.handle(.connect(request), now: t, effects: &effects) else {
            metrics.traceRefusals += 1
            return
        }
        if let name = scene.app, let base = appBase[name], engine.apps[app]?.baseFootprint != base {
            _ = command(.setAppFootprint(app, base), at: t)
        }
        sessionOf[scene.name] = id
        sceneOf[id] = scene.name
        openLine[scene.name] = scene
        capDiscarded.remove(scene.name)
    }

    mutating func apply(_ event: TraceEvent, at t: Timestamp) {
        switch event.kind {
        case .meta:
            break
        case .open(let scene):
            open(scene, at: t)
        case .activate(let name):
            activate(name, at: t)
        case .deactivate(let name):
            guard let id = sessionOf[name], engine.sessions[id]?.sceneState == .foregroundActive else { return }
            _ = command(.deactivate(id), at: t)
        case .background(let name):
            guard let id = sessionOf[name], let s = engine.sessions[id], s.condition == .live else { return }
            _ = command(.background(id), at: t)
        case .suspend(let name):
            guard let id = sessionOf[name], let s = engine.sessions[id],
                  engine.apps[s.app]?.process == .running else { return }
            _ = command(.suspend(s.app, cause: .request), at: t)
        case .close(let name):
            guard let id = sessionOf.removeValue(forKey: name) else { return }
            sceneOf[id] = nil
            capDiscarded.remove(name)
            reclaimedAt[id] = nil
            if engine.sessions[id] != nil { _ = command(.discard(id, cause: .request), at: t) }
            controller.policy.noteDiscarded(id)
        case .mem(let name, let bytes):
            guard let id = sessionOf[name], engine.sessions[id] != nil else { return }
            _ = command(.setFootprint(id, bytes), at: t)
            if var line = openLine[name] {
                line.bytes = bytes
                openLine[name] = line
            }
        case .appMem(let name, let bytes):
            appBase[name] = bytes
            if let id = namedApps[name], engine.apps[id] != nil { _ = command(.setAppFootprint(id, bytes), at: t) }
        case .protect(let name, let on):
            guard let id = sessionOf[name], engine.sessions[id] != nil else { return }
            _ = command(.setProtected(id, on), at: t)
        case .budget(let budget):
            if measureOnly { return }
            switch budget {
            case .bytes(let b):
                if let override = settings.budget, let first = firstTraceBudget, first > 0 {
                    baseBudget = UInt64((Double(b) * Double(override) / Double(first)).rounded())
                } else {
                    baseBudget = b
                }
                scale = 1
            case .scale(let k):
                scale = k
            case .unlimited:
                baseBudget = nil
                scale = 1
            }
        case .pressure(let level):
            if !measureOnly {
                controller.override = level.map { PressureOverride(level: $0) }
                inputObserver?(.override(controller.override), t)
            }
        case .ackProfile(let profile):
            acks[profile.scene] = profile
        }
    }

    mutating func activate(_ name: String, at t: Timestamp) {
        guard var id = sessionOf[name] else { return }
        if engine.sessions[id] == nil {
            // A cap discarded the session while the trace still uses the scene: it comes back cold.
            guard capDiscarded.contains(name), let line = openLine[name] else { return }
            sceneOf[id] = nil
            open(line, at: t)
            guard let reopened = sessionOf[name] else { return }
            id = reopened
            metrics.restores += 1
            metrics.weightedRestoreCost += UInt64(line.restoreMs)
            metrics.reactivations += 1
        }
        guard let s = engine.sessions[id], !(s.condition == .live && s.sceneState == .foregroundActive) else { return }
        if s.condition == .archived {
            metrics.restores += 1
            metrics.weightedRestoreCost += UInt64(s.restoreCostMs)
            if settings.recordTimeline {
                let ago = reclaimedAt[id].map { "\((t - $0).microseconds / 1000) ms after its release" } ?? "?"
                result.log.append("t=\(t.microseconds / 1000) restore \(name) (\(s.activations) activations, \(ago))")
            }
        }
        if s.activations > 0 || s.condition == .archived { metrics.reactivations += 1 }
        if let at = reclaimedAt.removeValue(forKey: id), t - at <= settings.reclaim.regretWindow {
            metrics.regrets += 1
        }
        controller.policy.noteActivation(id, now: t)
        if command(.activate(id), at: t) { metrics.activations += 1 }
    }

    // MARK: - Decisions

    mutating func decide(at now: Timestamp) {
        inputObserver?(.evaluate(budget: currentBudget), now)
        var effects: [Effect] = []
        _ = try? engine.handle(.tick, now: now, effects: &effects)
        sample(at: now)
        let usage = engine.residentBytes
        let budget = currentBudget
        let engineBefore = observer == nil ? nil : engine
        let policyBefore = observer == nil ? nil : controller.policy

        let nextUse: ((SessionID) -> Timestamp?)?
        if let rank = rankOverride {
            let scenes = sceneOf
            nextUse = { id in scenes[id].map { Timestamp(microseconds: Int64(rank($0))) } }
        } else if let oracle {
            let scenes = sceneOf
            let index = eventIndex
            nextUse = { id in scenes[id].flatMap { oracle.nextActivation(of: $0, after: index) }.map(Self.timestamp) }
        } else {
            nextUse = nil
        }
        let started = clock?()
        let outcome = controller.evaluate(engine: engine, readings: PressureReadings(usage: usage, budget: budget),
                                          now: now, nextUse: nextUse)
        let level = controller.level
        if level > .normal && !inEpisode {
            inEpisode = true
            episodeOnset = now
            relieved = usage <= lowTarget
            if relieved { metrics.timesToRelief.append(0) }
            metrics.episodes += 1
        } else if level == .normal && inEpisode {
            inEpisode = false
            if !relieved { metrics.unrelievedEpisodes += 1 }
        }
        wake = outcome.wake
        guard let plan = outcome.plan else { return }
        if let started, let clock {
            let ended = clock()
            metrics.decisionMicros.append(Double(ended &- started) / 1000)
        }
        metrics.decisions += 1
        if plan.unrelievable { metrics.unrelievablePlans += 1 }
        execute(outcome.steps, at: now, usage: usage)
        sample(at: now)

        if let observer, let engineBefore, let policyBefore {
            observer(DecisionRecord(time: now, level: level, external: outcome.external, usageBefore: usage,
                                    usageAfter: engine.residentBytes, budget: budget, lowTarget: lowTarget,
                                    plan: plan, engineBefore: engineBefore, policyBefore: policyBefore))
        }
    }

    mutating func execute(_ steps: [ReclaimController.Step], at now: Timestamp, usage: UInt64) {
        let sessionsBefore = engine.sessions.count
        var allowedRemovals = 0
        let capsOn = settings.reclaim.maxSessions > 0 || settings.reclaim.archivedMaxAge > .zero
        var freed: UInt64 = 0
        var batch = false
        for planned in steps {
            let step = planned.step
            let cause = EventCause.reclaim(step.note)
            switch step.action {
            case .memoryWarning(let apps):
                if reclaimCommand(.memoryWarning(apps: apps, cause: cause), at: now) {
                    metrics.warnings += 1
                    mark(.warning, at: now)
                }
            case .suspend(let app):
                if reclaimCommand(.suspend(app, cause: cause), at: now) {
                    metrics.suspensions += 1
                    mark(.suspend, at: now)
                }
            case .disconnect(let id):
                batch = true
                guard let s = engine.sessions[id] else {
                    metrics.refusedCommands += 1
                    continue
                }
                if s.condition == .live && s.sceneState.isForeground { metrics.foregroundViolations += 1 }
                let live = s.condition == .live
                if reclaimCommand(.disconnect(id, cause: cause), at: now) && live {
                    metrics.disconnects += 1
                    freed += s.footprint
                    victim(s, at: now)
                    mark(.disconnect, at: now)
                }
            case .terminate(let app):
                batch = true
                guard let record = engine.apps[app] else {
                    metrics.refusedCommands += 1
                    continue
                }
                if record.hasForegroundScene { metrics.foregroundViolations += 1 }
                let live = record.sessions.compactMap { engine.sessions[$0] }.filter { $0.condition == .live }
                let running = record.process != .notRunning
                if reclaimCommand(.terminate(app, cause: cause), at: now) {
                    metrics.terminations += 1
                    if running { freed += record.baseFootprint }
                    for s in live {
                        freed += s.footprint
                        victim(s, at: now)
                    }
                    mark(.terminate, at: now)
                }
            case .discard(let id):
                let archived = engine.sessions[id]?.condition == .archived
                if reclaimCommand(planned.command, at: now) {
                    metrics.capDiscards += 1
                    if capsOn && archived { allowedRemovals += 1 }
                    reclaimedAt[id] = nil
                    controller.executed(planned, succeeded: true)
                    if let name = sceneOf[id] { capDiscarded.insert(name) }
                    mark(.discard, at: now)
                }
            }
        }
        let removed = sessionsBefore - engine.sessions.count
        if removed > allowedRemovals { metrics.pressureDiscards += removed - allowedRemovals }
        if batch {
            let target = usage > lowTarget ? usage - lowTarget : 0
            if freed > target { metrics.overkillBytes += freed - target }
        }
    }

    mutating func reclaimCommand(_ c: Command, at now: Timestamp) -> Bool {
        var effects: [Effect] = []
        do {
            try engine.handle(c, now: now, effects: &effects)
            stepObserver?(c, true, now)
            return true
        } catch {
            stepObserver?(c, false, now)
            metrics.refusedCommands += 1
            if result.notes.count < 5 { result.notes.append("t=\(now.microseconds / 1000) ms: refused \(error)") }
            return false
        }
    }

    mutating func victim(_ s: SceneSession, at now: Timestamp) {
        metrics.victims += 1
        if settings.recordTimeline {
            result.log.append("t=\(now.microseconds / 1000) victim \(sceneOf[s.id] ?? "?") (\(s.activations) activations, \(s.footprint / 1_000_000) MB, level \(controller.level))")
        }
        if s.isProtected { metrics.protectedVictims += 1 }
        reclaimedAt[s.id] = now
        if let name = sceneOf[s.id], let profile = acks[name] {
            if profile.defers { metrics.deferringVictims += 1 }
            if let ms = profile.latencyMs {
                if ms > settings.slowAckMs { metrics.slowAckVictims += 1 }
            } else {
                metrics.silentVictims += 1
            }
        }
    }

    mutating func mark(_ kind: TimelineMark.Kind, at now: Timestamp) {
        guard settings.recordTimeline else { return }
        result.marks.append(TimelineMark(time: now.microseconds / 1000, kind: kind, usage: engine.residentBytes))
    }
}

/// What a replay feeds its engine and controller, in order (for driving another one alike).
public enum ReplayInput: Sendable, Equatable {
    /// A command of the trace (not a reclaim command).
    case command(Command)
    /// An operator override from a `pressure` line.
    case override(PressureOverride?)
    /// The controller is evaluated (the engine ticked first), with this budget.
    case evaluate(budget: UInt64?)
}

/// Belady's oracle: for each scene, the positions of its activations in the trace, so that the
/// OPT order can ask when a session is next used. A `close` ends the session: a later `open`
/// of the same name is a new session, so activations after a close do not count for it.
public struct NextUseOracle: Sendable {
    struct Use: Sendable {
        var index: Int
        var time: Int64
        var isClose: Bool
    }
    var uses: [String: [Use]] = [:]

    public init(_ trace: Trace) {
        for (i, e) in trace.events.enumerated() {
            switch e.kind {
            case .activate(let s): uses[s, default: []].append(Use(index: i, time: e.time, isClose: false))
            case .close(let s): uses[s, default: []].append(Use(index: i, time: e.time, isClose: true))
            default: break
            }
        }
    }

    /// The time (ms) of the scene's first activation after trace position `index`, or nil if it
    /// is closed first or never used again.
    public func nextActivation(of scene: String, after index: Int) -> Int64? {
        guard let list = uses[scene] else { return nil }
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid].index <= index { lo = mid + 1 } else { hi = mid }
        }
        guard lo < list.count, !list[lo].isClose else { return nil }
        return list[lo].time
    }
}
