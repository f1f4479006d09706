import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// `scenectl monitor --json` into a pipe: one JSON object per line, as each event happens,
/// identical to what the Monitor call streams.
@Suite("scenectl monitor --json")
struct MonitorCommandTests {
    @Test("one JSON object per line with seq, event, app, session, state; exit 0 on SIGINT, 3 when scened goes away")
    func monitorJSONPiped() throws {
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        let reference = try EventMonitor(daemon)
        try Binaries.require(Binaries.scenectl)
        let ctl = SceneCtlDriver(socketPath: workspace.socketPath, directory: workspace.path)

        func startMonitor(_ label: String) throws -> ChildProcess {
            let child = try ChildProcess([Binaries.scenectl, "--socket", workspace.socketPath, "--json", "monitor"],
                                         environment: ["SCENED_SOCKET": nil], directory: workspace.path, label: label,
                                         stdoutPipe: true)
            return child
        }
        let piped = try startMonitor("monitor-1")
        let second = try startMonitor("monitor-2")
        // Subscribed once the daemon counts both (plus the reference monitor and this query).
        let subscribed = try waitUntil(seconds: 10) {
            let status = try daemon.call("GetStatus")
            return (status["status"]?["connections"]?.intValue ?? 0) >= 4
        }
        guard subscribed else { throw TestFailure("scenectl monitor did not subscribe; stderr:\n\(piped.stderr)") }

        // Each command's events must show up in the pipe while scenectl keeps running.
        var expectedCount = 0
        let commands: [(String, () throws -> JSONObject)] = [
            ("connect", { try ctl.connect("com.example.mail") }),
            ("deactivate", { try ctl.deactivate("s1") }),
            ("background", { try ctl.background("s1") }),
            ("connect in background", { try ctl.connect("com.example.maps", background: true) }),
            ("discard", { try ctl.discard("s1") }),
        ]
        for (name, command) in commands {
            let reply = try command()
            expectedCount += reply["events"]?.arrayValue?.count ?? 0
            let arrived = waitUntil(seconds: 10) {
                piped.readPipe(waitingMilliseconds: 20)
                return piped.pipedLines.count >= expectedCount
            }
            guard arrived else {
                throw TestFailure("after \(name): \(piped.pipedLines.count) of \(expectedCount) lines in the pipe (\(piped.outcome)); stderr:\n\(piped.stderr)")
            }
            #expect(piped.isRunning)
        }
        var streamed: [ObservedEvent] = []
        for _ in 0..<expectedCount {
            guard let e = try reference.next(timeout: 10) else { throw TestFailure("the reference Monitor missed events") }
            streamed.append(e)
        }
        piped.readPipe(waitingMilliseconds: 200)
        let lines = piped.pipedLines
        #expect(lines.count == expectedCount, "extra lines: \(lines.dropFirst(expectedCount))")
        for (line, event) in zip(lines, streamed) {
            guard case .object(let object) = try JSONParser.parse(line) else {
                Issue.record("not a JSON object: \(line)")
                continue
            }
            #expect(object["seq"]?.intValue.map(UInt64.init) == event.seq)
            #expect(object["event"]?.stringValue == event.event)
            #expect(object["app"]?.stringValue == event.app)
            #expect(object["session"]?.stringValue == event.session)
            #expect(object["state"]?.stringValue == event.state)
            #expect(object == event.object, "scenectl must print the daemon's event object as it is")
            #expect(!line.contains("\n") && line.first == "{")
        }
        let sessions = lines.compactMap { (try? JSONParser.parse($0))?["session"]?.stringValue }
        #expect(sessions.contains("s1") && sessions.contains("s2"))

        // Interrupted: exit 0.
        piped.signal(SIGINT)
        #expect(piped.wait(seconds: 10), "scenectl monitor did not stop on SIGINT")
        #expect(piped.exitStatus == 0, "scenectl monitor on SIGINT: \(piped.outcome); stderr:\n\(piped.stderr)")

        // The daemon goes away: the other monitor ends with 3.
        reference.close()
        try daemon.stop()
        #expect(second.wait(seconds: 10), "scenectl monitor kept running after scened stopped")
        #expect(second.exitStatus == 3, "scenectl monitor when scened went away: \(second.outcome); stderr:\n\(second.stderr)")
    }

    @Test("scenectl's exit statuses against the real daemon: 4 not found, 1 refused, 2 usage, 3 unreachable")
    func exitStatuses() throws {
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        try Binaries.require(Binaries.scenectl)
        func ctl(_ arguments: [String]) throws -> Completed {
            try run([Binaries.scenectl, "--socket", workspace.socketPath] + arguments, environment: ["SCENED_SOCKET": nil],
                    in: workspace.path)
        }
        let connected = try ctl(["connect", "com.example.mail", "--background"])
        #expect(connected.status == 0 && connected.stdout == "s1\n", "\(connected.summary)")
        let missing = try ctl(["activate", "s99"])
        #expect(missing.status == 4 && missing.stderr.contains("s99"), "\(missing.summary)")
        // A monitor of a session that never existed is a typo, not a stream that never speaks.
        let never = try ctl(["monitor", "--session", "s99"])
        #expect(never.status == 4 && never.stderr.contains("s99") && never.stdout.isEmpty, "\(never.summary)")
        let refused = try ctl(["deactivate", "s1"])
        #expect(refused.status == 1 && !refused.stderr.isEmpty, "\(refused.summary)")
        let usage = try ctl(["activate", "not-a-session"])
        #expect(usage.status == 2, "\(usage.summary)")
        try daemon.stop()
        let gone = try ctl(["status"])
        #expect(gone.status == 3, "\(gone.summary)")
    }
}
