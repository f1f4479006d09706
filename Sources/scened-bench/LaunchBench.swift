import Glibc
import ProcessKit
import Varlink

// The rounds of `scened-bench launch` (LaunchFigures.swift says what each measures).

private func loadAverage() -> String {
    ((try? readFile("/proc/loadavg")) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
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
