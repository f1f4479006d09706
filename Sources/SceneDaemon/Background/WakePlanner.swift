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
        let work = Self.dueApps(engine, view, limits)
        var awakeNow = awake(engine)
        for app in chosen(work.first, engine, view, free: max(0, limits.maxConcurrentWakes - awakeNow)) {
            guard let record = engine.apps[app], record.process != .notRunning else {
                awakeNow += start(app, awakeNow, limits, view.now, &plan)
                continue
            }
            let handedOnly = record.process == .running && (!record.wakes.isEmpty || record.hasForegroundScene)
            if launching.removeValue(forKey: app) == nil && !handedOnly { awakeNow += 1 }
            let request = Self.request(for: app, engine, view, limits)
            if !request.tasks.isEmpty || !request.notifications.isEmpty { plan.wakes.append(request) }
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

    /// The apps to hand work to now, earliest first: every due app already awake or in the
    /// foreground (they take no slot), processes started for a wake that are now launched
    /// (their slot was kept), and the `free` earliest of the rest.
    private func chosen(_ first: [AppID: Timestamp], _ engine: LifecycleEngine, _ view: View, free: Int) -> [AppID] {
        var chosen: [(Timestamp, AppID)] = []
        var waiting: [(Timestamp, AppID)] = []
        for (app, time) in first {
            let process = engine.apps[app]?.process ?? .notRunning
            if let record = engine.apps[app], process == .running, !record.wakes.isEmpty || record.hasForegroundScene {
                chosen.append((time, app))
            } else if launching[app] != nil {
                if process != .notRunning { chosen.append((time, app)) }
            } else if process == .notRunning && (!view.startable.contains(app) || retryAt[app] != nil) {
                continue
            } else {
                waiting.append((time, app))
            }
        }
        chosen += Self.earliest(free, of: waiting)
        return chosen.sorted { $0 < $1 }.map(\.1)
    }

    /// The `k` smallest, in order, in one pass: a plan must not sort a thousand due apps to
    /// wake four of them.
    static func earliest(_ k: Int, of items: [(Timestamp, AppID)]) -> [(Timestamp, AppID)] {
        guard k > 0 else { return [] }
        guard items.count > k else { return items.sorted { $0 < $1 } }
        var kept: [(Timestamp, AppID)] = []
        kept.reserveCapacity(k + 1)
        for item in items where kept.count < k || item < kept[kept.count - 1] {
            let at = kept.firstIndex { item < $0 } ?? kept.count
            kept.insert(item, at: at)
            if kept.count > k { kept.removeLast() }
        }
        return kept
    }

    /// When each app with something deliverable now first had it, and when the next task not
    /// yet due falls due (a task an app due now will take within the window sets no check).
    /// Linear, and no request is built here.
    static func dueApps(_ engine: LifecycleEngine, _ view: View, _ limits: Limits)
        -> (first: [AppID: Timestamp], nextDue: Timestamp?) {
        var first: [AppID: Timestamp] = [:]
        let normal = view.pressure == .normal
        for n in engine.notifications.values where normal || n.priority == .high {
            first[n.app] = min(first[n.app] ?? n.queuedAt, n.queuedAt)
        }
        for task in engine.schedules.values where task.earliestBegin <= view.now && (normal || task.kind != .processing) {
            first[task.app] = min(first[task.app] ?? task.earliestBegin, task.earliestBegin)
        }
        let horizon = view.now + limits.coalesce
        var nextDue: Timestamp?
        for task in engine.schedules.values where task.earliestBegin > view.now && (normal || task.kind != .processing) {
            if task.earliestBegin <= horizon && first[task.app] != nil { continue }
            nextDue = earliest(nextDue, task.earliestBegin)
        }
        return (first, nextDue)
    }

    /// What a woken app is handed: its deliverable notifications, and its tasks due within
    /// the window (one thaw serves them), except any it is handling now.
    static func request(for app: AppID, _ engine: LifecycleEngine, _ view: View, _ limits: Limits) -> WakeRequest {
        let normal = view.pressure == .normal
        var request = WakeRequest(app: app)
        request.tasks = engine.dueTasks(of: app, until: view.now + limits.coalesce)
            .filter { normal || $0.kind != .processing }.map(\.identifier)
        request.notifications = engine.pendingNotifications(of: app).filter { normal || $0.priority == .high }.map(\.id)
        return request
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
