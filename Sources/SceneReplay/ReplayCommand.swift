import SceneCore
import SceneTrace
import Varlink

/// What the command line needs from the outside world, injected so that the library stays pure
/// and `scene-replay` and `scenectl simulate` share one implementation.
public struct ReplayIO {
    public var readFile: (String) throws(ReplayIOError) -> [UInt8]
    public var writeFile: (String, String) throws(ReplayIOError) -> Void
    public var standardOutput: (String) -> Void
    public var standardError: (String) -> Void
    /// Monotonic nanoseconds, for decision timing.
    public var clock: NanosecondClock?
    /// The calling thread's CPU time in nanoseconds (the decision bench reports it beside wall
    /// time, which other processes on a busy machine inflate).
    public var cpuClock: NanosecondClock?

    public init(readFile: @escaping (String) throws(ReplayIOError) -> [UInt8],
                writeFile: @escaping (String, String) throws(ReplayIOError) -> Void,
                standardOutput: @escaping (String) -> Void, standardError: @escaping (String) -> Void,
                clock: NanosecondClock?, cpuClock: NanosecondClock? = nil) {
        self.cpuClock = cpuClock
        self.readFile = readFile
        self.writeFile = writeFile
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.clock = clock
    }
}

public struct ReplayIOError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// `scene-replay` / `scenectl simulate`: replay a trace (or a generated one) against the
/// policies, print the §2 metrics, optionally a chart; generate traces; time `decide`.
public enum ReplayCommand {
    public static let usage = """
    Usage:
      scene-replay TRACE.jsonl [--policy P[,P...]] [--budget B] [--json] [--svg FILE [--all]]
      scene-replay --generate SCENARIO --seed N [--size fixture|full] [--out FILE]
      scene-replay --sweep [TRACE.jsonl | --scenarios S,S... --seeds N,N...|A-B] [--size ...] [--json]
      scene-replay --decision-bench [--sessions N,N...]

    Policies: ours, lru, largest, chrome, lmkd, opt (default: all six).
    Budget: bytes (1.5G, 800M, 64K, 1500000000) or a share of the trace's working set (50%).
      Without --budget the trace's own budget lines apply.
    Scenarios: mix (a), pingpong (b), size (c), spikes (d), acks (e).
    --generate with --out writes the trace to FILE; without --out it replays it at once.
    --sweep replays at 30, 50 and 70 % of each trace's working set (--budgets to change).
    --json prints one JSON object per policy (per line) instead of the table.
    --svg charts the latest episode (pressure or reclaim actions) with a margin; --all the whole replay.
    --log lists every restore and every victim; --aging S and --settle MS change the policy's
      aging (10 s) and settle time (1000 ms) for every policy.
    --actions prints only the reclaim actions each policy took, one line each: POLICY T_MS KIND
      TARGET (with --json, one object each), to compare with the daemon's pressure history.
    A trace exported by scened (scenectl export-trace) replays with the daemon's own settings.

    """

    /// How a run ended: its exit status (0 ok, 1 failure, 2 usage error) and, on failure, the
    /// message (without a program name), for a caller that reports errors its own way
    /// (`scenectl simulate`).
    public struct Outcome: Sendable, Equatable {
        public var status: Int32
        public var message: String?
    }

    /// Runs the command: results go to `io.standardOutput` (and files), the failure comes back.
    public static func run(arguments: [String], io: ReplayIO) -> Outcome {
        let options: Options
        do {
            options = try parse(arguments)
        } catch {
            return Outcome(status: 2, message: error.message)
        }
        if options.help {
            io.standardOutput(usage)
            return Outcome(status: 0, message: nil)
        }
        do {
            return Outcome(status: try run(options, io: io), message: nil)
        } catch {
            return Outcome(status: 1, message: error.message)
        }
    }

    /// `scene-replay`'s main: runs, prints a failure as "PROGRAM: message" (with the usage for
    /// a usage error) and returns the exit status.
    public static func main(arguments: [String], io: ReplayIO, program: String = "scene-replay") -> Int32 {
        let outcome = run(arguments: arguments, io: io)
        if let message = outcome.message {
            io.standardError("\(program): \(message)\n" + (outcome.status == 2 ? "\n" + usage : ""))
        }
        return outcome.status
    }

    static func run(_ o: Options, io: ReplayIO) throws(UsageError) -> Int32 {
        if o.bench { return try bench(o, io: io) }
        if o.sweep && o.trace == nil && o.generate == nil {
            sweepScenarios(o, io: io)
            return 0
        }
        guard case let (trace, label)? = try loadTrace(o, io: io) else { return 0 }
        try replay(trace, label: label, o, io: io)
        return 0
    }

