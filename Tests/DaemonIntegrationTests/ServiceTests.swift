import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// scened as a service: sd_notify, signals, start-up failure, idle CPU, the command line.
@Suite("scened as a systemd-style service")
struct ServiceTests {
    @Test("READY=1 only once the socket accepts; STATUS= says what it manages; STOPPING=1 and exit 0 on SIGTERM")
    func notifyReadyStatusStopping() throws {
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        // READY=1 has arrived: the socket must answer right now, with no retry.
        let client = try VarlinkClient(path: daemon.socketPath, timeout: .seconds(5))
        let info = try client.call("org.varlink.service.GetInfo")
        #expect(info["interfaces"]?.arrayValue?.contains("io.scened.Manager") == true)
        guard let notify = daemon.notify else { throw TestFailure("no notify listener") }
        let readyIndex = notify.messages.firstIndex { NotifyListener.lines($0).contains("READY=1") }
        #expect(readyIndex != nil)
        #expect(notify.messages.filter { NotifyListener.lines($0).contains("READY=1") }.count == 1, "READY=1 sent more than once: \(notify.messages)")
        let statuses = notify.values(of: "STATUS")
        #expect(!statuses.isEmpty, "no STATUS= at all: \(notify.messages)")
        if let first = statuses.first {
            #expect(first.contains("sessions") && first.contains("apps"), "STATUS= should say what scened manages: \(first)")
        }
        // A change shows up in STATUS= (rate-limited to StatusUpdateSec, 1 s by default).
        _ = try client.call("io.scened.Manager.Connect", ["app": "com.example.status"])
        let updated = waitUntil(seconds: 5) { notify.values(of: "STATUS").contains { $0.contains("1 live") } }
        #expect(updated, "STATUS= did not follow the new session: \(notify.values(of: "STATUS"))")
        client.close()
        try daemon.stop(SIGTERM)
        #expect(!notify.messages.contains { $0.contains("ERRNO=") }, "a clean run sent ERRNO=: \(notify.messages)")
        // The socket it bound is gone.
        #expect(access(workspace.socketPath, F_OK) != 0, "the socket file was left behind")
    }

    @Test("SIGTERM with nothing to wait for exits at once, not at StopTimeoutSec=", arguments: [true, false])
    func stopWithNothingToWaitFor(withNotify: Bool) throws {
        // Without logind's retries nothing else wakes the loop: only the stop's own passes.
        let workspace = try Workspace(configuration: Workspace.calmConfiguration + "\n[System]\nFollowLogin=no")
        let daemon = try DaemonProcess(workspace, withNotify: withNotify)
        _ = try daemon.call("Connect", ["app": "com.example.quickstop"])
        let start = monotonicSeconds()
        try daemon.stop(SIGTERM, timeout: 30)
        let seconds = monotonicSeconds() - start
        // The default StopTimeoutSec= is 20 s; the stop itself takes milliseconds.
        #expect(seconds < 2, "SIGTERM → exit took \(seconds) s")
    }

    @Test("SIGTERM with an app that answers at once: the exit follows the answer, its data is saved")
    func stopAfterTheAnswer() throws {
        let workspace = try Workspace(configuration: Workspace.calmConfiguration + "\n[System]\nFollowLogin=no")
        let daemon = try DaemonProcess(workspace)
        let attached = try AttachedApp(daemon, app: "com.example.quickstop")
        _ = try attached.events(through: "didFinishLaunching")
        let session = try attached.call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?"
        _ = try attached.events(through: "didBecomeActive")
        let start = monotonicSeconds()
        daemon.child.signal(SIGTERM)
        let background = try attached.events(through: "didEnterBackground").last!
        try attached.call("Acknowledge", ["seq": .int(Int64(background.seq)), "restoration": ["json": ["count": 3]]])
        #expect(daemon.child.wait(seconds: 30), "no exit within 30 s of SIGTERM")
        let seconds = monotonicSeconds() - start
        #expect(daemon.child.exitStatus == 0)
        #expect(seconds < 2, "SIGTERM → exit took \(seconds) s with the answer in at once")
        let again = try DaemonProcess(workspace)
        let saved = try again.call("GetSession", ["session": .string(session)])
        #expect(saved["session"]?["restoration"]?["json"]?["count"]?.intValue == 3, "the answer's data was not saved: \(saved)")
        try again.stop()
    }

    @Test("SIGINT also shuts down cleanly (exit 0, STOPPING=1)")
    func sigint() throws {
        let daemon = try DaemonProcess(try Workspace())
        _ = try daemon.call("Connect", ["app": "com.example.sigint"])
        try daemon.stop(SIGINT)
    }

    @Test("without NOTIFY_SOCKET the daemon runs and stops normally")
    func withoutNotifySocket() throws {
        let daemon = try DaemonProcess(try Workspace(), withNotify: false)
        let reply = try daemon.call("Connect", ["app": "com.example.nonotify"])
        #expect(reply["session"]?["id"]?.stringValue == "s1")
        try daemon.assertServing("without NOTIFY_SOCKET")
        try daemon.stop()
    }

