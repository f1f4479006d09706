import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// `scenectl interrupt` and `end-interruption` driving the real scened: an interruption held
/// while a command runs resigns the active scene and brings it back; status shows it while
/// held; a non-administrator is refused; a killed holder, and a stopped daemon, end it.
@Suite("scenectl interrupt against the real scened", .serialized)
struct InterruptCommandTests {
    static let app = "com.example.mail"

    /// The daemon's events as JSON objects (ObservedEvent does not know the system's causes).
    final class Events {
        private let client: VarlinkClient

        init(_ daemon: DaemonProcess) throws {
            client = try VarlinkClient(path: daemon.socketPath, timeout: .milliseconds(100))
            try client.sendRaw(VarlinkCall(method: "io.scened.Manager.Monitor", parameters: [:], more: true).encoded())
            guard let first = try reply(seconds: 10), first["event"] == nil else {
                throw TestFailure("Monitor did not confirm the subscription; daemon stderr:\n\(daemon.stderr)")
            }
        }

        private func reply(seconds: Double) throws -> JSONObject? {
            let deadline = Deadline(seconds: seconds)
            while true {
                do {
                    let reply = try VarlinkReply(from: try client.receiveMessage())
                    if let error = reply.error { throw TestFailure("Monitor failed: \(error)") }
                    return reply.parameters
                } catch VarlinkClientError.timedOut {
                    if deadline.hasPassed { return nil }
                }
            }
        }

        /// The next event, or nil if none comes within `seconds`.
        func next(seconds: Double = 10) throws -> JSONObject? {
            try reply(seconds: seconds)?["event"]?.objectValue
        }

        /// The time of the last event `nextLine` read (µs).
        private(set) var lastTime: Int64 = 0

        /// "willResignActive s1 foregroundInactive interruption" for the next event.
        func nextLine(seconds: Double = 10) throws -> String {
            guard let e = try next(seconds: seconds) else { return "nothing within \(seconds) s" }
            lastTime = e["time"]?.intValue ?? 0
            return ["event", "session", "state", "cause"].map { e[$0]?.stringValue ?? "-" }.joined(separator: " ")
        }

        func close() { client.close() }
    }

    static func scenectl(_ daemon: DaemonProcess, _ arguments: [String]) throws -> Completed {
        try run([Binaries.scenectl, "--socket", daemon.socketPath] + arguments, environment: ["SCENED_SOCKET": nil], timeout: 30)
    }

    static func interruptions(_ daemon: DaemonProcess) throws -> [JSONObject] {
        let status = try daemon.call("GetStatus")["status"]?.objectValue ?? [:]
        return status["system"]?["interruptions"]?.arrayValue?.compactMap(\.objectValue) ?? []
    }

    static func waitUntil(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Deadline(seconds: seconds)
        while !(try condition()) {
            if deadline.hasPassed { throw TestFailure("not within \(seconds) s: \(what)") }
            usleep(10_000)
        }
    }

    /// A daemon with one foregroundActive scene (s1), and its event stream from then on.
    static func setUp() throws -> (DaemonProcess, Events) {
        let daemon = try DaemonProcess(try Workspace())
        try daemon.call("Connect", ["app": .string(app)])
        return (daemon, try Events(daemon))
    }

