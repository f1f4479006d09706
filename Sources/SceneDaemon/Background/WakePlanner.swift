import SceneCore

/// When to wake which app for its background work (R34). Pure: the daemon hands it the
/// engine and what it sees (the time, memory pressure, whether the machine sleeps or scened
/// stops, which apps scened can start) and carries out the plan: wakes (engine commands),
/// processes to start first, processing tasks to cut short.
///
/// The rules: nothing is woken while the machine sleeps, while scened stops, or under critical
/// pressure; processing tasks, and notifications of priority normal, wait for normal pressure;
/// at most `maxConcurrentWakes` apps are awake for background work at once (an app with a
/// scene in the foreground is not woken, only handed its work, and is not counted); an app
/// woken takes every task of its own falling due within `coalesce`, so one thaw serves them.
struct WakePlanner {
    struct Limits: Equatable, Sendable {
        var maxConcurrentWakes: Int
        var coalesce: TimeSpan
        /// A process started for a wake that has not attached by then is given up on.
        var launchTimeout = TimeSpan.seconds(60)
    }

    struct View {
        var now: Timestamp
        var pressure: PressureLevel
        /// The machine sleeps (or is about to), or scened stops.
        var blocked: Bool
        /// Apps scened starts itself (ExecStart=).
        var startable: Set<AppID>
        /// Apps started for a wake whose process went before it attached: the start failed.
        var failedStarts: Set<AppID> = []
    }

    struct Plan: Equatable {
        var wakes: [WakeRequest] = []
        /// Start these apps' processes; their wake follows once they are launched.
        var launches: [AppID] = []
        /// Cut these apps' processing tasks short (pressure rose).
        var expireProcessing: [AppID] = []
        /// Look again then, if nothing else happens first.
        var nextCheck: Timestamp?
    }

    /// Processes started for a wake, and since when.
    private(set) var launching: [AppID: Timestamp] = [:]
    /// Apps whose start for a wake failed, and when they may be started again: not counted
    /// as awake meanwhile, so that a broken app holds no slot another app could use.
    private(set) var retryAt: [AppID: Timestamp] = [:]

    /// Apps awake for background work now: handed items they have not answered, with no
    /// scene in the foreground; and those being started for it.
    func awake(_ engine: LifecycleEngine) -> Int {
        var n = launching.count
        for app in engine.apps.values where !app.wakes.isEmpty && !app.hasForegroundScene { n += 1 }
        return n
    }

    /// Whether a process attaching as `app` was started for a wake (didFinishLaunching's
    /// cause is then `background`).
    func startedForWake(_ app: AppID) -> Bool { launching[app] != nil }

    mutating func plan(_ engine: LifecycleEngine, _ view: View, _ limits: Limits) -> Plan {
        var plan = Plan()
        launching = launching.filter { view.now < $0.value + limits.launchTimeout }
        for app in view.failedStarts where launching.removeValue(forKey: app) != nil {
            retryAt[app] = view.now + limits.launchTimeout
        }
        retryAt = retryAt.filter { view.now < $0.value }
        if view.pressure != .normal { plan.expireProcessing = Self.processingToCut(engine) }
        guard !view.blocked, view.pressure != .critical else { return plan }
        let work = Self.dueWork(engine, view, limits)
        var awakeNow = awake(engine)
        for (app, due) in work.ordered {
            guard let record = engine.apps[app] else {
                if view.startable.contains(app) { awakeNow += start(app, awakeNow, limits, view.now, &plan) }
                continue
            }
            switch record.process {
            case .running where !record.wakes.isEmpty || record.hasForegroundScene:
                plan.wakes.append(due)
            case .running, .suspended:
                guard awakeNow < limits.maxConcurrentWakes || launching[app] != nil else { continue }
                if launching.removeValue(forKey: app) == nil { awakeNow += 1 }
                plan.wakes.append(due)
            case .notRunning:
                guard view.startable.contains(app) else { continue }
                awakeNow += start(app, awakeNow, limits, view.now, &plan)
            }
        }
        plan.nextCheck = earliest(earliest(work.nextDue, launching.values.min().map { $0 + limits.launchTimeout }),
                                  retryAt.values.min())
        return plan
    }

    /// Starts `app`'s process for a wake if the cap allows; returns how many it adds.
    private mutating func start(_ app: AppID, _ awakeNow: Int, _ limits: Limits, _ now: Timestamp,
                                _ plan: inout Plan) -> Int {
        guard launching[app] == nil, retryAt[app] == nil, awakeNow < limits.maxConcurrentWakes else { return 0 }
        launching[app] = now
        plan.launches.append(app)
        return 1
    }

    /// Each app with something deliverable now, earliest first, with everything it would be
    /// handed; and when the next task not yet due falls due.
    static func dueWork(_ engine: LifecycleEngine, _ view: View, _ limits: Limits)
        -> (ordered: [(AppID, WakeRequest)], nextDue: Timestamp?) {
        var requests: [AppID: (first: Timestamp, request: WakeRequest)] = [:]
        var nextDue: Timestamp?
        let normal = view.pressure == .normal
        let horizon = view.now + limits.coalesce
        func add(_ app: AppID, at time: Timestamp, _ body: (inout WakeRequest) -> Void) {
            var entry = requests[app] ?? (time, WakeRequest(app: app))
            entry.first = min(entry.first, time)
            body(&entry.request)
            requests[app] = entry
        }
        for n in engine.notifications.values.sorted(by: { $0.id < $1.id }) where normal || n.priority == .high {
            add(n.app, at: n.queuedAt) { $0.notifications.append(n.id) }
        }
        // Only the tasks within the window are sorted: the others only set the next check.
        var soon: [ScheduledTask] = []
        var dueApps: Set<AppID> = []
        for task in engine.schedules.values where normal || task.kind != .processing {
            // Submitted again while the same identifier is still handled: it waits for that
            // item to close (the engine refuses a wake naming it).
            if engine.apps[task.app]?.wakes.contains(where: { $0.subject == .task(task.identifier) }) == true { continue }
            if task.earliestBegin <= horizon {
                soon.append(task)
                if task.earliestBegin <= view.now { dueApps.insert(task.app) }
            } else {
                nextDue = earliest(nextDue, task.earliestBegin)
            }
        }
        soon.sort { ($0.earliestBegin, $0.key) < ($1.earliestBegin, $1.key) }
        for task in soon {
            // A task joins its app's wake when the wake happens anyway and it falls due soon.
            if task.earliestBegin <= view.now || dueApps.contains(task.app) || requests[task.app] != nil {
                add(task.app, at: task.earliestBegin) { $0.tasks.append(task.identifier) }
            } else {
                nextDue = earliest(nextDue, task.earliestBegin)
            }
        }
        let ordered = requests.sorted { ($0.value.first, $0.key) < ($1.value.first, $1.key) }.map { ($0.key, $0.value.request) }
        return (ordered, nextDue)
    }

    private static func earliest(_ a: Timestamp?, _ b: Timestamp?) -> Timestamp? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }

    private func earliest(_ a: Timestamp?, _ b: Timestamp?) -> Timestamp? { Self.earliest(a, b) }

    /// Apps with processing tasks under way that have not been told to expire.
    static func processingToCut(_ engine: LifecycleEngine) -> [AppID] {
        engine.apps.values.filter { app in
            app.wakes.contains { $0.kind == .processing && $0.expirationSentAt == nil }
        }.map(\.id).sorted()
    }
}
