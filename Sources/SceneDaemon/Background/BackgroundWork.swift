import SceneCore

/// The part that runs apps' background work (R34): it holds the `WakePlanner` and what it
/// needs between passes. The daemon asks it for a plan at the end of a pass and carries the
/// plan out; the method handlers tell it when something it plans from changed and ask it
/// whether a launch was for a wake.
final class BackgroundWork {
    private(set) var planner = WakePlanner()
    private(set) var limits: WakePlanner.Limits
    private(set) var maxNotificationSize: Int
    private(set) var startable: Set<AppID> = []
    /// What the last plan was made from: a pass that changed none of it needs no new plan.
    private var lastKey: Key?
    private var nextCheck: Timestamp?

    private struct Key: Equatable {
        var sequence: UInt64
        var schedules: Int
        var notifications: Int
        var nextNotification: UInt64
        var pressure: PressureLevel
        var blocked: Bool
    }

    init(settings: DaemonSettings) {
        limits = settings.background.plannerLimits
        maxNotificationSize = settings.background.maxNotificationSize
        configure(settings)
    }

    func configure(_ settings: DaemonSettings) {
        limits = settings.background.plannerLimits
        maxNotificationSize = settings.background.maxNotificationSize
        startable = Set(settings.apps.filter { $0.value.launch.starts }.keys)
        lastKey = nil
    }

    /// A task was scheduled or cancelled: plan again even if nothing else moved.
    func changed() { lastKey = nil }

    func startedForWake(_ app: AppID) -> Bool { planner.startedForWake(app) }

    func awake(_ engine: LifecycleEngine) -> Int { planner.awake(engine) }

    /// The plan for now, or nil when nothing it depends on changed, no start for a wake
    /// failed (`failedStarts`) and no check is due.
    func plan(_ engine: LifecycleEngine, now: Timestamp, pressure: PressureLevel, blocked: Bool,
              failedStarts: Set<AppID> = []) -> WakePlanner.Plan? {
        let key = Key(sequence: engine.nextSequence, schedules: engine.schedules.count,
                      notifications: engine.notifications.count, nextNotification: engine.nextNotificationNumber,
                      pressure: pressure, blocked: blocked)
        if key == lastKey, failedStarts.isEmpty, nextCheck.map({ now < $0 }) ?? true { return nil }
        lastKey = key
        // Nothing stored, nothing starting, nothing to cut short: the common case costs nothing.
        if engine.schedules.isEmpty, engine.notifications.isEmpty, planner.launching.isEmpty, pressure == .normal {
            nextCheck = nil
            return nil
        }
        let view = WakePlanner.View(now: now, pressure: pressure, blocked: blocked, startable: startable,
                                    failedStarts: failedStarts)
        let plan = planner.plan(engine, view, limits)
        nextCheck = plan.nextCheck
        return plan
    }

    /// When the daemon must look again without being woken by anything else.
    var nextDeadline: Timestamp? { nextCheck }
}
