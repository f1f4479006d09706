import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Apps scened starts itself (ExecStart= in apps.d/APP.conf), with real processes: a launch
/// starts the process and completes when it attaches; suspension freezes it; termination ends
/// it and everything it started; failures are clear errors; careless callers of a launch that
/// waits hurt nobody.
@Suite("Apps scened starts itself", .serialized)
struct StartedAppTests {
    static let configuration = """
        [Lifecycle]
        SuspendDelaySec=300ms
        [Store]
        Durability=normal
        """

    /// Writes apps.d/APP.conf beside the workspace's configuration.
    static func appFile(_ workspace: Workspace, _ app: String, _ body: String) throws {
        mkdir(workspace.directory.file("apps.d"), 0o755)
        try writeTextFile(workspace.directory.file("apps.d/\(app).conf"), body + "\n")
    }

    static func notes(_ workspace: Workspace, _ app: String) throws -> String {
        let notes = try Binaries.require(Binaries.directory + "/scene-notes")
        return "\(notes) --app \(app) --socket \(workspace.socketPath)"
    }

    /// GetApp's record; empty for an app scened has never had running (NoSuchApp).
    static func app(_ daemon: DaemonProcess, _ app: String) throws -> JSONObject {
        do {
            return try daemon.call("GetApp", ["app": .string(app)])["app"]?.objectValue ?? [:]
        } catch let error as VarlinkError where error.name == "io.scened.Manager.NoSuchApp" {
            return [:]
        }
    }

