import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The third-party Python client (PyPI `varlink`) against the real daemon. That client exits 0
/// on error replies and prints them on stderr as a Python dict, so stderr is always checked.
@Suite("Third-party Python varlink client")
struct PythonClientTests {
    static func python(_ arguments: [String], _ workspace: Workspace, timeout: Double = 30) throws -> Completed {
        try run(["/usr/bin/env", "python3"] + arguments, environment: ["PYTHONUNBUFFERED": "1"], in: workspace.path,
                timeout: timeout)
    }

    /// Fails (never skips) without the module: the project's dev-deps install it.
    static func requireModule(_ workspace: Workspace) throws {
        let probe = try python(["-c", "import varlink"], workspace)
        guard probe.status == 0 else {
            throw TestFailure("python3 cannot import the varlink module; run packaging/dev-deps (it pip-installs varlink)\n\(probe.summary)")
        }
    }

    /// `call -m` prints each reply as an indented JSON object; split them.
    static func replies(_ stdout: String) throws -> [JSONObject] {
        var out: [JSONObject] = []
        var current = ""
        for line in stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            current += line + "\n"
            if line == "}" {
                guard case .object(let o) = try JSONParser.parse(current) else { throw TestFailure("not an object: \(current)") }
                out.append(o)
                current = ""
            }
        }
        guard current.trimmingCharacters(in: " \n").isEmpty else { throw TestFailure("trailing output: \(current)") }
        return out
    }

    @Test("info, help (the IDL parses), call GetStatus, call Connect, call -m ListSessions and Monitor, error replies on stderr")
    func pythonClient() throws {
        let workspace = try Workspace()
        try Self.requireModule(workspace)
        let daemon = try DaemonProcess(workspace)
        let address = "unix:" + workspace.socketPath
        let manager = address + "/io.scened.Manager"

        let info = try Self.python(["-m", "varlink.cli", "info", address], workspace)
        #expect(info.status == 0, "\(info.summary)")
        #expect(info.stderr.isEmpty, "\(info.summary)")
        #expect(info.stdout.contains("Vendor: scened"), "\(info.summary)")
        #expect(info.stdout.contains("org.varlink.service") && info.stdout.contains("io.scened.Manager"), "\(info.summary)")

        // help fetches GetInterfaceDescription and parses the IDL before printing it.
        let help = try Self.python(["-m", "varlink.cli", "help", manager], workspace)
        #expect(help.status == 0, "\(help.summary)")
        #expect(help.stderr.isEmpty, "\(help.summary)")
        #expect(help.stdout.contains("interface io.scened.Manager"), "\(help.summary)")
        #expect(help.stdout.contains("method Connect("), "\(help.summary)")
        #expect(help.stdout.contains("error ProtocolViolation"), "\(help.summary)")

        let status = try Self.python(["-m", "varlink.cli", "call", manager + ".GetStatus", "{}"], workspace)
        #expect(status.status == 0 && status.stderr.isEmpty, "\(status.summary)")
        let statusReply = try Self.replies(status.stdout)
        #expect(statusReply.first?["status"]?["version"]?.stringValue == "0.1.0", "\(status.summary)")
        #expect(statusReply.first?["status"]?["pid"]?.intValue == Int64(daemon.pid), "\(status.summary)")

        // A change: Connect, with its events.
        let connect = try Self.python(["-m", "varlink.cli", "call", manager + ".Connect", #"{"app": "org.python.client"}"#], workspace)
        #expect(connect.status == 0 && connect.stderr.isEmpty, "\(connect.summary)")
        let connected = try Self.replies(connect.stdout).first
        #expect(connected?["session"]?["id"]?.stringValue == "s1", "\(connect.summary)")
        #expect(connected?["events"]?.arrayValue?.map { $0["event"]?.stringValue ?? "" }
                == ["didFinishLaunching", "configurationForConnecting", "willConnectTo", "willEnterForeground", "didBecomeActive"],
                "\(connect.summary)")
        _ = try daemon.call("Connect", ["app": "org.python.client", "background": true])

        // more/continues: ListSessions streams its batches; the last reply ends the call.
        let list = try Self.python(["-m", "varlink.cli", "call", "-m", manager + ".ListSessions", "{}"], workspace)
        #expect(list.status == 0 && list.stderr.isEmpty, "\(list.summary)")
        let listed = try Self.replies(list.stdout).flatMap { $0["sessions"]?.arrayValue ?? [] }.compactMap { $0["id"]?.stringValue }
        #expect(listed == ["s1", "s2"], "\(list.summary)")

        // Monitor with more, from the first event: runs until stopped.
        let monitor = try ChildProcess(["/usr/bin/env", "python3", "-m", "varlink.cli", "call", "-m", manager + ".Monitor", #"{"since": 1}"#],
                                       environment: ["PYTHONUNBUFFERED": "1"], directory: workspace.path, label: "py-monitor")
        let streamed = waitUntil(seconds: 20) {
            (try? Self.replies(monitor.stdout).filter { $0["event"] != nil }.count) ?? 0 >= 8
        }
        #expect(streamed, "python Monitor -m printed: \(monitor.stdout)\nstderr: \(monitor.stderr)")
        let events = (try? Self.replies(monitor.stdout)) ?? []
        // The event-less "subscribed" reply has empty parameters, which this client does not print.
        #expect(events.allSatisfy { $0["event"] != nil }, "\(monitor.stdout)")
        #expect(events.compactMap { $0["event"]?["seq"]?.intValue } == Array(1...8))
        monitor.killNow()

        // Error replies: exit 0, the error on stderr as a dict.
        let missing = try Self.python(["-m", "varlink.cli", "call", manager + ".GetSession", #"{"session": "s999"}"#], workspace)
        #expect(missing.status == 0, "\(missing.summary)")
        #expect(missing.stderr.contains("'error': 'io.scened.Manager.NoSuchSession'"), "\(missing.summary)")
        #expect(missing.stderr.contains("'session': 's999'"), "\(missing.summary)")
        #expect(missing.stdout.isEmpty, "\(missing.summary)")

        let transition = try Self.python(["-m", "varlink.cli", "call", manager + ".Launch", #"{"app": "org.python.client"}"#], workspace)
        #expect(transition.stderr.contains("'error': 'io.scened.Manager.InvalidTransition'"), "\(transition.summary)")
        #expect(transition.stderr.contains("'state': 'running'"), "\(transition.summary)")

        let streamOnly = try Self.python(["-m", "varlink.cli", "call", manager + ".Monitor", "{}"], workspace)
        #expect(streamOnly.stderr.contains("org.varlink.service.ExpectedMore"), "\(streamOnly.summary)")

        try daemon.assertServing("after the python client")
        try daemon.stop()
    }
}
