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

private func loadAverage() -> String {
    ((try? readFile("/proc/loadavg")) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
}

// MARK: - Connections

/// One connection to scened: calls sent when the bench says, every message parsed and stamped
/// with the bench's CLOCK_MONOTONIC time of its receipt.
final class TimedConnection {
    let connection: FramedConnection
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    private var inbox: [(message: JSONObject, at: Double)] = []
    private var inboxHead = 0

    init(socket: String) throws { connection = try FramedConnection(socket: socket) }

    var fd: Int32 { connection.fd }

    /// Sends a call; returns when its last byte was written (monotonic s).
    @discardableResult
    func send(_ method: String, _ parameters: JSONObject, more: Bool = false) throws -> Double {
        connection.queue(VarlinkCall(method: "io.scened.Manager." + method, parameters: parameters, more: more).encoded())
        while true {
            guard connection.flush() else { throw BenchError("the daemon closed a connection") }
            if !connection.hasOutput { return now() }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)
        }
    }

    /// Reads what has arrived, without waiting.
    func pump() throws {
        let at = now()
        var parsed: [JSONObject] = []
        let open = connection.read(&scratch) { raw in
            if let value = try? JSONParser.parse(raw), let object = value.objectValue { parsed.append(object) }
        }
        for object in parsed { inbox.append((object, at)) }
        guard open else { throw BenchError("the daemon closed a connection") }
    }

    /// The next message if one is in.
    func take() -> (message: JSONObject, at: Double)? {
        guard inboxHead < inbox.count else { return nil }
        defer {
            inboxHead += 1
            if inboxHead == inbox.count {
                inbox.removeAll(keepingCapacity: true)
                inboxHead = 0
            }
        }
        return inbox[inboxHead]
    }

    /// The next message, waiting up to `timeout` seconds.
    func next(timeout: Double, _ what: String) throws -> (message: JSONObject, at: Double) {
        let deadline = now() + timeout
        while true {
            if let m = take() { return m }
            let left = deadline - now()
            if left <= 0 { throw BenchError("nothing within \(timeout) s: \(what)") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(1000, left * 1000) + 1))
            try pump()
        }
    }

    /// A call and its reply's parameters, with when it was sent and when the reply came.
    @discardableResult
    func call(_ method: String, _ parameters: JSONObject = [:], timeout: Double = 60) throws
        -> (reply: JSONObject, sent: Double, received: Double) {
        let sent = try send(method, parameters)
        let (m, at) = try next(timeout: timeout, method)
        try Self.check(m, method)
        return (m["parameters"]?.objectValue ?? [:], sent, at)
    }

    static func check(_ m: JSONObject, _ method: String) throws {
        if let error = m["error"]?.stringValue {
            throw BenchError("\(method): \(error) \(m["parameters"].map { "\($0)" } ?? "")")
        }
    }
}

/// A Monitor stream of every event, kept in order.
final class EventLog {
    struct Event {
        let seq: Int64
        /// Daemon clock, microseconds since the epoch.
        let time: Int64
        let name: String
        let app: String
        let session: String?
    }

    let stream: TimedConnection
    private(set) var events: [Event] = []
    /// When (monotonic s) the last event arrived.
    private(set) var lastReceipt = 0.0

    /// Every event from `since` on (the backlog first, then live ones: none missed).
    init(socket: String, since: Int64) throws {
        stream = try TimedConnection(socket: socket)
        try stream.send("Monitor", ["since": .int(since)], more: true)
    }

    func pump() throws {
        try stream.pump()
        while let (m, at) = stream.take() {
            try TimedConnection.check(m, "Monitor")
            lastReceipt = at
            guard let e = m["parameters"]?["event"], let seq = e["seq"]?.intValue, let time = e["time"]?.intValue,
                  let name = e["event"]?.stringValue, let app = e["app"]?.stringValue else { continue }
            events.append(Event(seq: seq, time: time, name: name, app: app, session: e["session"]?.stringValue))
        }
    }

