import Glibc
import ProcessKit

// `scened-bench wake`: background work (R34), in two parts.
//   1. Notify to a suspended, frozen app → its notification handler running (a probe scened
//      starts, this binary's `wake-probe` mode), N rounds, each after a round of the kernel's
//      floor: a process of ours blocked reading a pipe that already holds a byte, frozen,
//      then cgroup.freeze=0 → its answer. Target: p99 ≤ 2 × floor p99 + 1 ms.
//   2. A thousand attached apps whose refresh tasks fall due in the same second: the wakes,
//      the peak number of apps awake at once against MaxConcurrentWakes=, the time until every
//      task completed, scened's CPU time; then three tasks each within 10 s, one thaw for them.

struct WakeSettings {
    /// 1,000: a p99 of 200 rounds is their second or third largest, so one stall of the
    /// machine (a kernel thread holding a CPU for 1–3 ms, seen here about once a second) decides
    /// it; of 1,000 it is the tenth largest. A run takes about 15 s.
    var rounds = max(1, option("--rounds", 1000))
    var apps = max(1, option("--apps", 1000))
    var caps = stringOption("--caps", "4,32").split(separator: ",").compactMap { Int($0) }
    /// Seconds from the first ScheduleBackgroundTask to T (the tasks' due time): every task
    /// must be in by then.
    var lead = Double(max(1, option("--lead", 10)))
    var sampleInterval = 0.01
    /// Part 2's tasks of the coalescing case, seconds after T.
    let spread: [Int64] = [0, 4, 9]
    var parts = stringOption("--parts", "1,2")
    /// scened's default: a Notify's reply then means the notification is on disk.
    var durability = stringOption("--durability", "full")
}

func wakeFigures() throws {
    let settings = WakeSettings()
    let fence = BenchCgroup()
    fence?.killOnSignals()
    defer { fence?.end() }
    // Left as it is (not tightened as `launch` does): scened and its apps inherit it, and the
    // figures are meant for a scened at the usual 50 µs; no measured wait here is a timer's.
    let slack = "timer slack \(timerSlack(of: getpid()))"
    #if DEBUG
    let build = "DEBUG build (figures not meaningful)"
    #else
    let build = "release build"
    #endif
    say("\n== wake: background work (R34) ==")
    say("conditions: \(build); \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs; \(loadLine("load average at start")); kernel \(kernel()); bench \(slack); euid \(geteuid())")
    say("cgroups: the bench, its daemons and everything they start are below \(Cgroup.own() ?? "(no cgroup v2)")")
    if settings.parts.contains("1") { try notifyPart(settings) }
    if settings.parts.contains("2") {
        for tasks in [1, 3] {
            for cap in settings.caps { try fleetPart(settings, cap: cap, tasksPerApp: tasks) }
        }
    }
    say(loadLine("load average at end"))
}

// MARK: - 1

private func notifyPart(_ settings: WakeSettings) throws {
    let directory = makeDirectory()
    defer { removeTree(directory) }
    let bench = NotifyBench(rounds: settings.rounds, directory: directory, durability: settings.durability)
    let p = [0.5, 0.99, 1]
    say("\n-- 1. Notify → the notification handler of a frozen app, \(settings.rounds) rounds (after one that started it), each after a round of the kernel's floor --")
    let s: NotifySamples
    do { s = try bench.run() } catch {
        say("scened's log, last lines:\n" + logTail(directory))
        throw error
    }
    say("kernel floor: one process of the bench's in \(s.floorCgroup), blocked reading a FIFO; frozen, a byte written, then cgroup.freeze=0")
    say(row("cgroup.freeze=0 written → its answer", spread(s.floor, p)))
    say(row("cgroup.freeze=0 written → the bench read it", spread(s.floorSeen, p)))
    say("daemon: private scened, Durability=\(settings.durability), LogLevel=notice, SuspendDelaySec=\(NotifyBench.suspendDelay), [Background] defaults; state directory on \(filesystem(of: directory)); its timer slack \(s.daemonSlack)")
    say("app: \(NotifyBench.app), ExecStart=\(benchBinary) wake-probe FIFO; it writes its CLOCK_MONOTONIC time to the FIFO once it has read and parsed didReceiveNotification (and when its poll for it returned), then Acknowledges it; each round waits for frozen 1 in \(s.cgroup) and 5 ms before its Notify; a Monitor stream open for the event times")
    say(row("Notify written → handler running", spread(s.handler, p)))
    say(row("Notify written → event made (daemon)", spread(s.made, p)))
    say(row("Notify written → Notify reply read", spread(s.replied, p)))
    say(row("Notify written → the probe's poll returned", spread(s.woken, p)))
    say(row("handler running → frozen 1 again", spread(s.refrozen, p)))
    let p99 = percentile(s.handler.sorted(), 0.99) ?? .nan
    let floor = percentile(s.floor.sorted(), 0.99) ?? .nan
    let target = 2 * floor + 0.001
    say("  → Notify → handler p99 \(duration(p99)) vs target ≤ 2 × floor p99 + 1 ms = \(duration(target)): \(p99 <= target ? "PASS" : "MISS")")
}

