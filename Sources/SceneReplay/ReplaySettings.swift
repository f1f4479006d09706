import SceneCore
import SceneTrace

/// How to replay a trace.
public struct ReplaySettings: Sendable {
    public var order: VictimOrder
    /// The base budget, replacing the trace's (absolute budget lines are rescaled so that their
    /// ratio to the trace's first one is kept). nil: the trace's budget lines, unlimited before
    /// the first one.
    public var budget: UInt64?
    /// The policy's settings; `budget` is set by the replayer.
    public var reclaim: ReclaimConfiguration
    public var engine: EngineConfiguration
    /// The pressure gauge's hold time before a level drops.
    public var hold: TimeSpan
    /// After the last event, keep deciding at the policy's and the gauge's times for at most this
    /// long (until pressure is over).
    public var tail: TimeSpan
    /// Ack latency above which a victim counts as slow (the 2 s warning grace of §3.5; reporting
    /// only).
    public var slowAckMs: Int64
    /// Record the usage line and the actions for a chart.
    public var recordTimeline: Bool
    /// Record every reclaim action taken, named as the trace names things (`--actions`).
    public var recordActions = false
    /// Whether the gauge (usage against the budget) is a pressure source; the daemon can run
    /// with PSI alone, and an exported trace says so.
    public var gaugeIsSource = true
    /// The reclaim grace (§3.5) for scenes with an `ack_profile`, as the daemon gives attached
    /// apps; nil: disconnect them without notice.
    public var grace: ReclaimGrace.Configuration? = ReclaimGrace.Configuration()

    public init(order: VictimOrder = .ours, budget: UInt64? = nil, reclaim: ReclaimConfiguration = ReclaimConfiguration(),
                engine: EngineConfiguration = .standard, hold: TimeSpan = .seconds(4), tail: TimeSpan = .seconds(300),
                slowAckMs: Int64 = 2000, recordTimeline: Bool = false) {
        self.order = order
        self.budget = budget
        self.reclaim = reclaim
        self.engine = engine
        self.hold = hold
        self.tail = tail
        self.slowAckMs = slowAckMs
        self.recordTimeline = recordTimeline
    }
}

extension ReplaySettings {
    /// Takes a trace's recorded settings (the budget stays the caller's).
    public mutating func adopt(_ s: TraceSettings) {
        let budget = reclaim.budget
        reclaim = s.reclaim
        reclaim.budget = budget
        engine = s.engine
        hold = s.hold
        gaugeIsSource = s.gauge
    }
}
