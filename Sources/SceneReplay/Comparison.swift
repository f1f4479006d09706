import SceneCore
import SceneTrace
import Varlink

/// One policy's replay of a trace, with the figures that compare it with LRU and OPT.
public struct PolicyOutcome: Sendable {
    public var result: ReplayResult
    /// (LRU − this) ÷ (LRU − OPT) on restores; nil when OPT does not beat LRU.
    public var gapClosed: Double?
    /// Restores ÷ LRU's restores (nil if LRU had none).
    public var restoresVsLRU: Double?
    /// Weighted restore cost ÷ LRU's (nil if LRU's was 0).
    public var costVsLRU: Double?

    public var metrics: ReplayMetrics { result.metrics }
}

/// Runs several policies over one trace at one budget.
public enum Comparison {
    /// The policies in the order reports list them.
    public static let allPolicies: [VictimOrder] = [.ours, .lru, .largest, .chrome, .lmkd, .opt]

    /// Replays `trace` once per policy (LRU and OPT are run even when not asked for, since gap
    /// closed needs them) and returns the outcomes of the policies asked for, in their order.
    /// `settings.budget` is the base budget (nil: the trace's).
    public static func run(_ trace: Trace, policies: [VictimOrder], settings: ReplaySettings,
                           workingSet: UInt64? = nil, clock: NanosecondClock? = nil) -> [PolicyOutcome] {
        let ws = workingSet ?? Replayer.workingSet(of: trace, engine: settings.engine)
        var results: [VictimOrder: ReplayResult] = [:]
        for order in policies + [.lru, .opt] where results[order] == nil {
            var s = settings
            s.order = order
            var r = Replayer.run(trace, settings: s, clock: clock)
            r.metrics.workingSet = ws
            results[order] = r
        }
        let lru = results[.lru]!.metrics
        let opt = results[.opt]!.metrics
        return policies.map { order in
            let m = results[order]!.metrics
            return PolicyOutcome(
                result: results[order]!,
                gapClosed: gapClosed(lru: lru.restores, policy: m.restores, opt: opt.restores),
                restoresVsLRU: lru.restores == 0 ? nil : Double(m.restores) / Double(lru.restores),
                costVsLRU: lru.weightedRestoreCost == 0 ? nil
                    : Double(m.weightedRestoreCost) / Double(lru.weightedRestoreCost))
        }
    }
}

/// Human and JSON output of outcomes.
public enum ReplayReport {
    /// A fixed-width table, one row per policy.
    public static func table(_ outcomes: [PolicyOutcome], title: String) -> String {
        let headers = ["policy", "restores", "ratio", "w.cost s", "peak", "over", "overshoot GB·s", "TTR p50/p99 s",
                       "fg.viol", "p.disc", "regret", "victims", "dec p50/p99 µs", "vs LRU", "gap"]
        var rows: [[String]] = []
        for o in outcomes {
            let m = o.metrics
            rows.append([
                m.policy.rawValue,
                String(m.restores),
                Format.fixed(m.restoreRatio, 3),
                Format.fixed(Double(m.weightedRestoreCost) / 1000, 1),
                ByteSize.format(m.peakBytes),
                ByteSize.format(m.peakOverBudget),
                Format.fixed(m.overshoot / 1e9, 2),
                Format.fixed(Double(m.timeToReliefP50) / 1000, 1) + "/" + Format.fixed(Double(m.timeToReliefP99) / 1000, 1),
                String(m.foregroundViolations),
                String(m.pressureDiscards),
                Format.fixed(m.regretRate * 100, 1) + "%",
                String(m.victims),
                Format.fixed(m.decisionMicrosP50, 1) + "/" + Format.fixed(m.decisionMicrosP99, 1),
                o.restoresVsLRU.map { Format.fixed($0, 3) } ?? "-",
                o.gapClosed.map { Format.fixed($0 * 100, 1) + "%" } ?? "n/a",
            ])
        }
        return title + "\n" + render(headers: headers, rows: rows)
    }

