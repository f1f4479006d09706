import SceneCore
import SceneReplay
import SystemdKit

/// Runs SceneCore's `ReclaimController` — the same one the replayer drives — on the live
/// engine: it reads the sources (the engine's accounting, PSI), hands the controller's
/// commands to the Manager (so they commit with everything else), and reports level changes.
/// Nothing here decides anything.
final class ReclaimRunner {
    let manager: Manager
    let logger: JournalLogger
    private(set) var controller: ReclaimController
    var budget: UInt64 {
        didSet { if budget != oldValue { inputsChanged = true } }
    }
    var psi: PSISource?
    private(set) var usage: UInt64 = 0
    /// For `scenectl pressure chart`: what the controller saw and did since start-up.
    private(set) var history = PressureHistory()
    /// Asks the daemon to evaluate again at this engine time (a timer).
    var wakeAt: ((Timestamp?) -> Void)?
    /// The level changed (status line).
    var onLevelChange: (() -> Void)?
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
    /// A disconnect freed a scene's footprint (what it was charged) of this app.
    var onReclaimed: ((AppID, UInt64) -> Void)?
    /// Whether freed memory has yet to show in a measured app: the next batch waits for it.
    var awaitingRelease: (() -> Bool)?
    /// Tests: every reclaim command carried out, and whether the engine took it.
    var stepObserver: ((Command, Bool) -> Void)?
    /// Whether an app takes part in the reclaim grace (it is attached), and where its notices go.
    var takesNotice: ((AppID) -> Bool)?
    var sendNotices: (([ReclaimGrace.Notice]) -> Void)?

    init(manager: Manager, logger: JournalLogger, policy: ReclaimPolicy, budget: UInt64, watermarks: Watermarks,
         hold: TimeSpan, simulated: Bool) {
        self.manager = manager
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
        overrides.append((manager.clock.now(), manager.engine.nextSequence, override))
        inputsChanged = true
    }

    func evaluate() {
        let now = manager.clock.now()
        noteDecision(now)
        defer {
            evaluatedThrough = manager.engine.nextSequence
            inputsChanged = false
        }
        usage = manager.engine.residentBytes
        controller.policy.awaitingRelease = awaitingRelease?() ?? false
        let notice: ((SessionID, AppID) -> Bool)? = takesNotice.map { f in { _, app in f(app) } }
        let outcome = controller.evaluate(engine: manager.engine,
                                          readings: PressureReadings(usage: usage, budget: budget, external: psi?.level ?? .normal),
                                          now: now, takesNotice: notice)
        if let old = outcome.previousLevel { logLevelChange(from: old, now: now) }
        history.record(time: now, seq: manager.engine.nextSequence, usage: usage, budget: budget, level: level)
        execute(outcome.steps, now: now)
        if !outcome.notices.isEmpty { sendNotices?(outcome.notices) }
        if outcome.becameUnrelievable {
            logger.daemon(batch: manager.gathering, position: manager.pending.events.count, .warning, MessageID.pressureUnrelievable,
                          "Memory pressure \(level.name) cannot be relieved: only foreground and protected scenes remain; \(ByteSize.format(usage)) of \(ByteSize.format(budget)).",
                          [("SCENED_PRESSURE", level.name), ("SCENED_USAGE", String(usage)), ("SCENED_BUDGET", String(budget))])
        }
        if !outcome.steps.isEmpty {
            // What the steps freed shows at once, not at the next pass.
            history.record(time: now, seq: manager.engine.nextSequence, usage: manager.engine.residentBytes,
                           budget: budget, level: level)
        }
        wakeAt?(outcome.wake)
    }

    private func execute(_ steps: [ReclaimController.Step], now: Timestamp) {
        for step in steps {
            do {
                let seq = manager.engine.nextSequence
                var freed: (AppID, UInt64)?
                if case .disconnect(let id, _) = step.command, let s = manager.engine.sessions[id] { freed = (s.app, s.footprint) }
                _ = try manager.execute(step.command)
                if let freed { onReclaimed?(freed.0, freed.1) }
                controller.executed(step, succeeded: true)
                history.record(step.step.action, time: now, seq: seq, usage: usage)
                stepObserver?(step.command, true)
            } catch {
                // The state moved on since the plan was made (another call in this pass);
                // the next decision sees the new state.
                controller.executed(step, succeeded: false)
                stepObserver?(step.command, false)
                Diagnostics.info("reclaim step skipped: \(error)")
            }
        }
    }

    /// An attached app answered a reclaim notice: its disconnect, if the answer releases it,
    /// joins the current batch.
    func answer(_ id: UInt64, _ answer: ReclaimGrace.Answer, app: AppID) -> ReclaimGrace.Resolution {
        let (resolution, steps) = controller.answer(id, answer, app: app, engine: manager.engine)
        execute(steps, now: manager.clock.now())
        return resolution
    }

    func reconfigure(grace: ReclaimGrace.Configuration) { controller.grace.configuration = grace }

    private func noteDecision(_ now: Timestamp) {
        let seq = manager.engine.nextSequence
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
        logger.daemon(batch: manager.gathering, position: manager.pending.events.count,
                      new > old ? .notice : .info, MessageID.pressureChanged,
                      "Memory pressure \(old.name) → \(new.name); \(ByteSize.format(usage)) of \(ByteSize.format(budget)).",
                      [("SCENED_PRESSURE", new.name), ("SCENED_PRESSURE_BEFORE", old.name),
                       ("SCENED_USAGE", String(usage)), ("SCENED_BUDGET", String(budget)),
                       ("SCENED_PRESSURE_SOURCES", sources(now: now).filter { $0.level > .normal }.map(\.name).joined(separator: ","))])
        onLevelChange?()
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
            guard case .connect(_, let reconnect) = e.detail, !reconnect, let id = e.session,
                  let s = manager.engine.sessions[id], connected[id] == nil else { continue }
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