    /// Returns once no event has come for `quiet` seconds (at most `timeout`).
    func settle(quiet: Double = 0.15, timeout: Double = 10) throws {
        let deadline = now() + timeout
        while now() < deadline {
            try pump()
            let t = now()
            if t - lastReceipt >= quiet { return }
            var p = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32((quiet - (t - lastReceipt)) * 1000) + 1)
        }
    }

    /// The first event from index `from` on that `matches`, waiting up to `timeout` seconds.
    func first(from: Int, timeout: Double = 30, _ what: String, _ matches: (Event) -> Bool) throws -> Event {
        let deadline = now() + timeout
        var checked = from
        while true {
            try pump()
            while checked < events.count {
                if matches(events[checked]) { return events[checked] }
                checked += 1
            }
            let left = deadline - now()
            if left <= 0 { throw BenchError("no \(what) event within \(timeout) s") }
            var p = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(1000, left * 1000) + 1))
        }
    }
}

// MARK: - cgroup.events

/// One cgroup's cgroup.events, opened once and re-read from its start every `lookInterval`. POLLPRI alone would not do: the kernel rate-limits
/// the notifications of cgroup files (one per 10 ms), so a change may be signalled late.
final class FreezeWatch {
    let path: String
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 256)

    init(cgroup: String) throws {
        path = cgroup + "/cgroup.events"
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError("open \(path): \(errnoText())") }
    }

    deinit { close(fd) }

    /// Whether the file says `frozen 1` now (nil if it cannot be read).
    func frozen() -> Bool? {
        guard lseek(fd, 0, SEEK_SET) == 0 else { return nil }
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self)
        if text.contains("frozen 1") { return true }
        if text.contains("frozen 0") { return false }
        return nil
    }

    /// When (monotonic s) the file first showed `frozen` = `want`, waiting up to `timeout`.
    func await(_ want: Bool, timeout: Double) throws -> Double {
        let deadline = now() + timeout
        while true {
            if frozen() == want { return now() }
            if now() > deadline { throw BenchError("\(path) did not show frozen \(want ? 1 : 0) within \(timeout) s") }
            var p = pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
            shortPoll(&p, 1)
        }
    }
}

/// How often cgroup.events is read while a change is awaited: the resolution of the freeze
/// and thaw figures (with the timer slack set to 1 µs, see `tightenTimerSlack`).
let lookInterval = 20e-6

/// A look at `fds` (poll without waiting), then, if none is ready, a sleep of `lookInterval`
/// (ppoll, which could wait less than a millisecond, is not in Swift's Glibc).
@discardableResult
func shortPoll(_ fds: UnsafeMutablePointer<pollfd>, _ count: Int) -> Int32 {
    let ready = poll(fds, nfds_t(count), 0)
    if ready == 0 {
        var pause = timespec(tv_sec: 0, tv_nsec: Int(lookInterval * 1e9))
        nanosleep(&pause, nil)
    }
    return ready
}

/// Sets this (single-threaded) process's timer slack to 1 µs, so that a 20 µs wait is one,
/// not the default 50 µs more. False if the kernel did not take it.
func tightenTimerSlack() -> Bool {
    (try? writeFile("/proc/self/timerslack_ns", "1000")) != nil
        && (try? readFile("/proc/self/timerslack_ns"))?.hasPrefix("1000") == true
}

// MARK: - Processes

// What the signal handler writes, prepared before it is installed.
nonisolated(unsafe) var benchSignalHome: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) var benchSignalKill: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) var benchSignalPid: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) let benchSignalOne: UnsafeMutablePointer<CChar>? = strdup("1")

/// A v2 cgroup the bench moves into (below the one it was started in) for the run; `end` moves
/// it back, kills whatever is left below and removes the directories. Nil without a writable
/// cgroup v2 hierarchy (not root): then the run goes on where the bench is.
final class BenchCgroup {
    let home: String
    let path: String

    init?() {
        guard let own = Cgroup.own(), Cgroup(path: own).isWritable else { return nil }
        home = own
        path = own + "/scened-bench.\(getpid())"
        do {
            try Cgroup.create(path)
            try Cgroup(path: path).add(getpid())
        } catch {
            rmdir(path)
            return nil
        }
    }

    func end() {
        for sig in [SIGINT, SIGTERM, SIGHUP] { signal(sig, SIG_DFL) }
        try? Cgroup(path: home).add(getpid())
        Self.remove(path)
    }

