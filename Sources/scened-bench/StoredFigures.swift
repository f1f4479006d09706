import Glibc

/// Transitions on 8 connections with a small store and with `bigCount`
/// sessions stored (filled directly, live in the background, 100 apps), the same calls on the
/// same 8,000 sessions, side by side in one run: the ratio says what the stored sessions cost.
func storedFigures() throws {
    say("\n== throughput with sessions stored: Activate/Background on 8,000 sessions, 8 connections, window 512 ==")
    say("target (issue 16): ≥ 130000 transitions/s on 8 connections with \(bigCount) sessions stored")
    var rates: [Int: [Int]] = [:]
    for durability in ["off", "normal"] {
        for count in [10_000, bigCount] {
            let dir = makeDirectory()
            defer { removeTree(dir) }
            let daemon = BenchDaemon(binary: binary, directory: dir)
            _ = try fillStore(stateDirectory: daemon.stateDirectory, count: count, archived: false)
            try daemon.start(config: config(durability: durability))
            defer { daemon.stop() }
            usleep(300_000)
            let rss = daemon.residentBytes()
            var runs: [Int] = []
            var cpu = 0
            for _ in 0..<3 {
                let run = try measuredTransitions(daemon, connections: 8)
                runs.append(perSecond(run.count, run.seconds))
                cpu = run.daemonCPU
            }
            runs.sort()
            rates[count, default: []].append(runs[1])
            say("Durability=\(durability), \(count) stored: \(runs[1]) transitions/s (median of 3: \(runs.map(String.init).joined(separator: ", "))); daemon CPU \(cpu)%; RSS \(mb(rss)) before")
        }
        if let small = rates[10_000]?.last, let big = rates[bigCount]?.last {
            let met = big >= 130_000 ? "met" : "MISSED"
            say("  → \(bigCount) stored at \(Int((Double(big) / Double(small) * 100).rounded())) % of 10000 stored; \(big) vs ≥ 130000: \(met)")
        }
    }
}
