import Testing
import SceneCore
@testable import SceneDaemon

/// WakePlanner on real engines: the cap, coalescing, pressure, sleep, launches (R34).
@Suite("WakePlanner: when which app is woken for its background work")
struct WakePlannerTests {
    static let t0 = Timestamp(microseconds: 1_000_000_000)
    static let limits = WakePlanner.Limits(maxConcurrentWakes: 4, coalesce: .seconds(30))

    /// `count` apps, launched and suspended, each with one refresh task due at `t0`.
    static func suspendedApps(_ count: Int, due: Timestamp = t0) throws -> LifecycleEngine {
        var engine = LifecycleEngine(clock: t0)
        for i in 0..<count {
            let app = AppID("org.example.app\(i)")!
            _ = try engine.run(.launch(app), now: t0)
            _ = try engine.run(.suspend(app, cause: .timer), now: t0)
            _ = try engine.run(.scheduleTask(ScheduledTask(app: app, identifier: "refresh", kind: .refresh,
                                                              earliestBegin: due, submittedAt: t0)), now: t0)
        }
        return engine
    }

    static func view(_ now: Timestamp = t0, pressure: PressureLevel = .normal, blocked: Bool = false,
                     startable: Set<AppID> = []) -> WakePlanner.View {
        WakePlanner.View(now: now, pressure: pressure, blocked: blocked, startable: startable)
    }

    @Test("at most MaxConcurrentWakes apps are woken; the rest as the first ones finish")
    func cap() throws {
        var engine = try Self.suspendedApps(10)
        var planner = WakePlanner()
        let first = planner.plan(engine, Self.view(), Self.limits)
        #expect(first.wakes.count == 4)
        for request in first.wakes { _ = try engine.run(.wake(request), now: Self.t0) }
        #expect(planner.awake(engine) == 4)
        #expect(planner.plan(engine, Self.view(), Self.limits).wakes.isEmpty, "all four slots are taken")
        for request in first.wakes {
            _ = try engine.run(.endWake(request.app, .task("refresh"), success: true), now: Self.t0)
            #expect(engine.apps[request.app]?.process == .suspended, "suspended again once it answers")
        }
        let second = planner.plan(engine, Self.view(), Self.limits)
        #expect(second.wakes.count == 4)
        #expect(Set(second.wakes.map(\.app)).isDisjoint(with: Set(first.wakes.map(\.app))))
    }

    @Test("one wake takes the app's tasks due within the window; the next check is the one after")
    func coalescing() throws {
        var engine = try Self.suspendedApps(1)
        let app = AppID("org.example.app0")!
        for (id, delay) in [("soon", 10), ("later", 120)] {
            _ = try engine.run(.scheduleTask(ScheduledTask(app: app, identifier: id, kind: .refresh,
                                                              earliestBegin: Self.t0 + .seconds(Int64(delay)), submittedAt: Self.t0)),
                                  now: Self.t0)
        }
        var planner = WakePlanner()
        let plan = planner.plan(engine, Self.view(), Self.limits)
        #expect(plan.wakes == [WakeRequest(app: app, tasks: ["refresh", "soon"])])
        #expect(plan.nextCheck == Self.t0 + .seconds(120))
    }

    @Test("nothing is due: no wake, and the check is when the first falls due")
    func notYetDue() throws {
        let engine = try Self.suspendedApps(3, due: Self.t0 + .seconds(60))
        var planner = WakePlanner()
        let plan = planner.plan(engine, Self.view(), Self.limits)
        #expect(plan.wakes.isEmpty)
        #expect(plan.nextCheck == Self.t0 + .seconds(60))
    }

