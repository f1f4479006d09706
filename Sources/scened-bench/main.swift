// Measures scened over its socket: transitions per second (pipelined, 1 and 8 connections),
// round trips, listing, memory, durability costs, start-up time, and what abusive clients cost
// others (fairness, hostile), and a thousand attached apps' delivery latency and acknowledged
// transitions (apps), ProcessKit's spawn, cgroup freeze and SIGSTOP latencies (processes;
// the cgroup part needs root), and apps scened starts itself: cold launch, freeze/thaw and
// measured memory against the kernel's figures (launch), and what the system does to a
// thousand attached apps: a SIGTERM stop that commits their state (stop), a logind lock and a
// shell's interruption reaching every scene (lock), and background work: Notify to a frozen
// app against the kernel's thaw, a thousand apps' tasks falling due at once (wake), and a URL
// opened in a running app's scene (open). Release build:
//   swift build -c release && .build/release/scened-bench [daemon|list|durable|startup|stored|fill|logging|fairness|hostile|hostile-monitors|hostile-idle|apps|stop|lock|processes|launch|wake|open|all]
// startup fills its stores through SceneCore and SceneStore (StoreFill.swift); `fill --state-dir D
// [--startup-sessions N] [--archived]` makes one such store alone, to start scened on by hand.
// Figures depend on the machine and its load: compare the lines of one run with each other.
import Glibc
import SceneCore
import Varlink

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? "all"
func option(_ name: String, _ fallback: Int) -> Int {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Int(arguments[i + 1]) else { return fallback }
    return v
}
func stringOption(_ name: String, _ fallback: String) -> String {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return fallback }
    return arguments[i + 1]
}
let seconds = Double(option("--seconds", 3))
let sessionCount = option("--sessions", 100_000)
let bigCount = option("--startup-sessions", 1_000_000)
let savedCount = option("--saved-sessions", 100_000)

