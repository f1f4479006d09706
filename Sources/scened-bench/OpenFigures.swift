import Glibc
import Varlink

// `scened-bench open` (issue 37 item 6): io.scened.Manager.Open of a URL to a running app's
// connected, foregroundActive scene → the app holding the URL: a probe scened starts
// (`open-probe`, OpenProbe.swift) stamps its CLOCK_MONOTONIC time once it has read and parsed
// openURLContexts. One Open at a time. Target: p99 ≤ 1 ms. Events reach the app once their
// batch is committed, so under Durability=full the figure holds the commit's fsync.

struct OpenSettings {
    var rounds = max(1, option("--rounds", 1000))
    var warmUp = max(0, option("--warm-up", 50))
    /// scened's default: an Open's reply then means its events are on disk.
    var durability = stringOption("--durability", "full")
}

/// The samples, seconds from the Open's first byte written.
struct OpenSamples {
    var held: [Double] = []
    var made: [Double] = []
    var replied: [Double] = []
    var session = ""
    var cgroup = "?"
    var daemonSlack = "?"
}

func openFigures() throws {
    let settings = OpenSettings()
    let fence = BenchCgroup()
    fence?.killOnSignals()
    defer { fence?.end() }
    #if DEBUG
    let build = "DEBUG build (figures not meaningful)"
    #else
    let build = "release build"
    #endif
    let directory = makeDirectory()
    defer { removeTree(directory) }
    say("\n== open: Open(url) → the app holding the URL (issue 37) ==")
    say("conditions: \(build); \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs; \(loadLine("load average at start")); bench timer slack \(timerSlack(of: getpid())); euid \(geteuid())")
    let s: OpenSamples
    do { s = try OpenBench(settings: settings, directory: directory).run() } catch {
        let log = (try? readFile(directory + "/scened.log")) ?? ""
        say("scened's log, last lines:\n" + log.split(separator: "\n").suffix(30).joined(separator: "\n"))
        throw error
    }
    let p = [0.5, 0.9, 0.99, 1]
    say("daemon: private scened, Durability=\(settings.durability), LogLevel=notice, SuspendDelaySec=60s; state directory on \(filesystem(of: directory)); its timer slack \(s.daemonSlack)")
    say("app: \(OpenBench.app), [App] URLSchemes=\(OpenBench.scheme), ExecStart=\(benchBinary) open-probe FIFO, in \(s.cgroup); one connected scene \(s.session), foregroundActive")
    say("rounds: \(settings.rounds) (after \(settings.warmUp) not counted), one Open at a time (url \(OpenBench.scheme):round/N, activate default), each after the probe's line and the reply of the one before")
    say(row("Open written → probe parsed openURLContexts", spread(s.held, p)))
    say(row("Open written → event made (daemon)", spread(s.made, p)))
    say(row("Open written → Open reply read", spread(s.replied, p)))
    let p99 = percentile(s.held.sorted(), 0.99) ?? .nan
    say("  → Open → app holding the URL p99 \(duration(p99)) vs target ≤ 1 ms: \(p99 <= 0.001 ? "PASS" : "MISS")")
    say(loadLine("load average at end"))
}

final class OpenBench {
    static let app = "org.example.open-probe"
    static let scheme = "probe"
    let settings: OpenSettings
    let directory: String
    let daemon: BenchDaemon

    init(settings: OpenSettings, directory: String) {
        self.settings = settings
        self.directory = directory
        daemon = BenchDaemon(binary: binary, directory: directory)
    }

    func run() throws -> OpenSamples {
        var samples = OpenSamples()
        let fifo = directory + "/probe.fifo"
        try makeFifo(fifo)
        let reader = try LineReader(fifo: fifo)
        mkdir(directory + "/apps.d", 0o755)
        try writeFile(directory + "/apps.d/\(Self.app).conf",
                      "[App]\nURLSchemes=\(Self.scheme)\n[Launch]\nExecStart=\(benchBinary) open-probe \(fifo)\n")
        let offset = wallOffset()
        try daemon.start(config: config(durability: settings.durability) + "\n[Lifecycle]\nSuspendDelaySec=60s\n")
        defer { daemon.stopWithin(10) }
        samples.daemonSlack = timerSlack(of: daemon.pid)
        let control = try TimedConnection(socket: daemon.socket)
        // Connect starts the probe (ExecStart=) and answers once it attached.
        let connected = try control.call("Connect", ["app": .string(Self.app)], timeout: 60).reply
        guard let session = connected["session"]?["id"]?.stringValue else {
            throw BenchError("Connect \(Self.app): \(connected)")
        }
        samples.session = session
        if let pid = try control.call("GetApp", ["app": .string(Self.app)]).reply["app"]?["startedPid"]?.intValue {
            samples.cgroup = cgroupDirectory(of: Int32(pid)) ?? "no cgroup"
        }
        for round in -settings.warmUp..<settings.rounds {
            let (held, made, replied) = try self.round(round, control, reader, session: session, offset: offset)
            guard round >= 0 else { continue }
            samples.held.append(held)
            samples.made.append(made)
            samples.replied.append(replied)
        }
        return samples
    }

    /// One Open; the probe's line and the reply must both name this round's URL and scene.
    private func round(_ round: Int, _ control: TimedConnection, _ reader: LineReader, session: String,
                       offset: Double) throws -> (held: Double, made: Double, replied: Double) {
        let url = "\(Self.scheme):round/\(round)"
        let sent = now()
        try control.send("Open", ["url": .string(url)])
        let (line, _) = try reader.next(timeout: 30, "the probe's openURLContexts (round \(round))")
        let (reply, repliedAt) = try control.next(timeout: 30, "Open")
        try TimedConnection.check(reply, "Open")
        let fields = line.split(separator: " ")
        guard fields.count == 3, let heldAt = Double(fields[0]), fields[2] == url else {
            throw BenchError("round \(round): the probe wrote \"\(line)\", not \(url)")
        }
        let parameters = reply["parameters"]?.objectValue ?? [:]
        guard parameters["session"]?.stringValue == session else {
            throw BenchError("round \(round): Open answered \(parameters), not the connected scene \(session)")
        }
        let events = parameters["events"]?.arrayValue ?? []
        guard let event = events.first(where: { $0["event"]?.stringValue == "openURLContexts" }),
              let time = event["time"]?.intValue else {
            throw BenchError("round \(round): no openURLContexts in the reply's events: \(events)")
        }
        return (heldAt - sent, Double(time) / 1e6 - offset - sent, repliedAt - sent)
    }
}