    @Test("critical pressure and sleep wake nothing; warning holds processing and normal notifications")
    func pressureAndSleep() throws {
        var engine = try Self.suspendedApps(2)
        let a = AppID("org.example.app0")!, b = AppID("org.example.app1")!
        _ = try engine.run(.scheduleTask(ScheduledTask(app: a, identifier: "index", kind: .processing,
                                                          earliestBegin: Self.t0, submittedAt: Self.t0)), now: Self.t0)
        _ = try engine.run(.cancelTask(b, identifier: "refresh"), now: Self.t0)
        _ = try engine.run(.queueNotification(app: b, payload: "{}", priority: .normal), now: Self.t0)
        var planner = WakePlanner()
        #expect(planner.plan(engine, Self.view(pressure: .critical), Self.limits).wakes.isEmpty)
        #expect(planner.plan(engine, Self.view(blocked: true), Self.limits).wakes.isEmpty)
        let warning = planner.plan(engine, Self.view(pressure: .warning), Self.limits)
        #expect(warning.wakes == [WakeRequest(app: a, tasks: ["refresh"])])
        _ = try engine.run(.queueNotification(app: b, payload: "{\"urgent\":true}", priority: .high), now: Self.t0)
        let urgent = planner.plan(engine, Self.view(pressure: .warning), Self.limits)
        #expect(urgent.wakes.map(\.app) == [a, b])
        #expect(urgent.wakes.last?.notifications.count == 1, "only the high-priority one goes at warning pressure")
    }

