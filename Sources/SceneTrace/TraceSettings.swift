import SceneCore
import Varlink

/// The `settings` line of a trace exported by the daemon (`scenectl export-trace`): the reclaim
/// and engine settings it ran with, so that a replay decides as it did unless told otherwise.
///
/// ```
/// {"t":0,"ev":"settings","source":"scened","since":1,"epoch_us":1764600000000000,"gauge":true,
///  "low":0.8,"high":0.9,"critical":0.97,"hold_us":4000000,"aging_us":10000000,"settle_us":1000000,
///  "max_victims":32,"default_restore_ms":500,"regret_us":60000000,"suspend_early":true,
///  "terminate_suspended":true,"max_sessions":0,"archived_max_age_us":0,"max_discards":1000,
///  "suspend_delay_us":5000000,"task_budget_us":30000000,"expiration_grace_us":2000000,
///  "explicit_decisions":true}
/// ```
/// Durations are microseconds (the daemon's unit: a millisecond would round some settings).
/// Every member is optional; a missing one takes the default. The budget is not here: it is
/// the trace's `budget` lines, so that `--budget` rescales it like any trace's.
public struct TraceSettings: Sendable, Equatable {
    /// Who wrote the trace ("scened").
    public var source: String?
    /// The first event sequence number the trace covers.
    public var since: UInt64?
    /// The real time of t=0, microseconds since the Unix epoch.
    public var epochMicros: Int64?
    /// The budget, its watermarks included, is ignored: the `budget` lines give it.
    public var reclaim: ReclaimConfiguration
    public var engine: EngineConfiguration
    public var hold: TimeSpan
    /// Whether usage against the budget was a pressure source (`[Pressure] Sources=simulated`).
    public var gauge: Bool
    /// The controller is evaluated only at `decide` lines and its wake-ups (the daemon
    /// evaluates once per pass, not once per event).
    public var explicitDecisions = false

    public init(source: String? = nil, since: UInt64? = nil, epochMicros: Int64? = nil,
                reclaim: ReclaimConfiguration = ReclaimConfiguration(), engine: EngineConfiguration = .standard,
                hold: TimeSpan = .seconds(4), gauge: Bool = true) {
        self.source = source
        self.since = since
        self.epochMicros = epochMicros
        self.reclaim = reclaim
        self.engine = engine
        self.hold = hold
        self.gauge = gauge
    }
}

extension TraceParser {
    static func settings(_ fields: inout Fields) throws(TraceError) -> TraceSettings {
        var s = TraceSettings()
        s.source = try fields.optionalString("source")
        s.since = try fields.optionalBytes("since")
        if let epoch = try fields.optionalBytes("epoch_us") {
            guard epoch <= UInt64(Int64.max) else { throw fields.error("\"epoch_us\" is too large") }
            s.epochMicros = Int64(epoch)
        }
        if let raw = fields.take("explicit_decisions") {
            guard let flag = raw.boolValue else { throw fields.error("\"explicit_decisions\" must be true or false") }
            s.explicitDecisions = flag
        }
        if let g = fields.take("gauge") {
            guard let flag = g.boolValue else { throw fields.error("\"gauge\" must be true or false") }
            s.gauge = flag
        }
        var r = s.reclaim
        func fraction(_ key: String, _ value: inout Double) throws(TraceError) {
            guard let raw = fields.take(key), !raw.isNull else { return }
            guard let d = raw.doubleValue, d > 0, d <= 1.5 else { throw fields.error("\"\(key)\" must be a fraction above 0") }
            value = d
        }
        try fraction("low", &r.watermarks.low)
        try fraction("high", &r.watermarks.high)
        try fraction("critical", &r.watermarks.critical)
        guard r.watermarks.isValid else { throw fields.error("the watermarks must rise: low < high ≤ critical") }
        func span(_ key: String, _ value: inout TimeSpan) throws(TraceError) {
            guard let us = try fields.optionalBytes(key) else { return }
            guard us < 9_000_000_000_000_000 else { throw fields.error("\"\(key)\" is too large") }
            value = TimeSpan(microseconds: Int64(us))
        }
        func count(_ key: String, _ value: inout Int) throws(TraceError) {
            guard let n = try fields.optionalBytes(key) else { return }
            guard n <= UInt64(Int32.max) else { throw fields.error("\"\(key)\" is too large") }
            value = Int(n)
        }
        func flag(_ key: String, _ value: inout Bool) throws(TraceError) {
            guard let raw = fields.take(key), !raw.isNull else { return }
            guard let b = raw.boolValue else { throw fields.error("\"\(key)\" must be true or false") }
            value = b
        }
        try span("hold_us", &s.hold)
        try span("aging_us", &r.aging)
        try span("settle_us", &r.settle)
        try count("max_victims", &r.maxVictimsPerBatch)
        var restore = Int(r.defaultRestoreCostMs)
        try count("default_restore_ms", &restore)
        r.defaultRestoreCostMs = UInt32(restore)
        try span("regret_us", &r.regretWindow)
        try flag("suspend_early", &r.suspendEarly)
        try flag("terminate_suspended", &r.terminateSuspendedAtCritical)
        try count("max_sessions", &r.maxSessions)
        try span("archived_max_age_us", &r.archivedMaxAge)
        try count("max_discards", &r.maxDiscardsPerDecision)
        try span("suspend_delay_us", &s.engine.suspendDelay)
        try span("task_budget_us", &s.engine.backgroundTaskBudget)
        try span("expiration_grace_us", &s.engine.expirationGrace)
        s.reclaim = r
        return s
    }
}

extension TraceWriter {
    /// The `settings` line's `ev` and members.
    static func settings(_ s: TraceSettings, _ w: inout JSONWriter) {
        w.string("settings")
        if let source = s.source { w.key("source"); w.string(source) }
        if let since = s.since { w.key("since"); w.uint(since) }
        if let epoch = s.epochMicros { w.key("epoch_us"); w.int(epoch) }
        w.key("gauge"); w.bool(s.gauge)
        if s.explicitDecisions { w.key("explicit_decisions"); w.bool(true) }
        let r = s.reclaim
        w.key("low"); w.double(r.watermarks.low)
        w.key("high"); w.double(r.watermarks.high)
        w.key("critical"); w.double(r.watermarks.critical)
        w.key("hold_us"); w.int(s.hold.microseconds)
        w.key("aging_us"); w.int(r.aging.microseconds)
        w.key("settle_us"); w.int(r.settle.microseconds)
        w.key("max_victims"); w.int(r.maxVictimsPerBatch)
        w.key("default_restore_ms"); w.uint(UInt64(r.defaultRestoreCostMs))
        w.key("regret_us"); w.int(r.regretWindow.microseconds)
        w.key("suspend_early"); w.bool(r.suspendEarly)
        w.key("terminate_suspended"); w.bool(r.terminateSuspendedAtCritical)
        w.key("max_sessions"); w.int(r.maxSessions)
        w.key("archived_max_age_us"); w.int(r.archivedMaxAge.microseconds)
        w.key("max_discards"); w.int(r.maxDiscardsPerDecision)
        w.key("suspend_delay_us"); w.int(s.engine.suspendDelay.microseconds)
        w.key("task_budget_us"); w.int(s.engine.backgroundTaskBudget.microseconds)
        w.key("expiration_grace_us"); w.int(s.engine.expirationGrace.microseconds)
    }
}