/// The end of scened's log, without the line per app its closing connections leave.
private func logTail(_ directory: String) -> String {
    let log = (try? readFile(directory + "/scened.log")) ?? ""
    return log.split(separator: "\n").filter { !$0.hasSuffix("0 sessions archived.") }.suffix(30).joined(separator: "\n")
}

private func kernel() -> String {
    var u = utsname()
    uname(&u)
    return withUnsafeBytes(of: u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

/// A process's timer slack (its timers fire up to this late), from /proc.
func timerSlack(of pid: Int32) -> String {
    guard let text = try? readFile("/proc/\(pid)/timerslack_ns"), let ns = Int(text.trimmingSuffixNewline) else { return "?" }
    return ns >= 1000 ? "\(ns / 1000) µs" : "\(ns) ns"
}

// MARK: - 2

private func fleetPart(_ settings: WakeSettings, cap: Int, tasksPerApp: Int) throws {
    let directory = makeDirectory()
    defer { removeTree(directory) }
    let n = settings.apps
    raiseOpenFiles(to: 2 * n + 256)
    let daemon = BenchDaemon(binary: binary, directory: directory)
    try daemon.start(config: config(durability: settings.durability) + """

        [Lifecycle]
        SuspendDelaySec=100ms
        [Background]
        MaxConcurrentWakes=\(cap)
        [Limits]
        MaxConnections=\(max(4096, 2 * n + 64))
        MaxConnectionsPerUser=\(max(1024, 2 * n + 64))
        """)
    defer { daemon.stopWithin(30) }
    let slack = timerSlack(of: daemon.pid)
    let run: FleetRun
    do { run = try fleetRun(daemon, settings, tasksPerApp: tasksPerApp) } catch {
        say("scened's log, last lines:\n" + logTail(directory))
        throw error
    }
    let offsets = tasksPerApp == 1 ? "T" : settings.spread.prefix(tasksPerApp).map { $0 == 0 ? "T" : "T+\($0) s" }.joined(separator: ", ")
    say("\n-- 2. \(n) attached apps, \(tasksPerApp) refresh task\(tasksPerApp == 1 ? "" : "s") each due at \(offsets); MaxConcurrentWakes=\(cap) --")
    say("daemon: Durability=\(settings.durability), SuspendDelaySec=100ms, CoalesceSec= and RefreshBudgetSec= default, timer slack \(slack); apps: this process's connections (attached only: suspended by the engine, not frozen), each completing a task as it reads performBackgroundTask; GetStatus sampled every \(ms(settings.sampleInterval)) meanwhile")
    say("  wakes (resumed, cause background): \(run.wakes), \(ratioText(run.wakes, n)) per app; performBackgroundTask: \(run.handed), \(ratioText(run.handed, run.wakes)) per wake; completed \(run.completed) of \(n * tasksPerApp); backgroundTaskWillExpire \(run.expirations)")
    say("  apps awake at once: peak \(run.peak) from the events (seq order), \(run.sampledPeak) in GetStatus.background.wakingApps (\(run.samples) samples); cap \(cap): \(run.peak <= cap && run.sampledPeak <= cap ? "kept" : "EXCEEDED")")
    say("  from T: first performBackgroundTask read \(ms(run.firstHanded)), last completion answered \(ms(run.lastCompleted)), last app suspended again \(ms(run.lastSuspended)) (event time)")
    say("  scened's CPU from T to the end: \(ms(run.cpu)) utime+stime (/proc/PID/stat, in 10 ms ticks), \(ms(run.onCPU)) on a CPU (/proc/PID/schedstat), \(us(run.onCPU / Double(max(1, run.wakes)))) per wake; the bench's \(ms(run.benchCPU))")
    if tasksPerApp > 1 {
        let coalesced = run.lastCompleted < Double(settings.spread[1]) && run.wakes == n
        say("  → one thaw per app for its \(tasksPerApp) tasks (every task completed before T+\(settings.spread[1]) s, \(run.wakes) wakes for \(n) apps): \(coalesced ? "yes" : "NO")")
    }
}

struct FleetRun {
    var wakes = 0, handed = 0, completed = 0, expirations = 0
    var peak = 0, sampledPeak = 0, samples = 0
    var firstHanded = 0.0, lastCompleted = 0.0, lastSuspended = 0.0
    var cpu = 0.0, onCPU = 0.0, benchCPU = 0.0
}

/// Seconds the process's live threads have run on a CPU, from /proc/PID/task/*/schedstat
/// (nanoseconds; utime+stime in /proc/PID/stat count in clock ticks, 10 ms here).
func onCPU(_ pid: Int32) -> Double {
    guard let dir = opendir("/proc/\(pid)/task") else { return .nan }
    defer { closedir(dir) }
    var total = 0.0
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard name.first?.isNumber == true, let text = try? readFile("/proc/\(pid)/task/\(name)/schedstat"),
              let first = text.split(separator: " ").first, let ns = Double(first) else { continue }
        total += ns / 1e9
    }
    return total
}

private func fleetRun(_ daemon: BenchDaemon, _ settings: WakeSettings, tasksPerApp: Int) throws -> FleetRun {
    let offset = wallOffset()
    let fleet = try WakeFleet(socket: daemon.socket, count: settings.apps)
    try fleet.attachAll(timeout: 120)
    let t = now() + settings.lead
    let due = settings.spread.prefix(tasksPerApp).map { Int64(((t + offset) * 1e6).rounded()) + $0 * 1_000_000 }
    do { try fleet.schedule(due: due, timeout: settings.lead) } catch {
        throw BenchError("\(error); with a longer --lead than \(Int(settings.lead)) s every task would be in before T")
    }
    guard now() < t else { throw BenchError("scheduling took longer than --lead \(settings.lead) s: T passed before every task was in") }
    fleet.startMeasuring(sampleInterval: settings.sampleInterval)
    try fleet.pump(timeout: t - now() + 1, "waiting for T") { now() >= t - 0.05 }
    let cpu0 = daemon.cpuSeconds(), run0 = onCPU(daemon.pid), bench0 = clientCPUSeconds()
    let n = settings.apps
    try fleet.pump(timeout: 120 + Double(tasksPerApp * 10), "the wakes") {
        fleet.completed.reduce(0, +) == n * tasksPerApp && !fleet.suspended.contains(false)
    }
    var run = FleetRun()
    run.cpu = daemon.cpuSeconds() - cpu0
    run.onCPU = onCPU(daemon.pid) - run0
    run.benchCPU = clientCPUSeconds() - bench0
    run.wakes = fleet.wakes.reduce(0, +)
    run.handed = fleet.handed.reduce(0, +)
    run.completed = fleet.completed.reduce(0, +)
    run.expirations = fleet.expirations
    run.peak = fleet.peakAwake
    run.sampledPeak = fleet.wakingSamples.max() ?? 0
    run.samples = fleet.wakingSamples.count
    run.firstHanded = fleet.firstHanded - t
    run.lastCompleted = fleet.lastCompleted - t
    run.lastSuspended = Double(fleet.lastSuspendedTime) / 1e6 - offset - t
    return run
}

private func ratioText(_ a: Int, _ b: Int) -> String {
    b > 0 ? "\((Double(a) / Double(b) * 100).rounded() / 100)" : "n/a"
}

/// The filesystem type `path` is on (/proc/self/mounts, the longest mount point that holds it):
/// what a commit's fsync costs depends on it.
func filesystem(of path: String) -> String {
    var best = (point: "", type: "?")
    for line in ((try? readFile("/proc/self/mounts")) ?? "").split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count > 2 else { continue }
        let point = String(fields[1])
        let inside = path == point || path.hasPrefix(point == "/" ? "/" : point + "/")
        if inside && point.count > best.point.count { best = (point, String(fields[2])) }
    }
    return "\(best.type) (\(best.point))"
}