    /// At SIGINT, SIGTERM or SIGHUP (no defer runs then): the bench moves home and kills
    /// everything below its cgroup (the daemon, the apps, the scratch processes), then dies of
    /// the signal. The empty directories stay; the next scened removes its stale ones.
    func killOnSignals() {
        benchSignalHome = strdup(home + "/cgroup.procs")
        benchSignalKill = strdup(path + "/cgroup.kill")
        benchSignalPid = strdup("\(getpid())\n")
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { sig in
                // Async-signal-safe only: open, write, close, signal, raise.
                for (file, text) in [(benchSignalHome, benchSignalPid), (benchSignalKill, benchSignalOne)] {
                    guard let file, let text else { continue }
                    let fd = open(file, O_WRONLY)
                    if fd >= 0 {
                        _ = write(fd, text, strlen(text))
                        close(fd)
                    }
                }
                signal(sig, SIG_DFL)
                raise(sig)
            }
        }
    }

    private static func remove(_ dir: String) {
        let cgroup = Cgroup(path: dir)
        try? cgroup.kill()
        try? cgroup.thaw()
        let deadline = now() + 5
        while (try? cgroup.events())?.populated == true && now() < deadline { usleep(1_000) }
        if let d = opendir(dir) {
            var children: [String] = []
            while let entry = readdir(d) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != ".", name != "..", entry.pointee.d_type == UInt8(DT_DIR) { children.append(dir + "/" + name) }
            }
            closedir(d)
            for child in children { remove(child) }
        }
        rmdir(dir)
    }
}

/// The v2 cgroup directory of a process, from /proc/PID/cgroup's "0::" line.
func cgroupDirectory(of pid: Int32) -> String? {
    guard let root = Cgroup.hierarchy(), let text = try? readFile("/proc/\(pid)/cgroup"),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) else { return nil }
    let relative = String(line.dropFirst(3))
    return relative == "/" ? root : root + relative
}

/// The `Pss:` and `Rss:` of /proc/PID/smaps_rollup, bytes (0 for a process gone).
func pssAndRss(of pid: Int32) -> (pss: Int, rss: Int) {
    guard let text = try? readFile("/proc/\(pid)/smaps_rollup") else { return (0, 0) }
    var pss = 0, rss = 0
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2, let kib = Int(fields[1]) else { continue }
        if fields[0] == "Pss:" { pss = kib * 1024 }
        if fields[0] == "Rss:" { rss = kib * 1024 }
    }
    return (pss, rss)
}

func processIsGone(_ pid: Int32) -> Bool { access("/proc/\(pid)", F_OK) != 0 }

func waitFor(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
    let deadline = now() + timeout
    while !(try condition()) {
        if now() > deadline { throw BenchError("not within \(timeout) s: \(what)") }
        usleep(1_000)
    }
}

func mib(_ bytes: Int) -> String {
    let v = (Double(bytes) / Double(1 << 20) * 10).rounded() / 10
    return "\(v) MiB"
}

// MARK: - The bench

final class LaunchBench {
    let settings: LaunchSettings
    let directory: String
    let notes: String
    let daemon: BenchDaemon
    /// Every pid of an app process seen, and cgroups made: gone by the end, whatever happens.
    private var appPids: Set<Int32> = []
    private var daemonPid: Int32 = 0
    private var scratchCgroups: [String] = []
    private var scratchProcesses: [SpawnedProcess] = []
    private var offset = 0.0
    private var control: TimedConnection?
    private var log: EventLog?

    static let app = "org.example.launch-bench"
    static func holder(_ k: Int) -> String { "org.example.launch-bench.hold\(k)" }

    init(settings: LaunchSettings, directory: String) {
        self.settings = settings
        self.directory = directory
        notes = String(binary[..<(binary.lastIndex(of: "/") ?? binary.startIndex)]) + "/scene-notes"
        daemon = BenchDaemon(binary: binary, directory: directory)
    }

    /// The daemon's event time in the bench's monotonic seconds.
    func monotonic(_ eventTime: Int64) -> Double { Double(eventTime) / 1e6 - offset }