/// The daemon binary next to this one.
let binary: String = {
    var buffer = [Int8](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let own = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    return String(own[..<(own.lastIndex(of: "/") ?? own.startIndex)]) + "/scened"
}()

func makeDirectory() -> String {
    var template = Array("/tmp/scened-bench-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: path!)
}

func removeTree(_ path: String) {
    let args = ["/bin/rm", "-rf", path]
    if let pid = try? spawn(args, env: [], stdoutPath: "/dev/null", stderrPath: "/dev/null") {
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

func config(durability: String, logLevel: String = "notice") -> String {
    """
    [Daemon]
    LogLevel=\(logLevel)
    [Store]
    Durability=\(durability)
    [Pressure]
    MemoryBudget=1T
    """
}

func mb(_ bytes: Int) -> String { "\(bytes / (1 << 20)) MiB" }
func perSecond(_ n: Int, _ s: Double) -> Int { Int((Double(n) / s).rounded()) }
func ms(_ s: Double) -> String {
    let v = (s * 10_000).rounded() / 10
    return "\(v) ms"
}
func us(_ s: Double) -> String { "\(Int((s * 1e6).rounded())) µs" }

/// Creates `count` background sessions spread over 100 apps, pipelined on one connection.
func createSessions(_ daemon: BenchDaemon, count: Int, firstApp: Int = 0) throws -> Double {
    var script: [[UInt8]] = []
    script.reserveCapacity(min(count, 100_000))
    for i in 0..<min(count, 100_000) {
        script.append(frame("Connect", ["app": .string("com.example.app\((i + firstApp) % 100)"),
                                        "background": true, "footprint": 10_000_000]))
    }
    let load = try PipelinedLoad(socket: daemon.socket, scripts: [script], window: 512)
    let r = load.run(duration: 3600, maxCalls: count)
    if let e = r.firstError, r.errors > 0 { throw BenchError("Connect failed: \(e)") }
    return r.seconds
}

/// activate ↔ background, each connection on its own sessions (ids first...), pipelined.
func transitions(_ daemon: BenchDaemon, connections: Int, sessionsPerConnection: Int = 1000, window: Int = 512) throws -> (Int, Double) {
    var scripts: [[[UInt8]]] = []
    for c in 0..<connections {
        var script: [[UInt8]] = []
        for k in 0..<sessionsPerConnection {
            let id = "s\(c * sessionsPerConnection + k + 1)"
            script.append(frame("Activate", ["session": .string(id)]))
            script.append(frame("Background", ["session": .string(id)]))
        }
        scripts.append(script)
    }
    let load = try PipelinedLoad(socket: daemon.socket, scripts: scripts, window: window)
    let r = load.run(duration: seconds)
    if r.errors > 0 { throw BenchError("\(r.errors) error replies, first: \(r.firstError ?? "?")") }
    return (r.replies, r.seconds)
}

func roundTrips(_ daemon: BenchDaemon, method: String, parameters: JSONObject, count: Int) throws -> [Double] {
    let client = try VarlinkClient(path: daemon.socket)
    var samples: [Double] = []
    samples.reserveCapacity(count)
    for _ in 0..<count {
        let t = now()
        _ = try client.call("io.scened.Manager." + method, parameters)
        samples.append(now() - t)
    }
    return samples.sorted()
}

/// Prints at once, even into a pipe.
func say(_ text: String) {
    print(text)
    fflush(nil)
}

/// CPU time this process (the client) used so far, seconds.
/// `transitions` with the CPU the daemon and this client used meanwhile, in % of one CPU.
func measuredTransitions(_ daemon: BenchDaemon, connections: Int) throws
    -> (count: Int, seconds: Double, daemonCPU: Int, clientCPU: Int) {
    let cpu0 = daemon.cpuSeconds()
    let client0 = clientCPUSeconds()
    let (n, s) = try transitions(daemon, connections: connections)
    let percent = { (cpu: Double) in Int((cpu / s * 100).rounded()) }
    return (n, s, percent(daemon.cpuSeconds() - cpu0), percent(clientCPUSeconds() - client0))
}

func clientCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func header() {
    if mode == "launch" || mode == "wake" || mode == "open" {
        // Its own conditions follow: one call at a time, every message parsed.
        say("scened-bench (\(mode)); \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs")
        return
    }
    say("scened-bench (\(mode)); release build; \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs; client: one thread, pipelined, replies framed not parsed")
    say("a transition = one Activate or Background call (one scene state change, two callbacks)")
}

// MARK: - Modes

func daemonFigures() throws {
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    try daemon.start(config: config(durability: "off"))
    defer { daemon.stop() }
    say("\n== daemon (Durability=off, LogLevel=notice) ==")
    usleep(300_000)
    say("RSS idle: \(mb(daemon.residentBytes()))")
    let created10k = try createSessions(daemon, count: 10_000)
    say("created 10000 sessions in \(ms(created10k)) (\(perSecond(10_000, created10k)) Connect/s, 1 connection)")
    say(try listingLine(daemon, count: 10_000))
    let rtt = try roundTrips(daemon, method: "GetStatus", parameters: [:], count: 2000)
    say("round trip GetStatus: median \(us(rtt[rtt.count / 2])), p99 \(us(rtt[rtt.count * 99 / 100]))")
    let rttA = try roundTrips(daemon, method: "GetSession", parameters: ["session": "s1"], count: 2000)
    say("round trip GetSession: median \(us(rttA[rttA.count / 2])), p99 \(us(rttA[rttA.count * 99 / 100]))")
    for conns in [1, 8] {
        let run = try measuredTransitions(daemon, connections: conns)
        say("transitions, \(conns) connection\(conns == 1 ? "" : "s"), window 512: \(perSecond(run.count, run.seconds)) /s (\(run.count) in \(ms(run.seconds)); CPU: daemon \(run.daemonCPU)%, client \(run.clientCPU)%)")
    }
    let created = try createSessions(daemon, count: sessionCount - 10_000, firstApp: 10_000)
    say("created \(sessionCount - 10_000) more sessions in \(ms(created)) (\(perSecond(sessionCount - 10_000, created)) Connect/s)")
    say(try listingLine(daemon, count: sessionCount))
    usleep(300_000)
    say("RSS with \(sessionCount) sessions: \(mb(daemon.residentBytes()))")
    for conns in [1, 8] {
        let (n, s) = try transitions(daemon, connections: conns)
        say("transitions with \(sessionCount) sessions, \(conns) connection\(conns == 1 ? "" : "s"): \(perSecond(n, s)) /s")
    }
}

func durableFigures() throws {
    say("\n== durability: activate↔background with \(sessionCount) sessions stored, group commit per loop iteration ==")
    for durability in ["off", "normal", "full"] {
        let dir = makeDirectory()
        defer { removeTree(dir) }
        let daemon = BenchDaemon(binary: binary, directory: dir)
        try daemon.start(config: config(durability: durability))
        _ = try createSessions(daemon, count: sessionCount)
        var line = "Durability=\(durability):"
        for conns in [1, 8] {
            let run = try measuredTransitions(daemon, connections: conns)
            line += " \(conns) conn \(perSecond(run.count, run.seconds)) /s (CPU daemon \(run.daemonCPU)%, client \(run.clientCPU)%);"
        }
        say(line)
        daemon.stop()
    }
}

func startupFigures() throws {
    say("\n== start-up: exec → READY=1 (Durability=full; median of 3 starts; RSS 0.3 s after READY, peak = VmHWM) ==")
    say("target (issue 16): \(bigCount) stored sessions, live or archived: READY ≤ 1 s, RSS ≤ 256 MiB")
    say("load average before: \((try? readFile("/proc/loadavg")) ?? "?")".trimmingSuffixNewline)
    say("engine: MemoryLayout<SceneSession>.stride = \(MemoryLayout<SceneSession>.stride) B")
    let empty = try startupRun(label: "empty store", sessions: 0) { _ in 0 }
    // Today's way of making sessions (Connect over the socket) beside the direct fill, at a size
    // where Connect takes seconds, not minutes: both must give the same start-up.
    _ = try startupRun(label: "100000 live, made by Connect (socket)", sessions: 100_000, baseline: empty) { daemon in
        try daemon.start(config: config(durability: "off"))
        defer { daemon.stop() }
        return try createSessions(daemon, count: 100_000)
    }
    _ = try startupRun(label: "100000 live, made by the store fill", sessions: 100_000, baseline: empty) { daemon in
        try fillStore(stateDirectory: daemon.stateDirectory, count: 100_000, archived: false)
    }
    for archived in [false, true] {
        let label = "\(bigCount) \(archived ? "archived" : "live (background)")"
        let run = try startupRun(label: label, sessions: bigCount, baseline: empty) { daemon in
            try fillStore(stateDirectory: daemon.stateDirectory, count: bigCount, archived: archived)
        }
        say("load average after: \((try? readFile("/proc/loadavg")) ?? "?")".trimmingSuffixNewline)
        let ready = run.ready <= 1.0 ? "met" : "MISSED"
        let rss = run.rss <= 256 << 20 ? "met" : "MISSED"
        say("  → READY \(ms(run.ready)) vs ≤ 1000 ms: \(ready); RSS \(mb(run.rss)) vs ≤ 256 MiB: \(rss)")
    }
}

extension String {
    var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}

/// One store size: `fill` makes it (returns seconds), then three starts with Durability=full.
func startupRun(label: String, sessions: Int, baseline: (ready: Double, rss: Int)? = nil,
                fill: (BenchDaemon) throws -> Double) throws -> (ready: Double, rss: Int) {
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    let made = try fill(daemon)
    var readies: [Double] = []
    var cpus: [Double] = []
    var rss = 0, peak = 0, changed = 0
    for _ in 0..<3 {
        try daemon.start(config: config(durability: "full"))
        readies.append(daemon.readyAfter)
        // CPU time to READY as well: on a loaded machine, wall time also counts waiting for a CPU.
        cpus.append(daemon.cpuSeconds())
        usleep(300_000)
        rss = daemon.residentBytes()
        peak = daemon.peakResidentBytes()
        if sessions > 0 {
            // A change to one session: a second reference to the engine's tables anywhere would
            // make it copy them all, and this RSS shows it.
            _ = try roundTrips(daemon, method: "Activate", parameters: ["session": "s1"], count: 1)
            _ = try roundTrips(daemon, method: "Background", parameters: ["session": "s1"], count: 1)
            usleep(300_000)
            changed = daemon.residentBytes()
        }
        daemon.stop()
    }
    readies.sort()
    cpus.sort()
    var line = "\(label): READY after \(ms(readies[1])) (min \(ms(readies[0])); CPU \(ms(cpus[1]))), RSS \(mb(rss)), peak \(mb(peak))"
    if let baseline, sessions > 0 {
        line += "; per session \((rss - baseline.rss) / sessions) B RSS, \((peak - baseline.rss) / sessions) B peak"
    }
    if sessions > 0 { line += " (made in \(ms(made))); RSS after changing one session \(mb(changed))" }
    say(line)
    return (readies[1], max(rss, changed))
}

func loggingFigures() throws {
    say("\n== logging: state-change entries at LogLevel=info against LogLevel=notice (off for state changes) ==")
    say("(not under journald here: entries go to stderr, a file; the system tests measure journald itself)")
    for level in ["notice", "info"] {
        let dir = makeDirectory()
        defer { removeTree(dir) }
        let daemon = BenchDaemon(binary: binary, directory: dir)
        try daemon.start(config: config(durability: "off", logLevel: level))
        _ = try createSessions(daemon, count: 8_000)
        let (n, s) = try transitions(daemon, connections: 8)
        say("LogLevel=\(level): \(perSecond(n, s)) transitions/s (8 connections)")
        daemon.stop()
    }
}

// The processes `wake` measures with (WakeProbe.swift): no header, their output is a protocol.
if mode == "wake-probe" { exit(wakeProbe(fifo: arguments.count > 1 ? arguments[1] : "")) }
if mode == "wake-echo", arguments.count > 2 { exit(wakeEcho(input: arguments[1], output: arguments[2])) }
if mode == "open-probe" { exit(openProbe(fifo: arguments.count > 1 ? arguments[1] : "")) }

do {
    header()
    switch mode {
    case "daemon": try daemonFigures()
    case "list": try listingFigures()
    case "durable": try durableFigures()
    case "startup": try startupFigures()
    case "logging": try loggingFigures()
    case "stored": try storedFigures()
    case "saved": try savedFigures()
    case "fill":
        // A store to start scened on by hand (profiling): --state-dir D [--startup-sessions N] [--archived] [--restoration-bytes B].
        let dir = stringOption("--state-dir", "")
        guard !dir.isEmpty else { throw BenchError("fill needs --state-dir DIR") }
        // fillStore adds to what is stored: a second fill into one directory would double the
        // store, and starts on it would be timed at the wrong size.
        if access(dir + "/scened.db", F_OK) == 0 {
            throw BenchError("\(dir)/scened.db exists: fill makes a store from nothing (remove it first)")
        }
        let t = try fillStore(stateDirectory: dir, count: bigCount, archived: arguments.contains("--archived"),
                              restorationBytes: option("--restoration-bytes", 0))
        say("filled \(dir) with \(bigCount) sessions in \(ms(t))")
    case "fairness": try fairnessFigures()
    case "hostile": try hostileFigures()
    case "apps": try appFigures()
    case "stop": try stopFigures()
    case "lock": try lockFigures()
    case "processes": try processFigures()
    case "launch": try launchFigures()
    case "wake": try wakeFigures()
    case "open": try openFigures()
    case "hostile-monitors":
        say("\n== hostile: Monitors that never read (Durability=off, LogLevel=notice; targets: peak RSS < 256 MiB, bystander ≥ 0.50 of its rate alone) ==")
        try neverReadingMonitors()
    case "hostile-idle":
        say("\n== hostile: idle connections beside a bystander (Durability=off, LogLevel=notice; target: bystander ≥ 0.80 of its rate alone) ==")
        try idleConnections()
    case "all":
        try daemonFigures()
        try durableFigures()
        try startupFigures()
        try storedFigures()
        try savedFigures()
        try loggingFigures()
        try fairnessFigures()
        try hostileFigures()
        try appFigures()
        try stopFigures()
        try lockFigures()
        try processFigures()
        try launchFigures()
        try wakeFigures()
        try openFigures()
    default:
        say("usage: scened-bench [daemon|list|durable|startup|stored|saved|fill|logging|fairness|hostile|hostile-monitors|hostile-idle|apps|stop|lock|processes|launch|wake|open|all] [--seconds S] [--sessions N] [--startup-sessions N] [--saved-sessions N] [fill: --state-dir D --archived --restoration-bytes B] [apps: --apps N --rate R --rounds N --window W --durability off|normal|full] [stop: --apps N --repeats K --durability D] [lock: --apps N --rounds R --durability D] [processes: --rounds N] [launch: --rounds N --copies K --hold-mib M] [wake: --rounds N --apps N --caps 4,32 --lead S --parts 1,2 --durability D] [open: --rounds N --warm-up N --durability D]")
        exit(2)
    }
} catch {
    say("scened-bench: \(error)")
    exit(1)
}
