import Glibc
import ProcessKit
import Varlink

// `scened-bench launch`: apps scened starts itself (ExecStart=), measured against what the
// kernel does for the same work, side by side in one run:
//   1. Connect → the app's attach → didBecomeActive → the Connect reply, each round a cold
//      launch of a new scene-notes process (the previous one terminated and gone);
//   2. a bare fork/exec of the same binary (`scene-notes --help`, which prints and exits), with
//      posix_spawn and with ProcessKit's ProcessSpawner (scened's own spawner, no cgroup);
//   3. freeze and thaw as scened does them (the `suspended` event → cgroup.events `frozen 1`;
//      Activate sent → `frozen 0` and → its reply) against the kernel alone (cgroup.freeze
//      written by hand on a scratch cgroup holding one busy, or one sleeping, process);
//   4. the memory of K copies holding --hold-mib MiB each: declared, measured by scened, Pss.
// Figures only: the issue sets no target for any of them.

/// The case's settings: `--rounds N` (1–3), `--copies K` and `--hold-mib M` (4).
struct LaunchSettings {
    var rounds = max(1, option("--rounds", 30))
    var copies = max(1, option("--copies", 5))
    var holdMiB = max(1, option("--hold-mib", 64))
    let suspendDelay = "100ms"
    let measureInterval = "1s"
}

func launchFigures() throws {
    let settings = LaunchSettings()
    let directory = makeDirectory()
    // The bench moves into a cgroup of its own first: the daemon, the apps it starts and the
    // scratch cgroups are all below it, apart from anyone else's (scened removes what a dead
    // scened left beside its own cgroup: here it finds only its own), and nothing of it can
    // outlive the run.
    let fence = BenchCgroup()
    fence?.killOnSignals()
    let bench = LaunchBench(settings: settings, directory: directory)
    defer {
        bench.cleanUp()
        fence?.end()
        removeTree(directory)
    }
    do {
        try bench.run()
    } catch {
        // What the daemon logged (LogLevel=notice: its warnings and the apps' output) explains
        // most failures; the directory goes with the clean-up.
        let log = (try? readFile(directory + "/scened.log")) ?? ""
        say("scened's log, last lines:\n" + log.split(separator: "\n").suffix(30).joined(separator: "\n"))
        throw error
    }
}

// MARK: - Statistics and clocks

/// A duration in seconds, in µs below a millisecond, else in ms with two decimals.
func duration(_ s: Double) -> String {
    if s.isNaN { return "n/a" }
    if abs(s) < 1e-3 { return "\(Int((s * 1e6).rounded())) µs" }
    let v = (s * 100_000).rounded() / 100
    return "\(v) ms"
}

/// "p50 X, p90 Y, max Z" of `samples` for the given percentiles (AppFigures' percentile: the
/// sample at index ⌊n·p⌋; 1.0 prints as max).
func spread(_ samples: [Double], _ ps: [Double]) -> String {
    let sorted = samples.sorted()
    return ps.map { p in
        let name = p >= 1 ? "max" : "p\(Int((p * 100).rounded()))"
        return "\(name) \(duration(percentile(sorted, p) ?? .nan))"
    }.joined(separator: ", ")
}

/// A label padded to one column, then its figures.
func row(_ label: String, _ figures: String) -> String {
    label + String(repeating: " ", count: max(1, 48 - label.count)) + figures
}

func ratio(_ a: Double, _ b: Double, decimals: Int = 1) -> String {
    guard b > 0, !a.isNaN, !b.isNaN else { return "n/a" }
    let scale = decimals == 1 ? 10.0 : 100.0
    return "\((a / b * scale).rounded() / scale)×"
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, seconds. The daemon's event times are CLOCK_MONOTONIC
/// anchored to the wall clock once at its start (DaemonClock): this offset, read just before
/// the daemon starts, turns them into the bench's monotonic time (off by whatever NTP slews
/// in those milliseconds, which is nothing measurable).
func wallOffset() -> Double {
    var real = timespec(), mono = timespec()
    clock_gettime(CLOCK_REALTIME, &real)
    clock_gettime(CLOCK_MONOTONIC, &mono)
    return (Double(real.tv_sec) - Double(mono.tv_sec)) + (Double(real.tv_nsec) - Double(mono.tv_nsec)) / 1e9
}