    func run() throws {
        guard access(notes, X_OK) == 0 else {
            throw BenchError("\(notes) is missing: swift build -c release --product scene-notes")
        }
        #if DEBUG
        let build = "DEBUG build (figures not meaningful)"
        #else
        let build = "release build"
        #endif
        let loadBefore = loadAverage()
        let slack = tightenTimerSlack() ? "timer slack 1 µs" : "default timer slack (50 µs): waits are that much coarser"
        try writeApps()
        offset = wallOffset()
        try daemon.start(config: """
            [Daemon]
            LogLevel=\(stringOption("--log-level", "notice"))
            [Lifecycle]
            SuspendDelaySec=\(settings.suspendDelay)
            [Store]
            Durability=normal
            [Pressure]
            MemoryBudget=1T
            MeasureIntervalSec=\(settings.measureInterval)
            """)
        daemonPid = daemon.pid
        let control = try TimedConnection(socket: daemon.socket)
        let next = try control.call("GetStatus").reply["status"]?["nextSeq"]?.intValue ?? 0
        let log = try EventLog(socket: daemon.socket, since: next)
        self.control = control
        self.log = log

        say("\n== launch: apps scened starts itself (ExecStart=), against the kernel doing the same work ==")
        say("conditions: \(build); \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs; load average \(loadBefore) at start; kernel \(kernelRelease()); euid \(geteuid())")
        say("cgroups: the bench, its daemon and everything they start are below \(Cgroup.own() ?? "(no cgroup v2)")")
        say("daemon: private scened, Durability=normal, LogLevel=notice, SuspendDelaySec=\(settings.suspendDelay), MeasureIntervalSec=\(settings.measureInterval), MemoryBudget=1T (no reclaim)")
        say("app: \(notes) (ExecStart=, release build); rounds N=\(settings.rounds); the bench's calls one at a time, every message parsed; no target is given for any figure: these are measurements only")
        say("polling: cgroup.events is read every \(duration(lookInterval)) while a change is awaited (\(slack))")
        say("clocks: client times are CLOCK_MONOTONIC; event times are the daemon's (its monotonic clock anchored to the wall clock at start), taken from a Monitor stream and converted with the offset read just before the daemon started")

        try launchRounds(control, log)
        try freezeRounds(control, log)
        try kernelFreeze()
        try footprints(control, log)
        say("load average at end: \(loadAverage())")
    }