    public static func render(headers: [String], rows: [[String]]) -> String {
        var widths = headers.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (i, cell) in cells.enumerated() {
                parts.append(i == 0 ? Format.padRight(cell, widths[i]) : Format.pad(cell, widths[i]))
            }
            var s = parts.joined(separator: "  ")
            while s.last == " " { s.removeLast() }
            return s
        }
        var out = line(headers) + "\n"
        for row in rows { out += line(row) + "\n" }
        return out
    }

    /// One JSON object per policy: the headline figures first, then the rest of the metrics.
    public static func json(_ o: PolicyOutcome, trace: Trace, extra: [(String, JSONValue)] = []) -> String {
        let m = o.metrics
        var w = JSONWriter(reservingCapacity: 1024)
        w.beginObject()
        func key(_ k: String, _ v: Int) {
            w.key(k)
            w.int(v)
        }
        func key(_ k: String, _ v: UInt64) {
            w.key(k)
            w.uint(v)
        }
        func key(_ k: String, _ v: Double?) {
            w.key(k)
            if let v { w.double(v) } else { w.null() }
        }
        w.key("policy")
        w.string(m.policy.rawValue)
        key("restores", m.restores)
        key("weighted_restore_cost", m.weightedRestoreCost)
        key("peak_bytes", m.peakBytes)
        key("overshoot", m.overshoot)
        key("foreground_violations", m.foregroundViolations)
        key("pressure_discards", m.pressureDiscards)
        key("regret_rate", m.regretRate)
        key("decision_us_p50", m.decisionMicrosP50)
        key("decision_us_p99", m.decisionMicrosP99)
        key("gap_closed", o.gapClosed)
        w.key("scenario")
        if let s = trace.scenario { w.string(s) } else { w.null() }
        w.key("seed")
        if let s = trace.seed { w.uint(s) } else { w.null() }
        w.key("budget_bytes")
        if let b = m.budget { w.uint(b) } else { w.null() }
        key("working_set_bytes", m.workingSet)
        key("budget_fraction", m.budget.map { m.workingSet == 0 ? 0 : Double($0) / Double(m.workingSet) })
        key("activations", m.activations)
        key("reactivations", m.reactivations)
        key("restore_ratio", m.restoreRatio)
        key("restores_vs_lru", o.restoresVsLRU)
        key("cost_vs_lru", o.costVsLRU)
        key("peak_over_budget_bytes", m.peakOverBudget)
        key("episodes", m.episodes)
        key("unrelieved_episodes", m.unrelievedEpisodes)
        key("time_to_relief_ms_p50", Double(m.timeToReliefP50))
        key("time_to_relief_ms_p99", Double(m.timeToReliefP99))
        key("time_to_relief_ms_max", Double(m.timeToReliefMax))
        key("victims", m.victims)
        key("disconnects", m.disconnects)
        key("terminations", m.terminations)
        key("suspensions", m.suspensions)
        key("warnings", m.warnings)
        key("cap_discards", m.capDiscards)
        key("regrets", m.regrets)
        key("protected_victims", m.protectedVictims)
        key("refused_commands", m.refusedCommands)
        key("overkill_bytes", m.overkillBytes)
        key("unrelievable_plans", m.unrelievablePlans)
        key("decisions", m.decisions)
        key("ack_slow_victims", m.slowAckVictims)
        key("ack_deferring_victims", m.deferringVictims)
        key("ack_silent_victims", m.silentVictims)
        key("grace_notices", m.graceNotices)
        key("grace_acks", m.graceAcks)
        key("grace_deferrals", m.graceDeferrals)
        key("grace_timeouts", m.graceTimeouts)
        key("trace_refusals", m.traceRefusals)
        for (k, v) in extra {
            w.key(k)
            w.value(v)
        }
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