    @Test("a processing task under way is cut short when pressure rises")
    func processingCut() throws {
        var engine = try Self.suspendedApps(1)
        let app = AppID("org.example.app0")!
        _ = try engine.run(.cancelTask(app, identifier: "refresh"), now: Self.t0)
        _ = try engine.run(.scheduleTask(ScheduledTask(app: app, identifier: "index", kind: .processing,
                                                          earliestBegin: Self.t0, submittedAt: Self.t0)), now: Self.t0)
        var planner = WakePlanner()
        let plan = planner.plan(engine, Self.view(), Self.limits)
        for request in plan.wakes { _ = try engine.run(.wake(request), now: Self.t0) }
        #expect(planner.plan(engine, Self.view(pressure: .warning), Self.limits).expireProcessing == [app])
        _ = try engine.run(.expireWakes(app, kind: .processing), now: Self.t0)
        #expect(planner.plan(engine, Self.view(pressure: .warning), Self.limits).expireProcessing.isEmpty,
                "told once")
    }

    @Test("a not-running app is started first when scened can start it, and counted meanwhile")
    func launches() throws {
        var engine = LifecycleEngine(clock: Self.t0)
        let started = AppID("org.example.started")!, attachedOnly = AppID("org.example.attached")!
        for app in [started, attachedOnly] {
            _ = try engine.run(.scheduleTask(ScheduledTask(app: app, identifier: "r", kind: .refresh,
                                                              earliestBegin: Self.t0, submittedAt: Self.t0)), now: Self.t0)
        }
        var planner = WakePlanner()
        let one = WakePlanner.Limits(maxConcurrentWakes: 1, coalesce: .seconds(30))
        let plan = planner.plan(engine, Self.view(startable: [started]), one)
        #expect(plan.launches == [started])
        #expect(plan.wakes.isEmpty)
        #expect(planner.startedForWake(started))
        #expect(planner.awake(engine) == 1)
        #expect(planner.plan(engine, Self.view(startable: [started]), one).launches.isEmpty, "not started twice")
        _ = try engine.run(.launch(started, cause: .background), now: Self.t0)
        let wake = planner.plan(engine, Self.view(startable: [started]), one)
        #expect(wake.wakes == [WakeRequest(app: started, tasks: ["r"])], "its slot was kept for it")
        #expect(!planner.startedForWake(started))
        let gaveUp = planner.plan(engine, Self.view(Self.t0 + .seconds(61), startable: [started]), one)
        #expect(gaveUp.launches.isEmpty)
    }

    @Test("a start for a wake that failed frees its slot and is not tried again before the launch timeout")
    func failedStart() throws {
        var engine = LifecycleEngine(clock: Self.t0)
        let broken = AppID("org.example.broken")!, good = AppID("org.example.good")!
        _ = try engine.run(.queueNotification(app: broken, payload: "{}", priority: .normal), now: Self.t0)
        _ = try engine.run(.launch(good), now: Self.t0)
        _ = try engine.run(.suspend(good, cause: .timer), now: Self.t0)
        _ = try engine.run(.queueNotification(app: good, payload: "{}", priority: .normal), now: Self.t0 + .seconds(1))
        var planner = WakePlanner()
        let one = WakePlanner.Limits(maxConcurrentWakes: 1, coalesce: .seconds(30))
        let first = planner.plan(engine, Self.view(startable: [broken]), one)
        #expect(first.launches == [broken] && first.wakes.isEmpty, "the earlier notification's app is started first")
        var failed = Self.view(Self.t0 + .seconds(1), startable: [broken])
        failed.failedStarts = [broken]
        let second = planner.plan(engine, failed, one)
        #expect(second.wakes.map(\.app) == [good], "the slot is free for the good app")
        #expect(second.launches.isEmpty, "the broken app is not started again at once")
        #expect(!planner.startedForWake(broken) && planner.awake(engine) == 0)
        #expect(second.nextCheck == Self.t0 + .seconds(61), "looked at again when it may be retried")
        let retry = planner.plan(engine, Self.view(Self.t0 + .seconds(61), startable: [broken]), one)
        #expect(retry.launches == [broken], "retried after the launch timeout")
    }

    @Test("the k earliest of many, in order, in one pass; ties by app")
    func earliestK() {
        let apps = (0..<50).map { AppID("org.example.k\($0)")! }
        let items = apps.enumerated().map { (Self.t0 + .seconds(Int64(($0.offset * 7) % 13)), $0.element) }
        for k in [0, 1, 4, 49, 50, 60] {
            #expect(WakePlanner.earliest(k, of: items).map(\.1) == Array(items.sorted { $0 < $1 }.prefix(k)).map(\.1))
        }
    }

    @Test("a task submitted again while it is handled waits for that item to close")
    func resubmittedWhileHandled() throws {
        var engine = try Self.suspendedApps(1)
        let app = AppID("org.example.app0")!
        var planner = WakePlanner()
        for request in planner.plan(engine, Self.view(), Self.limits).wakes { try engine.run(.wake(request), now: Self.t0) }
        try engine.run(.scheduleTask(ScheduledTask(app: app, identifier: "refresh", kind: .refresh, earliestBegin: Self.t0,
                                                   submittedAt: Self.t0)), now: Self.t0)
        #expect(planner.plan(engine, Self.view(), Self.limits).wakes.isEmpty, "the open item is not handed over again")
        try engine.run(.endWake(app, .task("refresh"), success: true), now: Self.t0)
        let again = planner.plan(engine, Self.view(), Self.limits)
        #expect(again.wakes == [WakeRequest(app: app, tasks: ["refresh"])])
        for request in again.wakes { try engine.run(.wake(request), now: Self.t0) }
    }

    @Test("an app with a scene in the foreground is handed a notification whatever the cap")
    func foregroundNotCounted() throws {
        var engine = try Self.suspendedApps(4)
        var planner = WakePlanner()
        for request in planner.plan(engine, Self.view(), Self.limits).wakes {
            _ = try engine.run(.wake(request), now: Self.t0)
        }
        let front = AppID("org.example.front")!
        _ = try engine.run(.connect(ConnectRequest(app: front)), now: Self.t0)
        _ = try engine.run(.queueNotification(app: front, payload: "{}", priority: .normal), now: Self.t0)
        let plan = planner.plan(engine, Self.view(), Self.limits)
        #expect(plan.wakes.map(\.app) == [front])
    }
}

extension LifecycleEngine {
    /// A command whose effects the planner's tests do not need.
    @discardableResult
    mutating func run(_ command: Command, now: Timestamp) throws(LifecycleError) -> CommandResult {
        var effects: [Effect] = []
        return try handle(command, now: now, effects: &effects)
    }
}
