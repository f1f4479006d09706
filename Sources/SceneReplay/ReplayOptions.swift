import SceneCore

extension ReplayCommand {
    /// The command line, taken apart.
    struct Options {
        var trace: String?
        var policies: [VictimOrder] = Comparison.allPolicies
        var budget: BudgetOption?
        var json = false
        var svg: String?
        /// The chart shows the whole replay instead of its latest episode.
        var chartAll = false
        var generate: Scenario?
        var seed: UInt64 = 1
        var size: TraceGenerator.Size = .full
        var out: String?
        var sweep = false
        var scenarios: [Scenario] = Scenario.allCases
        var seeds: [UInt64] = [1, 2, 3, 4, 5]
        var percents: [Double] = Sweep.defaultPercents
        var bench = false
        var benchSessions: [Int] = [1_000, 100_000]
        var help = false
        var reclaim = ReclaimConfiguration()
        var log = false
        var actions = false
        /// Given on the command line: they win over a trace's recorded settings.
        var agingGiven = false
        var settleGiven = false
    }

    struct UsageError: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// The next argument, the value of the option before it.
    typealias Value = (_ option: String) throws(UsageError) -> String

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var o = Options()
        var i = 0
        func value(_ name: String) throws(UsageError) -> String {
            i += 1
            guard i < arguments.count else { throw UsageError("\(name) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            let a = arguments[i]
            if a == "-h" || a == "--help" {
                o.help = true
            } else if try !o.option(a, value) {
                try o.traceArgument(a)
            }
            i += 1
        }
        try o.check()
        return o
    }

    /// `1,2,3` or `1-5`.
    static func seedList(_ text: String) throws(UsageError) -> [UInt64] {
        var seeds: [UInt64] = []
        for part in text.split(separator: ",") {
            let bounds = part.split(separator: "-")
            if bounds.count == 2, let lo = UInt64(bounds[0]), let hi = UInt64(bounds[1]), lo <= hi, hi - lo < 1000 {
                seeds.append(contentsOf: lo...hi)
            } else if let n = UInt64(part) {
                seeds.append(n)
            } else {
                throw UsageError("invalid seed list \"\(text)\"")
            }
        }
        return seeds
    }
}

extension ReplayCommand.Options {
    typealias UsageError = ReplayCommand.UsageError

    /// An option of any group; false if `a` is none.
    mutating func option(_ a: String, _ value: ReplayCommand.Value) throws(UsageError) -> Bool {
        if try replayOption(a, value) { return true }
        if try generateOption(a, value) { return true }
        if try sweepOption(a, value) { return true }
        return try benchOption(a, value)
    }

    /// How a trace is replayed and reported; false if `a` is none of these.
    mutating func replayOption(_ a: String, _ value: ReplayCommand.Value) throws(UsageError) -> Bool {
        switch a {
        case "--json": json = true
        case "--policy", "--policies":
            policies = []
            for name in try value(a).split(separator: ",") {
                guard let p = VictimOrder(rawValue: String(name)) else {
                    throw UsageError("unknown policy \"\(name)\" (ours, lru, largest, chrome, lmkd, opt)")
                }
                if !policies.contains(p) { policies.append(p) }
            }
            if policies.isEmpty { throw UsageError("--policy needs at least one policy") }
        case "--budget":
            let text = try value(a)
            guard let b = BudgetOption.parse(text) else { throw UsageError("invalid budget \"\(text)\" (e.g. 1.5G, 800M, 50%)") }
            budget = b
        case "--svg": svg = try value(a)
        case "--all": chartAll = true
        case "--log": log = true
        case "--actions": actions = true
        case "--aging":
            let text = try value(a)
            guard let n = Int64(text), n >= 0 else { throw UsageError("--aging takes whole seconds") }
            reclaim.aging = .seconds(n)
            agingGiven = true
        case "--settle":
            let text = try value(a)
            guard let n = Int64(text), n >= 0 else { throw UsageError("--settle takes whole milliseconds") }
            reclaim.settle = .milliseconds(n)
            settleGiven = true
        default: return false
        }
        return true
    }

    /// `--generate` and its seed, size and output file.
    mutating func generateOption(_ a: String, _ value: ReplayCommand.Value) throws(UsageError) -> Bool {
        switch a {
        case "--generate":
            let name = try value(a)
            guard let s = Scenario(named: name) else {
                throw UsageError("unknown scenario \"\(name)\" (mix, pingpong, size, spikes, acks or a–e)")
            }
            generate = s
        case "--seed":
            let text = try value(a)
            guard let n = UInt64(text) else { throw UsageError("invalid seed \"\(text)\"") }
            seed = n
        case "--size":
            guard let s = TraceGenerator.Size(rawValue: try value(a)) else { throw UsageError("--size is fixture or full") }
            size = s
        case "--out": out = try value(a)
        default: return false
        }
        return true
    }

    /// `--sweep`: which scenarios, seeds and shares of the working set.
    mutating func sweepOption(_ a: String, _ value: ReplayCommand.Value) throws(UsageError) -> Bool {
        switch a {
        case "--sweep": sweep = true
        case "--scenarios":
            scenarios = []
            for name in try value(a).split(separator: ",") {
                guard let s = Scenario(named: String(name)) else { throw UsageError("unknown scenario \"\(name)\"") }
                scenarios.append(s)
            }
        case "--seeds": seeds = try ReplayCommand.seedList(try value(a))
        case "--budgets":
            percents = []
            for part in try value(a).split(separator: ",") {
                let text = part.hasSuffix("%") ? part.dropLast() : part
                guard let p = Double(text), p > 0 else { throw UsageError("invalid budget share \"\(part)\"") }
                percents.append(p)
            }
        default: return false
        }
        return true
    }

    /// `--decision-bench` and its session counts.
    mutating func benchOption(_ a: String, _ value: ReplayCommand.Value) throws(UsageError) -> Bool {
        switch a {
        case "--decision-bench": bench = true
        case "--sessions":
            benchSessions = []
            for part in try value(a).split(separator: ",") {
                guard let n = Int(part), n > 0 else { throw UsageError("invalid session count \"\(part)\"") }
                benchSessions.append(n)
            }
        default: return false
        }
        return true
    }

    /// Not an option: the trace file (`-` is standard input's name, not an option).
    mutating func traceArgument(_ a: String) throws(UsageError) {
        if a.hasPrefix("-") && a != "-" { throw UsageError("unknown option \(a)") }
        if trace != nil { throw UsageError("one trace file at a time") }
        trace = a
    }

    /// What the options say together.
    func check() throws(UsageError) {
        if !help && !bench && !sweep && trace == nil && generate == nil {
            throw UsageError("a trace file, --generate, --sweep or --decision-bench is needed")
        }
        if trace != nil && generate != nil { throw UsageError("give a trace file or --generate, not both") }
    }
}
