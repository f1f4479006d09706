import SceneCore
import SceneTrace
import Varlink

/// The figures: every scenario × budget (a share of each trace's working set) × policy, over
/// several seeds, with mean and spread.
public enum Sweep {
    public struct Cell: Sendable {
        public var scenario: Scenario
        /// Budget as a percentage of the working set.
        public var percent: Double
        public var policy: VictimOrder
        /// One per seed, in seed order.
        public var outcomes: [PolicyOutcome]
        public var seeds: [UInt64]
        public var traces: [Trace]
    }

    public static let defaultPercents: [Double] = [30, 50, 70]

    /// Generates each scenario's trace per seed and replays it at each budget with each policy.
    public static func run(scenarios: [Scenario], seeds: [UInt64], percents: [Double] = defaultPercents,
                           policies: [VictimOrder] = Comparison.allPolicies, size: TraceGenerator.Size = .full,
                           settings: ReplaySettings = ReplaySettings(), clock: NanosecondClock? = nil) -> [Cell] {
        var cells: [Cell] = []
        for scenario in scenarios {
            let traces = seeds.map { TraceGenerator(scenario: scenario, seed: $0, size: size).generate() }
            let workingSets = traces.map { Replayer.workingSet(of: $0, engine: settings.engine) }
            for percent in percents {
                var byPolicy: [VictimOrder: [PolicyOutcome]] = [:]
                for (trace, ws) in zip(traces, workingSets) {
                    var s = settings
                    s.budget = BudgetOption.percent(percent).resolve(workingSet: ws)
                    let outcomes = Comparison.run(trace, policies: policies, settings: s, workingSet: ws, clock: clock)
                    for o in outcomes { byPolicy[o.metrics.policy, default: []].append(o) }
                }
                for policy in policies {
                    cells.append(Cell(scenario: scenario, percent: percent, policy: policy,
                                      outcomes: byPolicy[policy] ?? [], seeds: seeds, traces: traces))
                }
            }
        }
        return cells
    }

    /// Mean, sample standard deviation, minimum and maximum.
    public struct Stats: Sendable {
        public var mean: Double
        public var sd: Double
        public var min: Double
        public var max: Double
        public var count: Int

        public init(_ values: [Double]) {
            count = values.count
            guard !values.isEmpty else {
                mean = .nan
                sd = .nan
                min = .nan
                max = .nan
                return
            }
            var sum = 0.0
            for v in values { sum += v }
            mean = sum / Double(values.count)
            var sq = 0.0
            for v in values { sq += (v - mean) * (v - mean) }
            sd = values.count > 1 ? (sq / Double(values.count - 1)).squareRoot() : 0
            min = values.min()!
            max = values.max()!
        }

        /// `mean ± sd`.
        public func text(_ digits: Int, scale: Double = 1) -> String {
            count == 0 ? "-" : Format.fixed(mean * scale, digits) + "±" + Format.fixed(sd * scale, digits)
        }
    }

    public static func table(_ cells: [Cell]) -> String {
        let headers = ["scenario", "budget", "policy", "restores", "vs LRU", "w.cost s", "cost vs LRU", "gap closed",
                       "gap min..max", "fg.viol", "p.disc", "over max", "TTR p99 s", "regret", "dec p99 µs"]
        var rows: [[String]] = []
        for c in cells {
            let ms = c.outcomes.map(\.metrics)
            let restores = Stats(ms.map { Double($0.restores) })
            let vsLRU = Stats(c.outcomes.compactMap(\.restoresVsLRU))
            let cost = Stats(ms.map { Double($0.weightedRestoreCost) / 1000 })
            let costVs = Stats(c.outcomes.compactMap(\.costVsLRU))
            let gaps = c.outcomes.compactMap(\.gapClosed)
            let gap = Stats(gaps)
            let undefined = c.outcomes.count - gaps.count
            var gapRange = gaps.isEmpty ? "n/a" : Format.fixed(gap.min * 100, 0) + ".." + Format.fixed(gap.max * 100, 0) + "%"
            if undefined > 0 && !gaps.isEmpty { gapRange += " (\(undefined) n/a)" }
            rows.append([
                "\(c.scenario.letter) \(c.scenario.rawValue)",
                Format.fixed(c.percent, 0) + "%",
                c.policy.rawValue,
                restores.text(1),
                vsLRU.text(3),
                cost.text(0),
                costVs.text(3),
                gaps.isEmpty ? "n/a" : gap.text(1, scale: 100) + "%",
                gapRange,
                String(ms.reduce(0) { $0 + $1.foregroundViolations }),
                String(ms.reduce(0) { $0 + $1.pressureDiscards }),
                ByteSize.format(ms.map(\.peakOverBudget).max() ?? 0),
                Format.fixed(Double(ms.map(\.timeToReliefP99).max() ?? 0) / 1000, 1),
                Stats(ms.map(\.regretRate)).text(1, scale: 100) + "%",
                Format.fixed(ms.map(\.decisionMicrosP99).max() ?? 0, 1),
            ])
        }
        return ReplayReport.render(headers: headers, rows: rows)
    }

    /// One JSON object per (scenario, budget, policy, seed).
    public static func jsonLines(_ cells: [Cell]) -> [String] {
        var lines: [String] = []
        for c in cells {
            for (i, o) in c.outcomes.enumerated() {
                lines.append(ReplayReport.json(o, trace: c.traces[i], extra: [("budget_percent", .double(c.percent))]))
            }
        }
        return lines
    }
}
