import SceneCore
import SceneTrace
import SystemdKit

/// Runs SceneCore's `ReclaimController` — the same one the replayer drives — on the live
/// engine: it reads the sources (the engine's accounting, PSI), hands the controller's
/// commands to the EngineHost (so they commit with everything else), and returns what else
/// follows (`Outcome`) for the daemon to carry out. Nothing here decides anything.
final class ReclaimRunner {
    let host: EngineHost
    let logger: JournalLogger
    private(set) var controller: ReclaimController
    var budget: UInt64 {
        didSet { if budget != oldValue { inputsChanged = true } }
    }
    var psi: PSISource?
    private(set) var usage: UInt64 = 0
    /// For `scenectl pressure chart`: what the controller saw and did since start-up.
    private(set) var history = PressureHistory()
    /// Every override set or cleared, at the event sequence number it came before, for
    /// ExportTrace (the event log does not have them). Bounded: the oldest go first.
    private(set) var overrides: [(time: Timestamp, seq: UInt64, override: PressureOverride?)] = []
    static let overrideCapacity = 256
    /// The evaluations that had something new to see (events since the last one, a new
    /// override or budget), for ExportTrace: a replay evaluates where the daemon did, once per
    /// pass rather than once per event. Bounded like the overrides.
    private(set) var decisions: [(time: Timestamp, seq: UInt64)] = []
    /// The first sequence number from which every evaluation is recorded (nil before the first).
    private(set) var decisionsFrom: UInt64?
    static let decisionCapacity = 8192
    /// The event sequence number when the last evaluation ended (its own steps included).
    private var evaluatedThrough: UInt64?
    private var inputsChanged = false
    /// Each new session's footprint, restore cost and protection as it connected, for
    /// ExportTrace: a discarded session is gone from the engine, and its scene still weighed
    /// on the budget while it lived. Bounded: the oldest sessions are forgotten first.
    private(set) var connected: [SessionID: HistorySession] = [:]
    private var connectedOrder: [SessionID] = []
    static let connectedCapacity = 16_384

    /// What an evaluation leaves for the daemon to carry out.
    struct Outcome {
        /// From an evaluation (not an answer): `wake` then replaces the timer.
        var evaluated = false
        /// When to evaluate again (engine time), nil: only when something changes.
        var wake: Timestamp?
        var levelChanged = false
        /// Reclaim notices for attached apps (they wait for no commit).
        var notices: [ReclaimGrace.Notice] = []
        /// Scenes disconnected, with the footprint they were charged, by app.
        var reclaimed: [(app: AppID, bytes: UInt64)] = []
        /// Every command carried out, and whether the engine took it.
        var executed: [(command: Command, succeeded: Bool)] = []
    }

    init(host: EngineHost, logger: JournalLogger, policy: ReclaimPolicy, budget: UInt64, watermarks: Watermarks,
         hold: TimeSpan, simulated: Bool) {
        self.host = host
        self.logger = logger
        self.budget = budget
        controller = ReclaimController(policy: policy, gauge: PressureGauge(watermarks: watermarks, hold: hold),
                                       gaugeIsSource: simulated)
    }

    var level: PressureLevel { controller.level }
    var policy: ReclaimPolicy { controller.policy }
    var override: PressureOverride? { controller.override }
    var watermarks: Watermarks { controller.gauge.watermarks }

    func reconfigure(_ configuration: ReclaimConfiguration, budget: UInt64, watermarks: Watermarks, hold: TimeSpan,
                     simulated: Bool) {
        self.budget = budget
        controller.policy.configuration = configuration
        controller.gauge.watermarks = watermarks
        controller.gauge.hold = hold
        controller.gaugeIsSource = simulated
    }

    func setOverride(_ override: PressureOverride?) {
        controller.override = override
        if overrides.count >= Self.overrideCapacity { overrides.removeFirst(Self.overrideCapacity / 8) }
        overrides.append((host.clock.now(), host.engine.nextSequence, override))
        inputsChanged = true
    }

    /// Evaluates the controller on the engine as it is now. `awaitingRelease`: freed memory
    /// has yet to show in a measured app (the next batch waits for it); `takesNotice`: the app
    /// takes part in the reclaim grace.
    func evaluate(awaitingRelease: Bool, takesNotice: (AppID) -> Bool) -> Outcome {
        let now = host.clock.now()
        noteDecision(now)
        defer {
            evaluatedThrough = host.engine.nextSequence
            inputsChanged = false
        }
        usage = host.engine.residentBytes
        controller.policy.awaitingRelease = awaitingRelease
        let readings = PressureReadings(usage: usage, budget: budget, external: psi?.level ?? .normal)
        // The controller asks during this call only.
        let evaluated = withoutActuallyEscaping(takesNotice) { takesNotice in
            controller.evaluate(engine: host.engine, readings: readings, now: now, takesNotice: { _, app in takesNotice(app) })
        }
        var outcome = Outcome(evaluated: true, wake: evaluated.wake, notices: evaluated.notices)
        if let old = evaluated.previousLevel {
            logLevelChange(from: old, now: now)
            outcome.levelChanged = true
        }
        history.record(time: now, seq: host.engine.nextSequence, usage: usage, budget: budget, level: level)
        execute(evaluated.steps, now: now, into: &outcome)
        if evaluated.becameUnrelievable { logUnrelievable() }
        if !evaluated.steps.isEmpty {
            // What the steps freed shows at once, not at the next pass.
            history.record(time: now, seq: host.engine.nextSequence, usage: host.engine.residentBytes,
                           budget: budget, level: level)
        }
        return outcome
    }

