import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

// Shared support: a small world of apps and scenes driven on a virtual clock, in which the
// policy decides and its plans run through the real engine.

let MB: UInt64 = 1_000_000

func app(_ name: String) -> AppID { AppID("com.test.\(name)")! }
func at(_ seconds: Int64) -> Timestamp { Timestamp.zero + .seconds(seconds) }
func atMs(_ ms: Int64) -> Timestamp { Timestamp.zero + .milliseconds(ms) }

/// Engine + policy + clock. Scenes are connected straight to the background unless asked.
struct World {
    var engine = LifecycleEngine()
    var policy: ReclaimPolicy
    var now = Timestamp.zero
    /// Every event the executed plans produced.
    var events: [LifecycleEvent] = []

    init(budget: UInt64 = 1_000 * MB, order: VictimOrder = .ours, configure: (inout ReclaimConfiguration) -> Void = { _ in }) {
        var c = ReclaimConfiguration(budget: budget)
        configure(&c)
        policy = ReclaimPolicy(configuration: c, order: order)
    }

    @discardableResult
    mutating func run(_ command: Command) throws -> [LifecycleEvent] {
        var effects: [Effect] = []
        try engine.handle(command, now: now, effects: &effects)
        let new = effects.compactMap { if case .event(let e) = $0 { e } else { nil } }
        for e in new where e.name == .didBecomeActive {
            if let s = e.session { policy.noteActivation(s, now: e.time) }
        }
        return new
    }

    /// A new scene of `appName`, connected in the background (or active).
    @discardableResult
    mutating func open(_ appName: String, _ bytes: UInt64, cost: UInt32 = 500, active: Bool = false,
                       protected: Bool = false) throws -> SessionID {
        var effects: [Effect] = []
        let request = ConnectRequest(app: app(appName), footprint: bytes, background: !active, restoreCostMs: cost,
                                     isProtected: protected)
        guard case .session(let id) = try engine.handle(.connect(request), now: now, effects: &effects) else {
            Issue.record("connect returned no session")
            return SessionID(0)
        }
        if active { policy.noteActivation(id, now: now) }
        return id
    }

    mutating func advance(_ seconds: Int64) { now = now + .seconds(seconds) }
    mutating func advanceMs(_ ms: Int64) { now = now + .milliseconds(ms) }

    /// Activates then backgrounds a scene (one use).
    mutating func use(_ id: SessionID) throws {
        try run(.activate(id))
        try run(.background(id))
    }

    var usage: UInt64 { engine.residentBytes }

    mutating func decide(_ level: PressureLevel, usage: UInt64? = nil, external: Bool = false,
                         nextUse: ((SessionID) -> Timestamp?)? = nil) -> ReclaimPlan {
        _ = try? run(.tick)
        return policy.decide(engine: engine, level: level, usage: usage ?? self.usage, now: now, external: external,
                             nextUse: nextUse)
    }

    /// Runs a plan's steps as the daemon does (reclaim cause, caps with `.cap`).
    mutating func execute(_ plan: ReclaimPlan) throws {
        for step in plan.steps {
            let cause = EventCause.reclaim(step.note)
            let new: [LifecycleEvent]
            switch step.action {
            case .memoryWarning(let apps): new = try run(.memoryWarning(apps: apps, cause: cause))
            case .suspend(let a): new = try run(.suspend(a, cause: cause))
            case .disconnect(let id): new = try run(.disconnect(id, cause: cause))
            case .terminate(let a): new = try run(.terminate(a, cause: cause))
            case .discard(let id):
                new = try run(.discard(id, cause: .cap(step.note.reason)))
                policy.noteDiscarded(id)
            }
            events += new
        }
    }

    /// Sets the budget so that the current usage is at `fraction` of it.
    mutating func budgetFor(fraction: Double) {
        policy.configuration.budget = UInt64((Double(usage) / fraction).rounded())
    }
}

extension ReclaimPlan {
    var disconnects: [SessionID] { steps.compactMap { if case .disconnect(let id) = $0.action { id } else { nil } } }
    var terminations: [AppID] { steps.compactMap { if case .terminate(let a) = $0.action { a } else { nil } } }
    var suspensions: [AppID] { steps.compactMap { if case .suspend(let a) = $0.action { a } else { nil } } }
    var discards: [SessionID] { steps.compactMap { if case .discard(let id) = $0.action { id } else { nil } } }
    var warnings: [[AppID]] { steps.compactMap { if case .memoryWarning(let a) = $0.action { a } else { nil } } }
}

/// The fixtures directory, found from this source file (no bundle resources).
func fixturesDirectory(_ file: String = #filePath) -> String {
    var parts = file.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast()
    return parts.joined(separator: "/") + "/Fixtures"
}

/// The seeds the shipped fixtures were generated with.
let fixtureSeed: UInt64 = 1

/// A trace built in code, one event per call.
struct TraceBuilder {
    var events: [TraceEvent] = []
    var t: Int64 = 0

    mutating func at(_ ms: Int64) -> TraceBuilder {
        t = ms
        return self
    }
    mutating func add(_ kind: TraceEvent.Kind) { events.append(TraceEvent(time: t, kind)) }
    mutating func open(_ name: String, _ bytes: UInt64, cost: UInt32 = 500, app: String? = nil, flags: [String] = []) {
        add(.open(TraceScene(name: name, app: app, bytes: bytes, restoreMs: cost, flags: flags)))
    }
    /// Background the current scene, activate `name` (opening it first if needed is up to
    /// the caller).
    mutating func switchTo(_ name: String, from: String?) {
        if let from { add(.background(from)) }
        add(.activate(name))
    }
    var trace: Trace { Trace(events: events) }
}
