import Glibc
import SceneCore
import SceneReplay

extension Verb {
    /// `scenectl simulate`: the trace replayer of SceneReplay (the same code as `scene-replay`),
    /// run locally on a virtual clock; it never talks to the daemon.
    static let simulate = Verb(
        "simulate", section: .daemon, synopsis: "[TRACE.jsonl] [--policy P,...] [--budget B] [--svg FILE] ...",
        summary: "Replay a trace against the reclaim policy and its baselines (no daemon)",
        details: "Replays a JSON-lines trace (its format is in scenectl(1); examples in /usr/share/doc/scened/examples) on a virtual clock through the real reclaim policy and the baselines lru, largest, chrome, lmkd and opt (Belady), and prints the metrics of each: restores, weighted restore cost, peak and overshoot, time to relief, foreground violations, pressure discards, regret rate, decision cost and gap closed. --json prints one object per policy. A trace from 'scenectl export-trace' replays with the daemon's settings (--budget, --aging and --settle still override them); --actions lists the reclaim actions, to compare with 'scenectl pressure' history. Without a trace: --generate writes or replays a seeded scenario, --sweep replays scenarios × seeds × budgets, --decision-bench times decide().",
        options: [
            OptionSpec("policy", value: "P,...", "ours, lru, largest, chrome, lmkd, opt (default: all)"),
            OptionSpec("budget", value: "B", "Base budget: bytes (1.5G, 800M) or a share of the working set (50%)"),
            OptionSpec("svg", value: "FILE", "Write a chart of the latest episode: usage against budget, actions marked"),
            OptionSpec("all", "With --svg: chart the whole replay, not only its latest episode"),
            OptionSpec("generate", value: "SCENARIO", "mix, pingpong, size, spikes, acks (or a-e)"),
            OptionSpec("seed", value: "N", "Generator seed (default 1)"),
            OptionSpec("size", value: "SIZE", "fixture or full (default full)"),
            OptionSpec("out", value: "FILE", "With --generate: write the trace instead of replaying it"),
            OptionSpec("sweep", "Replay at 30, 50 and 70 % of the working set"),
            OptionSpec("scenarios", value: "S,...", "With --sweep and no trace: the scenarios (default all)"),
            OptionSpec("seeds", value: "N,...|A-B", "With --sweep and no trace: the seeds (default 1-5)"),
            OptionSpec("budgets", value: "P,...", "With --sweep: budget shares in percent (default 30,50,70)"),
            OptionSpec("decision-bench", "Time decide() over many sessions (build with -c release)"),
            OptionSpec("sessions", value: "N,...", "With --decision-bench: session counts (default 1000,100000)"),
            OptionSpec("log", "List every restore and every victim"),
            OptionSpec("actions", "Print only the reclaim actions taken: POLICY T_MS ACTION TARGET per line (with --json, one object each)"),
            OptionSpec("aging", value: "SECONDS", "The policy's aging time (default 10)"),
            OptionSpec("settle", value: "MS", "The policy's settle time (default 1000)"),
        ],
        arguments: 0...1,
        run: { invocation in
            var arguments = invocation.arguments
            for name in ["policy", "budget", "svg", "generate", "seed", "size", "out", "scenarios", "seeds", "budgets",
                         "sessions", "aging", "settle"] {
                if let value = invocation.options.value(name) { arguments += ["--" + name, value] }
            }
            for name in ["sweep", "decision-bench", "log", "actions", "all"] where invocation.options.flag(name) {
                arguments.append("--" + name)
            }
            if invocation.global.json { arguments.append("--json") }
            let context = invocation.context
            let io = ReplayIO(
                readFile: SimulateFiles.read, writeFile: SimulateFiles.write,
                standardOutput: { try? context.out.write($0) }, standardError: { try? context.err.write($0) },
                clock: SimulateFiles.monotonicNanos, cpuClock: SimulateFiles.threadCPUNanos)
            let outcome = ReplayCommand.run(arguments: arguments, io: io)
            if let message = outcome.message {
                throw ControlError(outcome.status == 2 ? .usage : .failure,
                                   message + (outcome.status == 2 ? " (see 'scenectl simulate --help')" : ""))
            }
        })
}

/// File access and clocks for `simulate` (SceneReplay itself does no I/O).
enum SimulateFiles {
    static func read(_ path: String) throws(ReplayIOError) -> [UInt8] {
        guard let f = fopen(path, "rb") else { throw ReplayIOError(String(cString: strerror(errno))) }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            out.append(contentsOf: buffer[0..<n])
            if n < buffer.count {
                if ferror(f) != 0 { throw ReplayIOError(String(cString: strerror(errno))) }
                return out
            }
        }
    }

    static func write(_ path: String, _ text: String) throws(ReplayIOError) {
        guard let f = fopen(path, "wb") else { throw ReplayIOError(String(cString: strerror(errno))) }
        var bytes = Array(text.utf8)
        let written = bytes.withUnsafeMutableBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        guard fclose(f) == 0, written == bytes.count else { throw ReplayIOError(String(cString: strerror(errno))) }
    }

    static func monotonicNanos() -> UInt64 { nanos(CLOCK_MONOTONIC) }
    static func threadCPUNanos() -> UInt64 { nanos(CLOCK_THREAD_CPUTIME_ID) }

    private static func nanos(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
