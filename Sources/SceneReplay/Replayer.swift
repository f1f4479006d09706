import SceneCore
import SceneTrace

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
    /// The trace's name of each app the replay made (for naming actions).
    var appName: [AppID: String] = [:]
    /// An exported trace names apps by their real ids, and those are used as they are: the
    /// policy orders some steps by app id, so other names could reorder them.
    let realAppNames: Bool
    /// Decide only at `decide` lines and wake-ups (an exported trace: the daemon's passes).
    let explicitDecisions: Bool
    var acks: [String: AckProfile] = [:]
    /// Answers to reclaim notices the ack profiles say will come, by time.
    var answers: [(time: Timestamp, id: UInt64, app: AppID, answer: ReclaimGrace.Answer)] = []
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
                                       gauge: PressureGauge(watermarks: settings.reclaim.watermarks, hold: settings.hold),
                                       gaugeIsSource: settings.gaugeIsSource)
        if let grace = settings.grace { controller.grace.configuration = grace }
        realAppNames = trace.settings != nil
        explicitDecisions = trace.settings?.explicitDecisions == true
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
            case .meta, .ackProfile, .settings: break
            case .decide: if !measureOnly { decide(at: t) }
            default: if !measureOnly && !explicitDecisions { decide(at: t) }
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
        let counters = controller.grace.counters
        metrics.graceNotices = counters.notices
        metrics.graceAcks = counters.acks
        metrics.graceDeferrals = counters.deferrals + counters.refusedDeferrals
        metrics.graceTimeouts = counters.timeouts
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
}