    @Test("interrupt -- sleep 1 resigns the active scene for the second and brings it back; status shows it meanwhile",
          .timeLimit(.minutes(2)))
    func aCommandUnderAnInterruption() throws {
        let (daemon, events) = try Self.setUp()
        defer { events.close(); try? daemon.stop() }
        let holder = try ChildProcess([Binaries.scenectl, "--socket", daemon.socketPath, "-v", "--no-legend", "interrupt",
                                       "--reason", "incoming call", "--", "sleep", "1"],
                                      directory: daemon.workspace.path, label: "interrupt")
        #expect(try events.nextLine() == "willResignActive s1 foregroundInactive interruption")
        let resignedAt = events.lastTime

        let held = try Self.interruptions(daemon)
        #expect(held.count == 1 && held.first?["reason"]?.stringValue == "incoming call", "\(held)")
        let token = try #require(held.first?["token"]?.stringValue)
        let status = try Self.scenectl(daemon, ["status"])
        #expect(status.status == 0 && status.stdout.contains("Interrupted: \(token) \"incoming call\" since "), "\(status.summary)")
        let app = try Self.scenectl(daemon, ["show-app", Self.app])
        #expect(app.stdout.contains("Hold: inactive (interruption)"), "\(app.summary)")
        let activation = try Self.scenectl(daemon, ["-v", "--no-legend", "activate", "s1"])
        #expect(activation.status == 0 && activation.stdout.isEmpty, "held: an activation stays foregroundInactive: \(activation.summary)")

        #expect(holder.finish(within: 20) == 0, "\(holder.outcome): \(holder.stderr)")
        #expect(try events.nextLine() == "didBecomeActive s1 foregroundActive interruption")
        let heldFor = events.lastTime - resignedAt
        #expect(heldFor >= 1_000_000 && heldFor < 10_000_000, "held while sleep 1 ran: \(heldFor) µs")
        #expect(try Self.interruptions(daemon).isEmpty)
        // -v: the events of the beginning, then of the end.
        #expect(holder.stdout.split(separator: "\n").map { $0.split(separator: " ").dropFirst().joined(separator: " ") }
                == ["willResignActive \(Self.app) s1 foregroundInactive", "didBecomeActive \(Self.app) s1 foregroundActive"],
                "\(holder.stdout)")
        #expect(holder.stderr.isEmpty)
        try events.expectQuiet()
    }

    @Test("a user who is not an administrator is refused with exit status 5, and nothing is run",
          .timeLimit(.minutes(5)))
    func aNonAdministratorIsRefused() throws {
        try #require(getuid() == 0, "needs root, to run scenectl as nobody")
        let (daemon, events) = try Self.setUp()
        defer { events.close(); try? daemon.stop() }
        // nobody must reach the socket (the workspace is 0700), and may write the marker's directory.
        chmod(daemon.workspace.path, 0o755)
        let open = daemon.workspace.directory.file("open")
        mkdir(open, 0o777)
        chmod(open, 0o777)
        let marker = open + "/ran"
        let asNobody = ["/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--",
                        Binaries.scenectl, "--socket", daemon.socketPath]
        let refused = try run(asNobody + ["interrupt", "--", "touch", marker], environment: ["SCENED_SOCKET": nil])
        #expect(refused.status == 5, "\(refused.summary)")
        #expect(refused.stderr.hasPrefix("scenectl: ") && refused.stderr.contains("BeginInterruption"), "\(refused.summary)")
        #expect(access(marker, F_OK) != 0, "the command did not run")
        let end = try run(asNobody + ["end-interruption", "i1"], environment: ["SCENED_SOCKET": nil])
        #expect(end.status == 5, "\(end.summary)")
        #expect(try Self.interruptions(daemon).isEmpty)
        try events.expectQuiet()
    }

    @Test("SIGKILL of the scenectl holding an interruption ends it: its connection closes",
          .timeLimit(.minutes(5)))
    func killingTheHolderEndsIt() throws {
        let (daemon, events) = try Self.setUp()
        defer { events.close(); try? daemon.stop() }
        let pidFile = daemon.workspace.directory.file("command.pid")
        let holder = try ChildProcess([Binaries.scenectl, "--socket", daemon.socketPath, "interrupt", "--reason", "held", "--",
                                       "sh", "-c", "echo $$ > \(pidFile); exec sleep 60"],
                                      directory: daemon.workspace.path, label: "interrupt")
        #expect(try events.nextLine() == "willResignActive s1 foregroundInactive interruption")
        try Self.waitUntil("the command started") { !readTextFile(pidFile).isEmpty }
        let command = pid_t(readTextFile(pidFile).split(separator: "\n").first.flatMap { Int32($0) } ?? 0)
        defer { if command > 0 { kill(command, SIGKILL) } }

        let killed = monotonicSeconds()
        holder.killNow()
        #expect(try events.nextLine() == "didBecomeActive s1 foregroundActive interruption")
        let latency = monotonicSeconds() - killed
        #expect(try Self.interruptions(daemon).isEmpty)
        #expect(latency < 2, "ended when the connection closed, not at some timeout: \(latency) s")
        #expect(command > 0 && kill(command, 0) == 0, "the command goes on running")
    }

    @Test("end-interruption ends one that another scenectl holds; that one then exits 0 on SIGINT; a stopped daemon ends a hold with 3",
          .timeLimit(.minutes(2)))
    func endedFromElsewhereAndTheDaemonGone() throws {
        let (daemon, events) = try Self.setUp()
        defer { events.close(); try? daemon.stop() }
        let holder = try ChildProcess([Binaries.scenectl, "--socket", daemon.socketPath, "--no-legend", "interrupt"],
                                      directory: daemon.workspace.path, label: "holder", stdoutPipe: true)
        let token = try #require(holder.readLine(seconds: 10), "\(holder.stderr)")
        #expect(token.hasPrefix("i"))
        #expect(holder.readLine()?.hasSuffix("willResignActive \(Self.app) s1 foregroundInactive") == true)
        #expect(try events.nextLine() == "willResignActive s1 foregroundInactive interruption")

        let ended = try Self.scenectl(daemon, ["end-interruption", token])
        #expect(ended.status == 0 && ended.stdout.isEmpty, "\(ended.summary)")
        #expect(try events.nextLine() == "didBecomeActive s1 foregroundActive interruption")
        let again = try Self.scenectl(daemon, ["end-interruption", token])
        #expect(again.status == 4 && again.stderr.contains("no interruption \(token)"), "\(again.summary)")
        #expect(holder.isRunning, "the holder does not notice")
        holder.signal(SIGINT)
        #expect(holder.finish(within: 10) == 0, "\(holder.outcome): \(holder.stderr)")
        #expect(holder.stderr.isEmpty)

        // A second holder, and the daemon stops under it.
        let second = try ChildProcess([Binaries.scenectl, "--socket", daemon.socketPath, "interrupt"],
                                      directory: daemon.workspace.path, label: "second", stdoutPipe: true)
        #expect(second.readLine(seconds: 10)?.hasPrefix("i") == true, "\(second.stderr)")
        events.close()
        try daemon.stop()
        #expect(second.finish(within: 10) == 3, "\(second.outcome)")
        #expect(second.stderr == "scenectl: scened closed the connection; the interruption ended with it\n")
    }
}

extension InterruptCommandTests.Events {
    /// Fails if an event arrives within `milliseconds`.
    func expectQuiet(milliseconds: Int = 300) throws {
        if let extra = try next(seconds: Double(milliseconds) / 1000) { throw TestFailure("unexpected event \(extra)") }
    }
}