    @Test("start-up failure: --socket below a regular file exits non-zero with STATUS=Failed… and ERRNO=")
    func startupFailure() throws {
        let workspace = try Workspace()
        try writeTextFile(workspace.directory.file("plainfile"), "not a directory\n")
        let notify = try NotifyListener(path: workspace.directory.file("failure.notify"))
        defer { notify.close() }
        let child = try ChildProcess(
            [Binaries.scened, "--socket", workspace.directory.file("plainfile/io.scened.Manager"),
             "--state-dir", workspace.stateDirectory, "--config", workspace.configPath],
            environment: ["NOTIFY_SOCKET": notify.path], directory: workspace.path, label: "failing")
        #expect(child.wait(seconds: 15), "scened did not give up")
        #expect(child.exitStatus != nil && child.exitStatus != 0, "scened: \(child.outcome)")
        _ = notify.wait(for: "ERRNO=", seconds: 2)
        let failure = notify.messages.first { $0.contains("ERRNO=") } ?? ""
        let status = NotifyListener.lines(failure).first { $0.hasPrefix("STATUS=") } ?? ""
        #expect(status.hasPrefix("STATUS=Failed"), "datagrams: \(notify.messages)")
        let errnoLine = NotifyListener.lines(failure).first { $0.hasPrefix("ERRNO=") } ?? ""
        #expect(Int(errnoLine.dropFirst("ERRNO=".count)).map { $0 > 0 } == true, "datagrams: \(notify.messages)")
        #expect(!notify.messages.contains { NotifyListener.lines($0).contains("READY=1") }, "READY=1 before failing")
        #expect(!child.stderr.isEmpty, "the failure should be explained on stderr")
    }

    @Test("idle CPU: no more than one clock tick over 2 s of idleness, with clients connected")
    func idleCPU() throws {
        let daemon = try DaemonProcess(try Workspace())
        // Some state, an idle client and an idle monitor: nothing may poll.
        _ = try daemon.call("Connect", ["app": "com.example.idle"])
        _ = try daemon.call("Connect", ["app": "com.example.idle2", "background": true])
        let idleClient = try daemon.client()
        _ = try idleClient.call("io.scened.Manager.GetStatus")
        let monitor = try EventMonitor(daemon, consecutive: false)
        // Let start-up work and the rate-limited STATUS= update settle.
        sleepMilliseconds(1500)
        let before = try daemon.cpuTicks()
        sleepMilliseconds(2000)
        let after = try daemon.cpuTicks()
        #expect(after - before <= 1, "scened used \(after - before) clock ticks in 2 s of idleness")
        monitor.close()
        idleClient.close()
        try daemon.stop()
    }

    @Test("--help and --version exit 0; a bad option or argument exits 2")
    func commandLine() throws {
        let workspace = try Workspace()
        try Binaries.require(Binaries.scened)
        let help = try run([Binaries.scened, "--help"], in: workspace.path)
        #expect(help.status == 0, "\(help.summary)")
        #expect(help.stdout.contains("Usage: scened"), "\(help.summary)")
        #expect(help.stdout.contains("--socket") && help.stdout.contains("--state-dir"), "\(help.summary)")
        let short = try run([Binaries.scened, "-h"], in: workspace.path)
        #expect(short.status == 0 && short.stdout == help.stdout)
        let version = try run([Binaries.scened, "--version"], in: workspace.path)
        #expect(version.status == 0, "\(version.summary)")
        #expect(version.stdout.hasPrefix("scened "), "\(version.summary)")
        for bad in [["--bogus"], ["--socket"], ["extra-argument"], ["-x"]] {
            let result = try run([Binaries.scened] + bad, in: workspace.path)
            #expect(result.status == 2, "\(result.summary)")
            #expect(result.stderr.contains("scened"), "\(result.summary)")
            #expect(result.stdout.isEmpty, "\(result.summary)")
        }
    }

    @Test("started by hand as an ordinary user with no configuration: embedded defaults, XDG paths")
    func embeddedDefaultsAsAnyUser() throws {
        let workspace = try Workspace()
        let runtime = workspace.directory.file("runtime")
        let stateHome = workspace.directory.file("statehome")
        let emptyRoot = workspace.directory.file("root")
        for dir in [runtime, stateHome, emptyRoot] { mkdir(dir, 0o700) }
        var prefix: [String] = []
        let asRoot = getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0
        if asRoot {
            // nobody: no home, no rights beyond its own directories.
            for dir in [workspace.path, runtime, stateHome, emptyRoot] { chown(dir, 65534, 65534) }
            prefix = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        }
        let notify = try NotifyListener(path: workspace.directory.file("user.notify"))
        defer { notify.close() }
        if asRoot { chown(notify.path, 65534, 65534) }
        let child = try ChildProcess(prefix + [Binaries.scened, "--config-root", emptyRoot],
                                     environment: ["NOTIFY_SOCKET": notify.path, "XDG_RUNTIME_DIR": runtime,
                                                   "XDG_STATE_HOME": stateHome, "HOME": workspace.path,
                                                   "RUNTIME_DIRECTORY": nil, "STATE_DIRECTORY": nil, "SCENED_SOCKET": nil],
                                     directory: workspace.path, label: "by-hand")
        defer { child.killNow() }
        guard notify.wait(for: "READY=1", seconds: 20) != nil else {
            throw TestFailure("scened run by hand did not become ready (\(child.outcome)); stderr:\n\(child.stderr)")
        }
        let socket = runtime + "/scened/io.scened.Manager"
        let reply = try VarlinkClient(path: socket, timeout: .seconds(10)).call("io.scened.Manager.GetStatus")
        #expect(reply["status"]?["socket"]?.stringValue == socket)
        #expect(reply["status"]?["configFiles"] == [], "no configuration file should have been read")
        #expect(access(stateHome + "/scened/scened.db", F_OK) == 0, "the database is not in $XDG_STATE_HOME/scened")
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 10))
        #expect(child.exitStatus == 0, "\(child.outcome); stderr:\n\(child.stderr)")
    }
}

private func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
