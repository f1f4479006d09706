import SceneCore

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
    /// The reclaim grace before the decision (notices out, deferred scenes), and the bytes of
    /// the scenes with a notice out after it (held back, about to go).
    public var graceBefore: ReclaimGrace
    public var pendingBytesAfter: UInt64
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
    /// With `recordActions`: every reclaim action the engine took, in order.
    public var actions: [ReplayAction] = []

    public init(metrics: ReplayMetrics) { self.metrics = metrics }
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

/// One reclaim action, its target named as the trace names it (a scene, or an app) and in the
/// daemon's history's words (`GetPressureHistory`), so that the two can be compared.
public struct ReplayAction: Sendable, Equatable, CustomStringConvertible {
    public var time: Int64
    /// warning, suspend, disconnect, terminate or discard.
    public var kind: String
    public var target: String

    public init(time: Int64, kind: String, target: String) {
        self.time = time
        self.kind = kind
        self.target = target
    }

    public var description: String { "\(time) \(kind) \(target)" }
}