    private func kernelRelease() -> String {
        var u = utsname()
        uname(&u)
        return withUnsafeBytes(of: u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    private func writeApps() throws {
        let apps = directory + "/apps.d"
        mkdir(apps, 0o755)
        try writeFile(apps + "/\(Self.app).conf", "[Launch]\nExecStart=\(notes)\n")
        for k in 0..<settings.copies {
            try writeFile(apps + "/\(Self.holder(k)).conf", "[Launch]\nExecStart=\(notes) --hold-mib \(settings.holdMiB)\n")
        }
    }

    private func app(_ control: TimedConnection, _ app: String) throws -> JSONObject {
        try control.call("GetApp", ["app": .string(app)]).reply["app"]?.objectValue ?? [:]
    }

    private func startedPid(_ control: TimedConnection, _ app: String) throws -> Int32 {
        guard let pid = try self.app(control, app)["startedPid"]?.intValue else {
            throw BenchError("\(app) has no started process")
        }
        appPids.insert(Int32(pid))
        return Int32(pid)
    }

    /// Terminate, then wait until the process is reaped and its cgroup removed.
    private func terminate(_ control: TimedConnection, _ app: String, pid: Int32, cgroup: String?) throws {
        try control.call("Terminate", ["app": .string(app)])
        try waitFor("\(app)'s process \(pid) gone", timeout: 20) { processIsGone(pid) }
        var record: JSONObject = [:]
        do {
            try waitFor("\(app) not running", timeout: 20) {
                record = try self.app(control, app)
                return record["startedPid"] == nil && record["process"]?.stringValue == "notRunning"
            }
        } catch {
            throw BenchError("\(error); GetApp: \(record)")
        }
        // Emptied cgroups are removed in a pass of the daemon's loop: a call makes one.
        if let cgroup {
            try waitFor("\(cgroup) removed", timeout: 20) {
                try control.call("GetStatus")
                return access(cgroup, F_OK) != 0
            }
        }
    }

    /// Once `app` is quiet (the calls it makes by itself at launch done): every session of it
    /// but `keep` discarded. Returns how many sessions it had.
    @discardableResult
    private func keepOnly(_ control: TimedConnection, _ log: EventLog, _ app: String, _ keep: String?) throws -> Int {
        try log.settle()
        let sessions = try control.call("ListSessions", ["app": .string(app)]).reply["sessions"]?.arrayValue ?? []
        for id in sessions.compactMap({ $0["id"]?.stringValue }) where id != keep {
            try control.call("Discard", ["session": .string(id)])
        }
        try log.settle()
        return sessions.count
    }

    // MARK: 1 and 2

    private func launchRounds(_ control: TimedConnection, _ log: EventLog) throws {
        var attach: [Double] = [], active: [Double] = [], replied: [Double] = []
        var sessionsPerLaunch: [Int] = []
        var cgroupSeen = "none"
        for _ in 0..<settings.rounds {
            let mark = log.events.count
            let (reply, sent, received) = try control.call("Connect", ["app": .string(Self.app)])
            guard let session = reply["session"]?["id"]?.stringValue else { throw BenchError("Connect answered no session") }
            let launched = try log.first(from: mark, "didFinishLaunching") { $0.app == Self.app && $0.name == "didFinishLaunching" }
            let became = try log.first(from: mark, "didBecomeActive") { $0.session == session && $0.name == "didBecomeActive" }
            attach.append(monotonic(launched.time) - sent)
            active.append(monotonic(became.time) - sent)
            replied.append(received - sent)
            let pid = try startedPid(control, Self.app)
            let cgroup = cgroupDirectory(of: pid)
            cgroupSeen = cgroup ?? "none (SIGSTOP fallback)"
            // Its sessions discarded first, while it runs: the next launch then finds no archived
            // session to reconnect and no pending didDiscardSceneSessions, so that every round
            // is the same cold launch.
            sessionsPerLaunch.append(try keepOnly(control, log, Self.app, nil))
            try terminate(control, Self.app, pid: pid, cgroup: cgroup)
        }
        say("\n-- 1. cold launch: Connect sent → …, \(settings.rounds) rounds, each a new process (the previous one's session discarded, the app terminated, its process reaped, its cgroup removed) --")
        say("app cgroup: \(cgroupSeen); sessions of the app once its launch settled: \(Set(sessionsPerLaunch).sorted().map(String.init).joined(separator: " or ")) (scene-notes asks for a scene of its own when it finds none)")
        say("(a) is the didFinishLaunching event's time: the daemon runs the launch as it handles the app's Attach")
        say(row("(a) → attached (didFinishLaunching)", spread(attach, [0.5, 0.9, 1])))
        say(row("(b) → didBecomeActive (event time)", spread(active, [0.5, 0.9, 1])))
        say(row("(c) → Connect reply received", spread(replied, [0.5, 0.9, 1])))

        let posix = try bareExecs(spawner: false)
        let kit = try bareExecs(spawner: true)
        say("\n-- 2. bare fork/exec of the same binary: `scene-notes --help` (prints, exits), spawn → exit reaped, \(settings.rounds) rounds --")
        say(row("posix_spawn + waitpid", spread(posix, [0.5, 0.9, 1])))
        say(row("ProcessKit ProcessSpawner + pidfd (no cgroup)", spread(kit, [0.5, 0.9, 1])))
        say("ratio launch→foregroundActive (Connect reply) / bare exec, medians: \(ratio(median(replied), median(posix))) (posix_spawn), \(ratio(median(replied), median(kit))) (ProcessSpawner)")
        say("ratio launch→attached / bare exec, medians: \(ratio(median(attach), median(posix))) (posix_spawn)")
    }

    /// spawn → exit of `scene-notes --help`, N times.
    private func bareExecs(spawner: Bool) throws -> [Double] {
        let env = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"]
        var samples: [Double] = []
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard devNull >= 0 else { throw BenchError("open /dev/null: \(errnoText())") }
        defer { close(devNull) }
        for _ in 0..<settings.rounds {
            let t = now()
            if spawner {
                let spec = LaunchSpec(executable: notes, arguments: [notes, "--help"], environment: env,
                                      stdoutFD: devNull, stderrFD: devNull)
                let p: SpawnedProcess
                do { p = try ProcessSpawner.spawn(spec) } catch { throw BenchError("ProcessSpawner: \(error)") }
                var status: ExitStatus?
                while status == nil {
                    var pfd = pollfd(fd: p.pidfd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&pfd, 1, 1000)
                    status = ProcessSpawner.reap(pidfd: p.pidfd)
                }
                samples.append(now() - t)
                close(p.pidfd)
                guard status == .exited(0) else { throw BenchError("scene-notes --help: \(status!)") }
            } else {
                let pid = try spawn([notes, "--help"], env: env, stdoutPath: "/dev/null", stderrPath: "/dev/null")
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                samples.append(now() - t)
                guard status == 0 else { throw BenchError("scene-notes --help: wait status \(status)") }
            }
        }
        return samples
    }

    // MARK: 3

    private func freezeRounds(_ control: TimedConnection, _ log: EventLog) throws {
        let (reply, _, _) = try control.call("Connect", ["app": .string(Self.app)])
        guard let session = reply["session"]?["id"]?.stringValue else { throw BenchError("Connect answered no session") }
        let pid = try startedPid(control, Self.app)
        // The scene of its own it may have asked for would keep it in the foreground.
        try keepOnly(control, log, Self.app, session)
        guard let cgroup = cgroupDirectory(of: pid), cgroup.hasSuffix("/app-\(Self.app)") else {
            say("\n-- 3. freeze/thaw: skipped, \(Self.app) is in no cgroup of its own (\(cgroupDirectory(of: pid) ?? "none"))")
            return
        }
        let watch = try FreezeWatch(cgroup: cgroup)
        var suspendedToFrozen: [Double] = [], backgroundToFrozen: [Double] = []
        var toThawed: [Double] = [], toReply: [Double] = [], reportedFrozen = 0
        for _ in 0..<settings.rounds {
            let mark = log.events.count
            let background = try control.call("Background", ["session": .string(session)])
            let frozenAt = try watch.await(true, timeout: 30)
            let suspended = try log.first(from: mark, "suspended") { $0.app == Self.app && $0.name == "suspended" }
            suspendedToFrozen.append(frozenAt - monotonic(suspended.time))
            backgroundToFrozen.append(frozenAt - background.sent)
            if try app(control, Self.app)["frozen"]?.boolValue == true { reportedFrozen += 1 }

            // Activate: the thaw and the reply, whichever comes first.
            let again = log.events.count
            let sent = try control.send("Activate", ["session": .string(session)])
            var thawedAt: Double?, repliedAt: Double?
            let deadline = sent + 30
            while thawedAt == nil || repliedAt == nil {
                if thawedAt == nil, watch.frozen() == false { thawedAt = now() }
                if repliedAt == nil {
                    try control.pump()
                    if let (m, at) = control.take() {
                        try TimedConnection.check(m, "Activate")
                        repliedAt = at
                    }
                }
                if now() > deadline { throw BenchError("Activate: no thaw or no reply within 30 s") }
                var fds = [pollfd(fd: watch.fd, events: Int16(POLLPRI), revents: 0),
                           pollfd(fd: control.fd, events: Int16(POLLIN), revents: 0)]
                if thawedAt == nil || repliedAt == nil { shortPoll(&fds, 2) }
            }
            toThawed.append(thawedAt! - sent)
            toReply.append(repliedAt! - sent)
            // The app has its callbacks before the next round backgrounds it again.
            _ = try log.first(from: again, "didBecomeActive") { $0.session == session && $0.name == "didBecomeActive" }
        }
        let p = [0.5, 0.99]
        say("\n-- 3. freeze and thaw as scened does them: \(Self.app), \(settings.rounds) rounds \(settings.rounds <= 100 ? "(p99 of \(settings.rounds) is their max)" : "") --")
        say("cgroup: \(cgroup); cgroup.events read every \(duration(lookInterval)), the socket looked at meanwhile")
        say("Background → didEnterBackground answered → SuspendDelaySec=\(settings.suspendDelay) → suspended → cgroup.freeze=1 → frozen 1")
        say(row("suspended event → cgroup.events frozen 1", spread(suspendedToFrozen, p)))
        say(row("Background sent → frozen 1 (with the delay)", spread(backgroundToFrozen, p)))
        say(row("Activate sent → cgroup.events frozen 0", spread(toThawed, p)))
        say(row("Activate sent → Activate reply received", spread(toReply, p)))
        say("GetApp frozen=true once frozen 1 showed: \(reportedFrozen)/\(settings.rounds) rounds")
        try terminate(control, Self.app, pid: pid, cgroup: cgroup)
    }

    /// The kernel alone: cgroup.freeze written by hand on a scratch cgroup, one process in it.
    private func kernelFreeze() throws {
        guard let own = Cgroup.own() else {
            say("(kernel freeze figure: skipped, no cgroup v2 hierarchy)")
            return
        }
        say("\n-- 3b. the kernel alone: write cgroup.freeze of a scratch cgroup (\(own)/freeze-*) holding one process, poll cgroup.events, \(settings.rounds) rounds --")
        // The busy loop ends by itself once the bench is gone (it is in a session of its own and
        // would survive a ^C); the sleep within ten minutes.
        let busy = ["/bin/sh", "-c", "while kill -0 $PPID 2>/dev/null; do :; done"]
        for (name, command) in [("busy", busy), ("sleeping", ["/bin/sleep", "600"])] {
            let path = own + "/freeze-\(name)"
            let cgroup: Cgroup
            do { cgroup = try Cgroup.create(path) } catch { throw BenchError("scratch cgroup: \(error)") }
            scratchCgroups.append(path)
            let process: SpawnedProcess
            do {
                process = try ProcessSpawner.spawn(LaunchSpec(executable: command[0], arguments: command,
                                                              environment: ["PATH=/usr/bin:/bin"], cgroup: path))
            } catch { throw BenchError("spawn \(command[0]): \(error)") }
            scratchProcesses.append(process)
            usleep(50_000)
            let watch = try FreezeWatch(cgroup: path)
            var freezes: [Double] = [], thaws: [Double] = []
            for _ in 0..<settings.rounds {
                var t = now()
                do { try cgroup.freeze() } catch { throw BenchError("freeze: \(error)") }
                freezes.append(try watch.await(true, timeout: 10) - t)
                usleep(2_000)
                t = now()
                do { try cgroup.thaw() } catch { throw BenchError("thaw: \(error)") }
                thaws.append(try watch.await(false, timeout: 10) - t)
                usleep(2_000)
            }
            say("\(name) process: \(command.joined(separator: " "))")
            say(row("  cgroup.freeze=1 written → frozen 1", spread(freezes, [0.5, 0.99])))
            say(row("  cgroup.freeze=0 written → frozen 0", spread(thaws, [0.5, 0.99])))
            endScratch()
        }
    }

    /// Kills what the scratch cgroups hold, reaps it and removes them.
    private func endScratch() {
        for path in scratchCgroups {
            let cgroup = Cgroup(path: path)
            try? cgroup.kill()
            try? cgroup.thaw()
        }
        for p in scratchProcesses {
            _ = ProcessSpawner.signal(SIGKILL, pidfd: p.pidfd)
            var pfd = pollfd(fd: p.pidfd, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, 5000)
            _ = ProcessSpawner.reap(pidfd: p.pidfd)
            close(p.pidfd)
        }
        scratchProcesses = []
        for path in scratchCgroups {
            let deadline = now() + 5
            while rmdir(path) != 0 && errno == EBUSY && now() < deadline { usleep(1_000) }
        }
        scratchCgroups = []
    }

    // MARK: 4

    private func footprints(_ control: TimedConnection, _ log: EventLog) throws {
        let k = settings.copies
        let declared = settings.holdMiB << 20
        var lastConnect = 0.0
        for i in 0..<k {
            let connected = try control.call("Connect", ["app": .string(Self.holder(i))])
            _ = try startedPid(control, Self.holder(i))
            // One scene each: the one of its own it may have asked for is discarded.
            try keepOnly(control, log, Self.holder(i), connected.reply["session"]?["id"]?.stringValue)
            lastConnect = now()
        }
        // Two readings after the last scene connected (and touched its pages).
        let interval = 1.0
        usleep(useconds_t((interval * 2.5) * 1e6))
        var measuredAt: Int64 = 0
        try waitFor("a measurement after the last Connect", timeout: 20) {
            let pressure = try control.call("GetPressure").reply["pressure"]
            measuredAt = pressure?["measured"]?["measuredAt"]?.intValue ?? 0
            return monotonic(measuredAt) > lastConnect + interval
        }
        say("\n-- 4. measured against declared: \(k) copies of scene-notes --hold-mib \(settings.holdMiB), one foregroundActive scene each (MemorySource=measured, the default) --")
        say("declared: what the app would declare, \(settings.holdMiB) MiB per scene and nothing for itself (scene-notes declares nothing); scened: GetApp base + scene footprints; kernel: Σ Pss of /proc/PID/smaps_rollup over the cgroup's processes, read right after")
        var totalScened = 0, totalPss = 0, totalRss = 0
        for i in 0..<k {
            let name = Self.holder(i)
            let record = try app(control, name)
            let base = Int(record["baseFootprint"]?.intValue ?? 0)
            let scenes = Int(record["sceneFootprint"]?.intValue ?? 0)
            guard let pid = record["startedPid"]?.intValue.map(Int32.init) else { throw BenchError("\(name) not running") }
            let pids = cgroupDirectory(of: pid).flatMap { try? Cgroup(path: $0).pids() } ?? [pid]
            var pss = 0, rss = 0
            for p in pids {
                let r = pssAndRss(of: p)
                pss += r.pss
                rss += r.rss
            }
            totalScened += base + scenes
            totalPss += pss
            totalRss += rss
            say("\(name): declared \(mib(declared)) | scened base \(mib(base)) + scene \(mib(scenes)) = \(mib(base + scenes)) (\(ratio(Double(base + scenes), Double(declared), decimals: 2)) declared) | kernel Pss \(mib(pss)) (Rss \(mib(rss)), \(pids.count) process\(pids.count == 1 ? "" : "es")); scened/Pss \(ratio(Double(base + scenes), Double(pss), decimals: 2))")
        }
        let pressure = try control.call("GetPressure").reply["pressure"]
        let measured = pressure?["measured"]
        let measuredBytes = Int(measured?["bytes"]?.intValue ?? 0)
        say("sum: declared \(mib(declared * k)) | scened \(mib(totalScened)) | kernel Pss \(mib(totalPss)) (Rss \(mib(totalRss)))")
        say("GetPressure measured: apps \(measured?["apps"]?.intValue ?? 0), bytes \(mib(measuredBytes)), source \(measured?["source"]?.stringValue ?? "?"), awaitingRelease \(measured?["awaitingRelease"]?.boolValue ?? false); usage \(mib(Int(pressure?["usage"]?.intValue ?? 0))); measured/ΣPss \(ratio(Double(measuredBytes), Double(totalPss), decimals: 2))")
    }

    // MARK: Clean-up

    /// The daemon stopped (it ends what it started), then anything left of ours killed and
    /// its cgroups removed: no process and no cgroup outlives the bench, even after an error.
    func cleanUp() {
        control = nil
        log = nil
        endScratch()
        daemon.stop()
        for pid in appPids where !processIsGone(pid) {
            // Only if it still is one of ours (a pid may have been reused).
            if let cmdline = try? readFile("/proc/\(pid)/cmdline"), cmdline.hasPrefix(notes) {
                kill(pid, SIGKILL)
            }
        }
        guard daemonPid > 0, let own = Cgroup.own() else { return }
        let base = own + "/scened.\(daemonPid)"
        guard access(base, F_OK) == 0 else { return }
        let apps = ([Self.app] + (0..<settings.copies).map(Self.holder)).map { base + "/app-" + $0 }
        for path in apps where access(path, F_OK) == 0 {
            try? Cgroup(path: path).kill()
            let deadline = now() + 5
            while rmdir(path) != 0 && errno == EBUSY && now() < deadline { usleep(1_000) }
        }
        rmdir(base)
    }
}