    /// The process's v2 cgroup directory, from /proc/PID/cgroup's "0::" line.
    static func cgroupDirectory(_ pid: Int32) -> String? {
        let text = readTextFile("/proc/\(pid)/cgroup")
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) else { return nil }
        let path = String(line.dropFirst(3))
        for root in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] where access(root + "/cgroup.procs", F_OK) == 0 {
            if access(root + path + "/cgroup.events", F_OK) == 0 { return root + path }
        }
        return nil
    }

    /// Fields of /proc/PID/stat after the command: [state, ppid, pgrp, session, ...].
    static func stat(_ pid: Int32) -> [String]? {
        let text = readTextFile("/proc/\(pid)/stat")
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ").map(String.init)
    }

    static func waitUntil(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Deadline(seconds: seconds)
        while !(try condition()) {
            if deadline.hasPassed { throw TestFailure("not within \(seconds) s: \(what)") }
            usleep(20_000)
        }
    }

    @Test("a Connect starts the app in a clean process of its own and completes when it attaches; suspension freezes it; termination ends it",
          .timeLimit(.minutes(3)))
    func startFreezeThawTerminate() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let app = "com.example.started"
        try Self.appFile(workspace, app, """
            [Launch]
            ExecStart=\(try Self.notes(workspace, app))
            Environment=EXTRA=1
            """)
        let daemon = try DaemonProcess(workspace)
        // A clean stop ends the apps it started (a killed scened would leave them running).
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let connected = try daemon.call("Connect", ["app": .string(app)])
        let session = try #require(connected["session"]?["id"]?.stringValue)
        #expect(connected["session"]?["state"]?.stringValue == "foregroundActive")

        var record = try Self.app(daemon, app)
        let pid = try #require(record["startedPid"]?.intValue.map(Int32.init))
        #expect(record["attachedPid"]?.intValue == Int64(pid), "the started process is the one attached")
        #expect(record["process"]?.stringValue == "running")

        // A clean start: its own session and process group, only the environment it was given.
        let fields = try #require(Self.stat(pid))
        #expect(fields[2] == String(pid) && fields[3] == String(pid), "pgrp and sid are its pid: \(fields.prefix(4))")
        let environ = readTextFile("/proc/\(pid)/environ")
        let names = Set(environ.split(separator: "\0").map { String($0.prefix { $0 != "=" }) })
        #expect(names == ["PATH", "SCENED_APP", "SCENED_SOCKET", "HOME", "USER", "LOGNAME", "EXTRA"], "\(names)")
        let blocked = readTextFile("/proc/\(pid)/status").split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
        #expect(blocked.map { $0.hasSuffix("0000000000000000") } == true, "no signal blocked at start: \(blocked ?? "?")")

        let limits = readTextFile("/proc/\(pid)/limits").split(separator: "\n").first { $0.hasPrefix("Max open files") }
        #expect(limits?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first == "1024",
                "the soft descriptor limit is the usual 1024, not scened's raised one: \(limits ?? "?")")

        let cgroup = Self.cgroupDirectory(pid)
        if geteuid() == 0 {
            #expect(cgroup?.hasSuffix("/app-\(app)") == true, "root gets a cgroup per app: \(cgroup ?? "none")")
        }

        // Background: suspended after SuspendDelaySec=, and then frozen.
        try daemon.call("Background", ["session": .string(session)])
        try Self.waitUntil("frozen") { try Self.app(daemon, app)["frozen"]?.boolValue == true }
        record = try Self.app(daemon, app)
        #expect(record["process"]?.stringValue == "suspended")
        if let cgroup {
            // The kernel reports the freeze once every task has stopped, which takes a while
            // beside a sanitized suite on two cores: waited for, bounded.
            try Self.waitUntil("the kernel reports the cgroup frozen", seconds: 30) {
                readTextFile(cgroup + "/cgroup.events").contains("frozen 1")
            }
        } else {
            try Self.waitUntil("stopped") { Self.stat(pid)?.first == "T" }
        }

        // Activate: thawed before its callbacks, which it answers as usual.
        let activated = try daemon.call("Activate", ["session": .string(session)])
        #expect(activated["session"]?["state"]?.stringValue == "foregroundActive")
        #expect(try Self.app(daemon, app)["frozen"]?.boolValue == false)
        if let cgroup { #expect(readTextFile(cgroup + "/cgroup.events").contains("frozen 0") == true) }

        // Terminate: willTerminate, its answer, SIGTERM; the process and its cgroup go.
        try daemon.call("Terminate", ["app": .string(app)])
        try Self.waitUntil("the process gone") { access("/proc/\(pid)", F_OK) != 0 }
        if let cgroup { try Self.waitUntil("the cgroup removed") { access(cgroup, F_OK) != 0 } }
        record = try Self.app(daemon, app)
        #expect(record["startedPid"] == nil)
        #expect(record["process"]?.stringValue == "notRunning")

        // Activating the archived session starts it again, restored.
        let again = try daemon.call("Activate", ["session": .string(session)])
        #expect(again["session"]?["state"]?.stringValue == "foregroundActive")
        let second = try #require(try Self.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        #expect(second != pid)

        // kill -9: terminated as exited, promptly; nothing of it is left.
        let killedAt = monotonicNanoseconds()
        kill(second, SIGKILL)
        try Self.waitUntil("terminated after kill -9") { try Self.app(daemon, app)["process"]?.stringValue == "notRunning" }
        let elapsedMs = Double(monotonicNanoseconds() - killedAt) / 1e6
        #expect(elapsedMs < 2_000, "terminated \(elapsedMs) ms after kill -9 (bound, not a timing)")
        try daemon.assertServing("after the started app was killed")

        // A clean stop of the daemon ends what it started.
        _ = try daemon.call("Activate", ["session": .string(session)])
        let third = try #require(try Self.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        try daemon.stop()
        #expect(access("/proc/\(third)", F_OK) != 0 || Self.stat(third)?.first == "Z", "a started app outlived scened")
    }

    @Test("a process that cannot start, exits before attaching, or never attaches fails the launch with LaunchFailed; scened serves on",
          .timeLimit(.minutes(3)))
    func launchFailures() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        try Self.appFile(workspace, "com.example.noexec", "[Launch]\nExecStart=/nonexistent/app --x")
        try Self.appFile(workspace, "com.example.quits", "[Launch]\nExecStart=/bin/sh -c \"exit 3\"")
        try Self.appFile(workspace, "com.example.silent", "[Launch]\nExecStart=/bin/sleep 600\nAttachTimeoutSec=1s")
        try Self.appFile(workspace, "com.example.nodir", "[Launch]\nExecStart=/bin/true\nWorkingDirectory=/nonexistent")
        let daemon = try DaemonProcess(workspace)
        // A clean stop ends the apps it started (a killed scened would leave them running).
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let expected = [("com.example.noexec", "No such file"), ("com.example.quits", "exited with status 3"),
                        ("com.example.silent", "did not attach within 1s"), ("com.example.nodir", "/nonexistent")]
        for (app, fragment) in expected {
            let client = try daemon.client()
            do {
                _ = try client.call("io.scened.Manager.Connect", ["app": .string(app)])
                Issue.record("\(app): Connect succeeded")
            } catch let error as VarlinkError {
                #expect(error.name == "io.scened.Manager.LaunchFailed", "\(app): \(error.name)")
                let message = error.parameters["message"]?.stringValue ?? ""
                #expect(message.contains(fragment), "\(app): \(message)")
                #expect(error.parameters["app"]?.stringValue == app)
            }
            let record = try Self.app(daemon, app)
            #expect(record["process"]?.stringValue ?? "notRunning" == "notRunning", "\(app) is not running")
            #expect(record["startedPid"] == nil)
        }
        // The silent process was killed at its deadline: no child of scened is left.
        try Self.waitUntil("no child of scened left") {
            !Self.children(of: daemon.pid).contains { Self.stat($0)?.first != "Z" }
        }
        try daemon.assertServing("after four failed launches")
        #expect(daemon.stderr.contains("Launching com.example.quits failed"), "the failure is logged")
    }

    @Test("nothing an app started outlives it: a child it left behind goes when the app is terminated, and when the app dies",
          .timeLimit(.minutes(3)))
    func childrenGoWithTheApp() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let app = "com.example.forks"
        let marker = workspace.directory.file("child.pid")
        let script = workspace.directory.file("forks.sh")
        // A child that leaves the app's session and ignores SIGTERM, and would otherwise run
        // on for ten minutes.
        try writeTextFile(script, """
            setsid /bin/sh -c 'trap "" TERM; echo $$ > \(marker); exec sleep 600' &
            exec \(try Self.notes(workspace, app))

            """)
        try Self.appFile(workspace, app, "[Launch]\nExecStart=/bin/sh \(script)")
        let daemon = try DaemonProcess(workspace)
        // A clean stop ends the apps it started (a killed scened would leave them running).
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        func childPid() -> Int32? { readTextFile(marker).split(separator: "\n").first.flatMap { Int32($0) } }
        for round in 0..<2 {
            unlink(marker)
            _ = try daemon.call("Connect", ["app": .string(app)])
            try Self.waitUntil("the child wrote its pid") { childPid() != nil }
            let child = childPid()!
            let main = try #require(try Self.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
            #expect(Self.stat(child)?[3] != String(main), "the child left the app's session")
            if round == 0 {
                try daemon.call("Terminate", ["app": .string(app)])
            } else {
                kill(main, SIGKILL)
            }
            try Self.waitUntil("the child gone (round \(round))") { access("/proc/\(child)", F_OK) != 0 || Self.stat(child)?.first == "Z" }
            do {
                try Self.waitUntil("the app not running") { try Self.app(daemon, app)["process"]?.stringValue == "notRunning" }
            } catch {
                throw TestFailure("\(error); \(try Self.app(daemon, app)); scened's log:\n\(daemon.stderr)")
            }
        }
        try daemon.assertServing("after its apps' children were killed")
    }

    @Test("a flood of launches of an app that cannot start forks a bounded number of times (the start limit) and every call is answered",
          .timeLimit(.minutes(3)))
    func floodOfFailingLaunches() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let app = "com.example.crashes"
        try Self.appFile(workspace, app, "[Launch]\nExecStart=/bin/sh -c \"exit 7\"\nStartLimitBurst=5\nStartLimitIntervalSec=1min")
        let daemon = try DaemonProcess(workspace)
        // A clean stop ends the apps it started (a killed scened would leave them running).
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        // One connection pipelines 200 launches; 20 more send 5 each.
        let flooder = try RawConnection(path: daemon.socketPath)
        for _ in 0..<200 { try flooder.sendCall("io.scened.Manager.Connect", ["app": .string(app)]) }
        var others: [RawConnection] = []
        for _ in 0..<20 {
            let c = try RawConnection(path: daemon.socketPath)
            for _ in 0..<5 { try c.sendCall("io.scened.Manager.Launch", ["app": .string(app)]) }
            others.append(c)
        }
        let bystander = try daemon.client(timeout: .seconds(10))
        #expect(try bystander.call("io.scened.Manager.GetStatus")["status"] != nil)
        var errors: [String: Int] = [:]
        var pids = Set<String>()
        var limited = 0
        for (c, n) in [(flooder, 200)] + others.map({ ($0, 5) }) {
            for _ in 0..<n {
                let reply = try c.receiveObject(timeout: 60)
                errors[reply.errorName ?? "none", default: 0] += 1
                let message = reply.parametersObject["message"]?.stringValue ?? ""
                if message.contains("start limit hit") { limited += 1 }
                // "the process (pid N) exited with status 7 before it attached": one per spawn.
                if let pid = message.split(separator: "(pid ").dropFirst().first?.prefix(while: { $0 != ")" }) { pids.insert(String(pid)) }
            }
        }
        #expect(errors == ["io.scened.Manager.LaunchFailed": 300], "\(errors)")
        #expect(pids.count >= 1 && pids.count <= 5, "forked \(pids.count) times for 300 launches (StartLimitBurst=5)")
        #expect(limited > 0 && limited + pids.count <= 300, "\(limited) refused by the start limit")
        try daemon.assertServing("after a flood of failing launches")
    }

    @Test("after scened is killed (no service manager to stop its cgroup), the next scened kills what the dead one started and starts the app anew",
          .timeLimit(.minutes(3)))
    func aDeadDaemonsAppsDoNotLinger() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let app = "com.example.orphan"
        try Self.appFile(workspace, app, "[Launch]\nExecStart=\(try Self.notes(workspace, app))")
        let first = try DaemonProcess(workspace)
        let session = try #require(try first.call("Connect", ["app": .string(app)])["session"]?["id"]?.stringValue)
        let orphan = try #require(try Self.app(first, app)["startedPid"]?.intValue.map(Int32.init))
        let oldCgroup = Self.cgroupDirectory(orphan)
        first.crash()
        usleep(200_000)
        #expect(access("/proc/\(orphan)", F_OK) == 0, "outside a service manager the app outlives a killed scened")

        let second = try DaemonProcess(workspace)

        // A clean stop ends the apps it started (a killed scened would leave them running).

        defer { if second.child.isRunning { try? second.stop() } }
        try Self.waitUntil("the orphan killed") { access("/proc/\(orphan)", F_OK) != 0 || Self.stat(orphan)?.first == "Z" }
        if geteuid() == 0, let oldCgroup { #expect(access(oldCgroup, F_OK) != 0, "the dead scened's cgroup removed: \(oldCgroup)") }
        #expect(try Self.app(second, app)["process"]?.stringValue == "notRunning", "terminated as exited: its process is gone")
        #expect(second.stderr.contains("killed what a previous scened left running") || geteuid() != 0)
        // The session is archived with its state; activating it starts a new process.
        let again = try second.call("Activate", ["session": .string(session)])
        #expect(again["session"]?["state"]?.stringValue == "foregroundActive")
        let fresh = try #require(try Self.app(second, app)["startedPid"]?.intValue.map(Int32.init))
        #expect(fresh != orphan)
        try second.stop()
    }

    @Test("AppCgroups=no (as where no cgroup can be had): the app's process group is stopped with SIGSTOP while suspended and continued with SIGCONT",
          .timeLimit(.minutes(3)))
    func processGroupFallback() throws {
        let workspace = try Workspace(configuration: Self.configuration + "\n[Lifecycle]\nAppCgroups=no\n")
        let app = "com.example.grouped"
        let marker = workspace.directory.file("child.pid")
        let script = workspace.directory.file("grouped.sh")
        // A busy child in the app's process group: stopped with it, or it would use CPU.
        try writeTextFile(script, """
            /bin/sh -c 'echo $$ > \(marker); while :; do :; done' &
            exec \(try Self.notes(workspace, app))

            """)
        try Self.appFile(workspace, app, "[Launch]\nExecStart=/bin/sh \(script)")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try #require(try daemon.call("Connect", ["app": .string(app)])["session"]?["id"]?.stringValue)
        let pid = try #require(try Self.app(daemon, app)["startedPid"]?.intValue.map(Int32.init))
        try Self.waitUntil("the child wrote its pid") { Int32(readTextFile(marker).split(separator: "\n").first ?? "") != nil }
        let child = Int32(readTextFile(marker).split(separator: "\n").first!)!
        #expect(Self.cgroupDirectory(pid).map { !$0.contains("app-") } ?? true, "no cgroup of its own")
        #expect(Self.stat(child)?[2] == String(pid), "the child is in the app's process group")

        try daemon.call("Background", ["session": .string(session)])
        try Self.waitUntil("frozen") { try Self.app(daemon, app)["frozen"]?.boolValue == true }
        try Self.waitUntil("both stopped") { Self.stat(pid)?.first == "T" && Self.stat(child)?.first == "T" }
        let ticks = RealMemoryDemoTests.cpuTicks(child)
        usleep(500_000)
        #expect(RealMemoryDemoTests.cpuTicks(child) == ticks, "a stopped busy loop uses no CPU")

        _ = try daemon.call("Activate", ["session": .string(session)])
        #expect(try Self.app(daemon, app)["frozen"]?.boolValue == false)
        try Self.waitUntil("continued") { Self.stat(pid)?.first != "T" && Self.stat(child)?.first != "T" }

        try daemon.call("Terminate", ["app": .string(app)])
        try Self.waitUntil("the group gone") {
            [pid, child].allSatisfy { access("/proc/\($0)", F_OK) != 0 || Self.stat($0)?.first == "Z" }
        }
        #expect(daemon.stderr.contains("AppCgroups=no"), "the fallback is reported")
    }

    /// Processes whose parent is `pid`.
    static func children(of pid: Int32) -> [Int32] {
        guard let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        var out: [Int32] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let child = Int32(name), let fields = stat(child), fields.count > 1, fields[1] == String(pid) else { continue }
            out.append(child)
        }
        return out
    }

    @Test("callers waiting for a launch that close early, pipeline behind it or flood it hurt nobody; one process is started",
          .timeLimit(.minutes(3)))
    func carelessCallersOfAWaitingLaunch() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let app = "com.example.slow"
        // Attaches a second after it starts: long enough for everyone to pile up behind it.
        try Self.appFile(workspace, app, """
            [Launch]
            ExecStart=/bin/sh -c "sleep 1; exec \(try Self.notes(workspace, app))"
            """)
        let daemon = try DaemonProcess(workspace)
        // A clean stop ends the apps it started (a killed scened would leave them running).
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        var waiting: [RawConnection] = []
        var careless: [RawConnection] = []
        for i in 0..<40 {
            let c = try RawConnection(path: daemon.socketPath)
            try c.sendCall("io.scened.Manager.Connect", ["app": .string(app), "background": true])
            // Behind it on the same connection: answered after it, in order.
            try c.sendCall("io.scened.Manager.GetStatus")
            if i % 2 == 0 { waiting.append(c) } else { careless.append(c) }
        }
        // Half go away at once, some with a half-sent message.
        for (i, c) in careless.enumerated() {
            if i % 2 == 0 { try c.send("{\"method\":\"io.scened.Manager.Conn") }
            c.close()
        }
        // A bystander is served while the launch waits.
        let bystander = try daemon.client(timeout: .seconds(10))
        let status = try bystander.call("io.scened.Manager.GetStatus")
        #expect(status["status"]?["version"]?.stringValue != nil)
        #expect(try Self.app(daemon, app)["attachedPid"] == nil, "the bystander was answered before the app attached")

        var sessions = Set<String>()
        for c in waiting {
            let first = try c.receiveObject(timeout: 30)
            #expect(first.errorName == nil, "\(first)")
            if let id = first.parametersObject["session"]?["id"]?.stringValue { sessions.insert(id) }
            let second = try c.receiveObject(timeout: 30)
            #expect(second.parametersObject["status"] != nil, "the call behind the launch comes after it: \(second)")
            c.close()
        }
        #expect(sessions.count == waiting.count, "each waiting Connect made its own session")
        let started = daemon.stderr.split(separator: "\n").filter { $0.contains("Started \(app): pid") }.count
        #expect(started == 1, "one process for all the waiting calls, started \(started) times")
        try daemon.assertServing("after careless callers of a waiting launch")
    }
}