    /// `--sweep` without a trace: the generated scenarios × seeds × budget shares.
    static func sweepScenarios(_ o: Options, io: ReplayIO) {
        let cells = Sweep.run(scenarios: o.scenarios, seeds: o.seeds, percents: o.percents, policies: o.policies,
                              size: o.size, settings: ReplaySettings(reclaim: o.reclaim), clock: io.clock)
        if o.json {
            for line in Sweep.jsonLines(cells) { io.standardOutput(line + "\n") }
        } else {
            io.standardOutput("seeds \(o.seeds.map(String.init).joined(separator: ",")), size \(o.size.rawValue); "
                              + "mean±sd over seeds\n" + Sweep.table(cells))
        }
    }

    /// The trace to replay and its label: generated, or read from its file. nil when a generated
    /// trace went to `--out` instead.
    static func loadTrace(_ o: Options, io: ReplayIO) throws(UsageError) -> (Trace, String)? {
        if let scenario = o.generate {
            let trace = TraceGenerator(scenario: scenario, seed: o.seed, size: o.size).generate()
            guard let out = o.out else { return (trace, "\(scenario.letter) \(scenario.rawValue), seed \(o.seed)") }
            do {
                try io.writeFile(out, TraceWriter.write(trace))
            } catch {
                throw UsageError("cannot write \(out): \(error.message)")
            }
            io.standardError("wrote \(trace.events.count) events to \(out)\n")
            return nil
        }
        let path = o.trace!
        let bytes: [UInt8]
        do {
            bytes = try io.readFile(path)
        } catch {
            throw UsageError("cannot read \(path): \(error.message)")
        }
        do {
            return (try TraceParser.parse(bytes), path)
        } catch {
            throw UsageError("\(path): \(error)")
        }
    }

    /// Every policy at every budget asked for, each budget's outcomes reported as they come; the
    /// chart, if asked for, shows them all.
    static func replay(_ trace: Trace, label: String, _ o: Options, io: ReplayIO) throws(UsageError) {
        let base = replaySettings(o, recorded: trace.settings)
        let ws = Replayer.workingSet(of: trace, engine: base.engine)
        var chartSeries: [SVGChart.Series] = []
        for (name, budget) in budgets(o, workingSet: ws) {
            var settings = base
            settings.budget = budget
            settings.recordTimeline = o.svg != nil || o.log
            let outcomes = Comparison.run(trace, policies: o.policies, settings: settings, workingSet: ws, clock: io.clock)
            report(outcomes, budget: name, trace: trace, label: label, workingSet: ws, o, io: io)
            for outcome in outcomes {
                chartSeries.append(SVGChart.Series(label: "\(outcome.metrics.policy.rawValue), budget \(name): "
                    + "\(outcome.metrics.restores) restores", result: outcome.result))
            }
        }
        if let svg = o.svg {
            let watermarks = ReclaimConfiguration().watermarks
            let text = SVGChart.render(chartSeries, title: label, watermarks: (watermarks.low, watermarks.high),
                                       window: o.chartAll ? .all : .latestEpisode)
            do {
                try io.writeFile(svg, text)
            } catch {
                throw UsageError("cannot write \(svg): \(error.message)")
            }
        }
    }

    /// The command line's settings; an exported trace's recorded ones win over the defaults,
    /// but not over `--aging` and `--settle`.
    static func replaySettings(_ o: Options, recorded: TraceSettings?) -> ReplaySettings {
        var settings = ReplaySettings(reclaim: o.reclaim)
        if let recorded {
            settings.adopt(recorded)
            if o.agingGiven { settings.reclaim.aging = o.reclaim.aging }
            if o.settleGiven { settings.reclaim.settle = o.reclaim.settle }
        }
        settings.recordActions = o.actions
        return settings
    }

    /// The budgets to replay at, each with its name: the sweep's shares of the working set,
    /// `--budget`, or the trace's own budget lines.
    static func budgets(_ o: Options, workingSet ws: UInt64) -> [(String, UInt64?)] {
        if o.sweep {
            return o.percents.map { ("\(Format.fixed($0, 0))%", BudgetOption.percent($0).resolve(workingSet: ws)) }
        }
        if let b = o.budget { return [(describe(b), b.resolve(workingSet: ws))] }
        return [("trace budget", nil)]
    }