    private func logUnrelievable() {
        logger.daemon(batch: host.gathering, position: host.pending.events.count, .warning, MessageID.pressureUnrelievable,
                      "Memory pressure \(level.name) cannot be relieved: only foreground and protected scenes remain; \(ByteSize.format(usage)) of \(ByteSize.format(budget)).",
                      [("SCENED_PRESSURE", level.name), ("SCENED_USAGE", String(usage)), ("SCENED_BUDGET", String(budget))])
    }

    private func execute(_ steps: [ReclaimController.Step], now: Timestamp, into outcome: inout Outcome) {
        for step in steps {
            do {
                let seq = host.engine.nextSequence
                var freed: (AppID, UInt64)?
                if case .disconnect(let id, _) = step.command, let s = host.engine.sessions[id] { freed = (s.app, s.footprint) }
                _ = try host.execute(step.command)
                if let freed { outcome.reclaimed.append(freed) }
                controller.executed(step, succeeded: true)
                host.metrics.noteReclaim(step.step)
                history.record(step.step.action, time: now, seq: seq, usage: usage)
                outcome.executed.append((step.command, true))
            } catch {
                // The state moved on since the plan was made (another call in this pass);
                // the next decision sees the new state.
                controller.executed(step, succeeded: false)
                outcome.executed.append((step.command, false))
                Diagnostics.info("reclaim step skipped: \(error)")
            }
        }
    }

    /// An attached app answered a reclaim notice: its disconnect, if the answer releases it,
    /// joins the current batch.
    func answer(_ id: UInt64, _ answer: ReclaimGrace.Answer, app: AppID) -> (ReclaimGrace.Resolution, Outcome) {
        let (resolution, steps) = controller.answer(id, answer, app: app, engine: host.engine)
        var outcome = Outcome()
        execute(steps, now: host.clock.now(), into: &outcome)
        return (resolution, outcome)
    }

    func reconfigure(grace: ReclaimGrace.Configuration) { controller.grace.configuration = grace }

    private func noteDecision(_ now: Timestamp) {
        let seq = host.engine.nextSequence
        guard inputsChanged || evaluatedThrough != seq else { return }
        if decisions.count >= Self.decisionCapacity {
            decisions.removeFirst(Self.decisionCapacity / 8)
            decisionsFrom = decisions.first?.seq
        }
        if decisionsFrom == nil { decisionsFrom = seq }
        decisions.append((now, seq))
    }

    private func logLevelChange(from old: PressureLevel, now: Timestamp) {
        let new = level
        logger.daemon(batch: host.gathering, position: host.pending.events.count,
                      new > old ? .notice : .info, MessageID.pressureChanged,
                      "Memory pressure \(old.name) → \(new.name); \(ByteSize.format(usage)) of \(ByteSize.format(budget)).",
                      [("SCENED_PRESSURE", new.name), ("SCENED_PRESSURE_BEFORE", old.name),
                       ("SCENED_USAGE", String(usage)), ("SCENED_BUDGET", String(budget)),
                       ("SCENED_PRESSURE_SOURCES", sources(now: now).filter { $0.level > .normal }.map(\.name).joined(separator: ","))])
    }

    /// A session became active: the policy counts regrets.
    func noteActivations(_ events: [LifecycleEvent]) {
        for e in events where e.name == .didBecomeActive {
            if let s = e.session { controller.policy.noteActivation(s, now: e.time) }
        }
    }

    /// New sessions were committed: remember what they weigh (see `connected`).
    func rememberSessions(_ events: [LifecycleEvent]) {
        for e in events where e.name == .willConnectTo {
            guard case .connect(_, let reconnect, _) = e.detail, !reconnect, let id = e.session,
                  let s = host.engine.sessions[id], connected[id] == nil else { continue }
            if connectedOrder.count >= Self.connectedCapacity {
                for old in connectedOrder.prefix(Self.connectedCapacity / 8) { connected[old] = nil }
                connectedOrder.removeFirst(Self.connectedCapacity / 8)
            }
            connected[id] = HistorySession(footprint: s.footprint, restoreCostMs: s.restoreCostMs, isProtected: s.isProtected)
            connectedOrder.append(id)
        }
    }

    struct SourceReport {
        var name: String
        var level: PressureLevel
        var detail: String
    }

    /// Each source with its level, for GetPressure.
    func sources(now: Timestamp) -> [SourceReport] {
        var out: [SourceReport] = []
        if controller.gaugeIsSource {
            out.append(SourceReport(name: "simulated", level: controller.gauge.level,
                                    detail: "\(ByteSize.format(usage)) of \(ByteSize.format(budget))"))
        }
        if let psi {
            out.append(SourceReport(name: "psi", level: psi.level, detail: "\(psi.settings.path): \(psi.mode.description)"))
        }
        if let o = controller.override {
            out.append(SourceReport(name: "override", level: o.level,
                                    detail: o.until.map { "forced; lapses in \(($0 - now).approximate)" } ?? "forced until cleared"))
        }
        return out
    }
}
