import SceneCore
import SystemdKit

/// Runs the reclaim policy against the live engine: at the end of each loop iteration (before
/// the commit, so that its actions commit with everything else) it refreshes the pressure level
/// and, when pressure calls for it and the settle time has passed, carries out the policy's plan
/// through ordinary engine commands caused by `.reclaim`.
final class ReclaimController {
    let manager: Manager
    let monitor: PressureMonitor
    let logger: JournalLogger
    var policy: ReclaimPolicy
    private(set) var level: PressureLevel = .normal
    private var nextDecision: Timestamp?
    private var reportedUnrelievable = false
    /// Asks the daemon to run an iteration end at this engine time (a timer).
    var wakeAt: ((Timestamp?) -> Void)?
    /// The level changed (status line).
    var onLevelChange: (() -> Void)?

    init(manager: Manager, monitor: PressureMonitor, logger: JournalLogger, policy: ReclaimPolicy) {
        self.manager = manager
        self.monitor = monitor
        self.logger = logger
        self.policy = policy
    }

    /// Whether anything could be due: pressure, a pending decision, a lapsing level, or caps.
    private var capsConfigured: Bool {
        policy.configuration.maxSessions > 0 || policy.configuration.archivedMaxAge > .zero
    }

    func evaluate() {
        let now = manager.clock.now()
        let usage = manager.engine.residentBytes
        monitor.update(usage: usage, now: now)
        let newLevel = monitor.level
        let changed = newLevel != level
        if changed {
            let old = level
            level = newLevel
            logger.daemon(batch: manager.gathering, position: manager.pending.events.count,
                          newLevel > old ? .notice : .info, MessageID.pressureChanged,
                          "Memory pressure \(old.name) → \(newLevel.name); \(Format.bytes(usage)) of \(Format.bytes(monitor.budget)).",
                          [("SCENED_PRESSURE", newLevel.name), ("SCENED_PRESSURE_BEFORE", old.name),
                           ("SCENED_USAGE", String(usage)), ("SCENED_BUDGET", String(monitor.budget)),
                           ("SCENED_PRESSURE_SOURCES", monitor.sources(now: now).filter { $0.level > .normal }.map(\.name).joined(separator: ","))])
            if newLevel == .normal { reportedUnrelievable = false }
            onLevelChange?()
        }
        let due = nextDecision.map { now >= $0 } ?? true
        let capsDue = capsConfigured && (policy.configuration.maxSessions > 0
            ? manager.engine.sessions.count > policy.configuration.maxSessions : due)
        if changed || (level > .normal && due) || capsDue || (level == .normal && policy.episode != nil) {
            decide(now: now, usage: usage)
        }
        var wake = nextDecision
        if let t = monitor.nextChange { wake = wake.map { min($0, t) } ?? t }
        if capsConfigured && policy.configuration.archivedMaxAge > .zero {
            let sweep = now + TimeSpan.seconds(60)
            wake = wake.map { min($0, sweep) } ?? sweep
        }
        wakeAt?(wake)
    }

    private func decide(now: Timestamp, usage: UInt64) {
        let plan = policy.decide(engine: manager.engine, level: level, usage: usage, now: now,
                                 external: monitor.isExternal)
        nextDecision = plan.nextDecision
        for step in plan.steps {
            let command: Command
            switch step.action {
            case .memoryWarning(let apps): command = .memoryWarning(apps: apps, cause: .reclaim(step.note))
            case .suspend(let app): command = .suspend(app, cause: .reclaim(step.note))
            case .disconnect(let id): command = .disconnect(id, cause: .reclaim(step.note))
            case .terminate(let app): command = .terminate(app, cause: .reclaim(step.note))
            case .discard(let id): command = .discard(id, cause: .cap(step.note.reason))
            }
            do {
                _ = try manager.execute(command)
                if case .discard(let id) = step.action { policy.noteDiscarded(id) }
            } catch {
                // The state moved on since the plan was made (another call in this iteration);
                // the next decision sees the new state.
                Diagnostics.info("reclaim step skipped: \(error)")
            }
        }
        if plan.unrelievable && !reportedUnrelievable {
            reportedUnrelievable = true
            logger.daemon(batch: manager.gathering, position: manager.pending.events.count, .warning, MessageID.pressureUnrelievable,
                          "Memory pressure \(level.name) cannot be relieved: only foreground and protected scenes remain; \(Format.bytes(usage)) of \(Format.bytes(monitor.budget)).",
                          [("SCENED_PRESSURE", level.name), ("SCENED_USAGE", String(usage)),
                           ("SCENED_BUDGET", String(monitor.budget))])
        }
    }

    /// A session became active: the policy counts regrets.
    func noteActivations(_ events: [LifecycleEvent]) {
        for e in events where e.name == .didBecomeActive {
            if let s = e.session { policy.noteActivation(s, now: e.time) }
        }
    }
}
