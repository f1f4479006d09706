import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The built scenectl's `interrupt` against a scripted daemon, for what only a real process
/// shows: its signals (taken through a signalfd, passed on to the command), the command's exit
/// status, and the daemon going away under it.
@Suite struct InterruptBinaryTests {
    let binary = Binaries.scenectl

    static let resigned: JSONObject = ["seq": 5, "time": .int(Int64(testNow)), "event": "willResignActive", "app": "com.example.mail",
                                       "session": "s1", "state": "foregroundInactive", "appState": "inactive", "cause": "interruption"]

    /// Answers BeginInterruption with token i7 (and hangs up right after when `hangUp`), and
    /// EndInterruption with no events.
    static func daemon(hangUp: Bool = false) throws -> ScriptedDaemon {
        try ScriptedDaemon { call, peer in
            switch call.method {
            case "io.scened.Manager.BeginInterruption":
                peer.reply(["token": "i7", "events": [.object(resigned)]])
                return !hangUp
            case "io.scened.Manager.EndInterruption":
                peer.reply(["events": []])
                return true
            default:
                peer.fail(VarlinkError(name: "org.varlink.service.MethodNotFound", parameters: ["method": .string(call.method)]))
                return false
            }
        }
    }

    static func methods(_ daemon: ScriptedDaemon) -> [String] {
        daemon.calls.value.map { String($0.method.split(separator: ".").last!) }
    }

    /// Waits until the daemon has had `count` calls.
    static func waitForCalls(_ daemon: ScriptedDaemon, _ count: Int, seconds: Double = 10) -> Bool {
        let deadline = monotonicSeconds() + seconds
        while monotonicSeconds() < deadline {
            if daemon.calls.value.count >= count { return true }
            usleep(5_000)
        }
        return false
    }

    @Test(.timeLimit(.minutes(1))) func heldUntilSIGINTThenEnded() throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let child = try ChildProcess([binary, "--socket", daemon.path, "--no-legend", "interrupt", "--reason", "call"],
                                     directory: daemon.directory.path, label: "interrupt", stdoutPipe: true)
        #expect(child.readLine() == "i7", "the token first: \(child.stderr)")
        #expect(child.readLine() == "5 willResignActive com.example.mail s1 foregroundInactive")
        usleep(200_000)
        #expect(child.isRunning, "it holds the interruption until told otherwise")
        #expect(Self.methods(daemon) == ["BeginInterruption"])
        child.signal(SIGINT)
        #expect(child.finish(within: 10) == 0, "\(child.outcome)")
        #expect(Self.methods(daemon) == ["BeginInterruption", "EndInterruption"])
        #expect(daemon.calls.value.last?.parameters == ["token": "i7"])
        #expect(daemon.calls.value.first?.parameters == ["reason": "call"])
        #expect(child.stderr.isEmpty)
    }

    @Test(.timeLimit(.minutes(1))) func aSignalToScenectlReachesTheCommandAndItsStatusIsScenectls() throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let started = monotonicSeconds()
        let child = try ChildProcess([binary, "--socket", daemon.path, "interrupt", "--", "sleep", "30"],
                                     directory: daemon.directory.path, label: "interrupt")
        #expect(Self.waitForCalls(daemon, 1), "BeginInterruption: \(child.stderr)")
        usleep(200_000)
        child.signal(SIGTERM)
        #expect(child.finish(within: 10) == 128 + SIGTERM, "sleep died of the SIGTERM passed on: \(child.outcome)")
        #expect(monotonicSeconds() - started < 10, "not after sleep's 30 s")
        #expect(Self.methods(daemon) == ["BeginInterruption", "EndInterruption"])
        #expect(child.stderr.isEmpty && child.stdout.isEmpty)
    }

    @Test(.timeLimit(.minutes(1))) func aCommandThatIgnoresTheSignalKeepsTheInterruptionUntilItEnds() throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let directory = daemon.directory
        let ready = directory.file("ready")
        let script = "trap '' TERM; : > \(ready); sleep 1; exit 5"
        let child = try ChildProcess([binary, "--socket", daemon.path, "interrupt", "--", "sh", "-c", script],
                                     directory: directory.path, label: "interrupt")
        let deadline = monotonicSeconds() + 10
        while access(ready, F_OK) != 0 && monotonicSeconds() < deadline { usleep(5_000) }
        for _ in 0..<50 { child.signal(SIGTERM) }
        usleep(300_000)
        #expect(child.isRunning, "the command decides: \(child.outcome)")
        #expect(Self.methods(daemon) == ["BeginInterruption"], "still held")
        #expect(child.finish(within: 10) == 5, "\(child.outcome)")
        #expect(Self.methods(daemon) == ["BeginInterruption", "EndInterruption"])
    }

    @Test(.timeLimit(.minutes(1))) func theDaemonGoingAwayEndsAHoldWithStatus3() throws {
        let daemon = try Self.daemon(hangUp: true)
        defer { daemon.stop() }
        let started = monotonicSeconds()
        let child = try ChildProcess([binary, "--socket", daemon.path, "interrupt"], directory: daemon.directory.path,
                                     label: "interrupt")
        #expect(child.finish(within: 10) == 3, "\(child.outcome)")
        #expect(monotonicSeconds() - started < 5, "at once, not at a timeout")
        #expect(child.stderr == "scenectl: scened closed the connection; the interruption ended with it\n")
        #expect(child.stdout.hasPrefix("i7\n"))
    }

    @Test(.timeLimit(.minutes(1))) func theDaemonGoingAwayUnderACommandIsSaidAndTheCommandsStatusStands() throws {
        let daemon = try Self.daemon(hangUp: true)
        defer { daemon.stop() }
        let child = try ChildProcess([binary, "--socket", daemon.path, "interrupt", "--", "sh", "-c", "sleep 0.5; exit 4"],
                                     directory: daemon.directory.path, label: "interrupt")
        #expect(child.finish(within: 10) == 4, "\(child.outcome)")
        #expect(child.stderr == "scenectl: scened closed the connection; interruption i7 ended with it\n")
        #expect(Self.methods(daemon) == ["BeginInterruption"], "nothing left to end")
    }
}