    /// One budget's outcomes: the actions, JSON objects or the table (notes to standard error),
    /// then with `--log` every restore and victim.
    static func report(_ outcomes: [PolicyOutcome], budget name: String, trace: Trace, label: String, workingSet ws: UInt64,
                       _ o: Options, io: ReplayIO) {
        if o.actions {
            for outcome in outcomes { io.standardOutput(actionLines(outcome, json: o.json)) }
        } else if o.json {
            for outcome in outcomes { io.standardOutput(ReplayReport.json(outcome, trace: trace) + "\n") }
        } else {
            let b = outcomes.first?.metrics.budget
            let title = "\(label): \(trace.events.count) events, working set \(ByteSize.format(ws)), budget "
                + (b.map { "\(ByteSize.format($0)) (\(name))" } ?? "unlimited")
            io.standardOutput(ReplayReport.table(outcomes, title: title) + "\n")
            for outcome in outcomes where !outcome.result.notes.isEmpty {
                io.standardError("\(outcome.metrics.policy.rawValue): " + outcome.result.notes.joined(separator: "; ") + "\n")
            }
        }
        if o.log {
            for outcome in outcomes {
                io.standardOutput("== \(outcome.metrics.policy.rawValue)\n" + outcome.result.log.joined(separator: "\n") + "\n")
            }
        }
    }

    /// `--actions`: one line per reclaim action of one policy's run.
    static func actionLines(_ outcome: PolicyOutcome, json: Bool) -> String {
        let policy = outcome.metrics.policy.rawValue
        var out = ""
        for a in outcome.result.actions {
            if json {
                var w = JSONWriter()
                w.beginObject()
                w.key("policy"); w.string(policy)
                w.key("t"); w.int(a.time)
                w.key("action"); w.string(a.kind)
                w.key("target"); w.string(a.target)
                w.endObject()
                out += String(decoding: w.bytes, as: UTF8.self) + "\n"
            } else {
                out += "\(policy) \(a.time) \(a.kind) \(a.target)\n"
            }
        }
        return out
    }

    static func describe(_ b: BudgetOption) -> String {
        switch b {
        case .bytes(let n): ByteSize.format(n)
        case .percent(let p): "\(Format.fixed(p, 0))% of working set"
        }
    }

    static func bench(_ o: Options, io: ReplayIO) throws(UsageError) -> Int32 {
        guard let clock = io.clock else { throw UsageError("no clock to time decisions with") }
        var rows: [[String]] = []
        var matches = 0, compared = 0
        for n in o.benchSessions {
            for (level, base) in [(PressureLevel.warning, UInt64(0)), (.critical, 0), (.critical, 30_000_000)] {
                // Side by side in one run, so that both see the same machine: the index (what
                // decisions use) and the scan (the reference its plans must equal).
                for selection in [VictimSelection.index, .scan] {
                    // Enough samples for a p99 that is not the maximum where decisions are cheap,
                    // fewer where the scan makes each one slow.
                    let samples = n <= 10_000 ? 1_000 : selection == .index ? 500 : 60
                    let r = DecisionBench.run(sessions: n, level: level, appFootprint: base, samples: samples, clock: clock,
                                              cpuClock: io.cpuClock, selection: selection)
                    compared += 1
                    if r.sameAsScan { matches += 1 }
                    // Targets on wall p99, µs: what a pass can spend deciding without delaying
                    // the calls behind it; the scan's are looser, it is only the reference.
                    let limit: Double = selection == .index ? (n <= 1_000 ? 1_000 : n <= 100_000 ? 2_000 : .infinity)
                        : (n <= 1_000 ? 1_000 : n <= 100_000 ? 50_000 : .infinity)
                    rows.append([String(n), level.name + (base > 0 ? " +apps" : ""), selection == .index ? "index" : "scan",
                                 String(samples), String(r.stepsPerDecision),
                                 Format.fixed(r.p50, 1), Format.fixed(r.p99, 1), Format.fixed(r.max, 1),
                                 r.cpuSamples.isEmpty ? "-" : Format.fixed(r.cpuP50, 1),
                                 r.cpuSamples.isEmpty ? "-" : Format.fixed(r.cpuP99, 1),
                                 limit.isFinite ? (r.p99 <= limit ? "ok" : "OVER") + " (≤ \(Format.fixed(limit / 1000, 0)) ms)" : "-"])
                }
            }
        }
        io.standardOutput("decide() time per decision, µs (wall; cpu = the thread's CPU time; +apps: every app holds "
            + "30 MB of its own, so each suspended app is a termination candidate; index: victims from the engine's "
            + "candidate index, as decisions are made; scan: every session, as before the index)\n"
            + ReplayReport.render(headers: ["sessions", "level", "victims", "samples", "steps", "wall p50", "wall p99", "wall max",
                                            "cpu p50", "cpu p99", "target (wall p99)"],
                                  rows: rows)
            + "plans identical to the scan's: \(matches) of \(compared) cases\n")
        return 0
    }
}
