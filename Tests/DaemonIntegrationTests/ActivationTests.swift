import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// sd_notify and socket activation beyond READY=1: the listening socket picked by
/// LISTEN_FDNAMES (as scened.socket names it, FileDescriptorName=varlink), and
/// EXTEND_TIMEOUT_USEC= while the store loads.
@Suite struct ActivationTests {
    static let activator = "/usr/bin/systemd-socket-activate"

    /// scened behind systemd-socket-activate on two sockets named `names`; the first
    /// connection to `trigger` starts it.
    func activate(names: String, trigger: String, in dir: TemporaryDirectory) throws -> ChildProcess {
        try #require(access(Self.activator, X_OK) == 0, "\(Self.activator) is missing (package systemd)")
        _ = try dir.write("scened.conf", Workspace.calmConfiguration + "\n")
        var env: [String: String?] = ["NOTIFY_SOCKET": nil]
        for name in ScenedLaunch.scrubbedVariables { env[name] = .some(nil) }
        let child = try ChildProcess([Self.activator, "-l", dir.file("metrics"), "-l", dir.file("varlink"), "--fdname=\(names)",
                                      Binaries.scened, "--state-dir", dir.file("state"), "--config", dir.file("scened.conf")],
                                     environment: env, directory: dir.path, label: "activated")
        // The activator listens first; the first client makes it exec scened. Its socket file
        // exists from bind(), before listen(): a client connecting in between is refused and
        // nothing is exec'd, so wait for the activator's own word that it listens.
        #expect(waitUntil(seconds: 10) { ["metrics", "varlink", trigger].allSatisfy { child.stderr.contains("Listening on \(dir.file($0))") } },
                "the activator did not listen; stderr:\n\(child.stderr)")
        return child
    }

    @Test(.timeLimit(.minutes(5))) func servesTheSocketNamedVarlinkAndClosesTheOthers() throws {
        let dir = TemporaryDirectory(prefix: "scened-activation")
        defer { dir.remove() }
        let child = try activate(names: "metrics:varlink", trigger: "varlink", in: dir)
        defer { child.killNow() }
        var status: JSONObject = [:]
        let served = waitUntil(seconds: 20) {
            guard let client = try? VarlinkClient(path: dir.file("varlink"), timeout: .seconds(10)),
                  let reply = try? client.call("io.scened.Manager.GetStatus") else { return false }
            status = reply["status"]?.objectValue ?? [:]
            return true
        }
        #expect(served, "no answer on the varlink socket; stderr:\n\(child.stderr)")
        #expect(status["socket"]?.stringValue == dir.file("varlink"), "\(status)")
        // The other socket was closed: nobody accepts on it any more.
        #expect(throws: (any Error).self) { try VarlinkClient(path: dir.file("metrics"), timeout: .seconds(5)).call("org.varlink.service.GetInfo") }
        #expect(child.stderr.contains("socket activation: closed fd 3 ('metrics'); scened serves the one named 'varlink'"), "\(child.stderr)")
        try ScenedLaunch.stop(child, timeout: 15)
    }

    @Test(.timeLimit(.minutes(5))) func refusesToStartWithoutASocketNamedVarlink() throws {
        let dir = TemporaryDirectory(prefix: "scened-activation")
        defer { dir.remove() }
        let child = try activate(names: "metrics:admin", trigger: "metrics", in: dir)
        defer { child.killNow() }
        _ = try? VarlinkClient(path: dir.file("metrics"), timeout: .seconds(5))
        #expect(child.finish(within: 20) == 1, "\(child.outcome); stderr:\n\(child.stderr)")
        #expect(child.stderr.contains("socket activation: no socket named 'varlink' among the 2 passed ('metrics', 'admin')"),
                "\(child.stderr)")
    }

    @Test(.timeLimit(.minutes(2))) func extendsTheStartTimeoutWhileTheStoreLoads() throws {
        let workspace = try Workspace()
        // Enough sessions for a load that outlasts a few 2 ms ticks.
        var daemon = try DaemonProcess(workspace)
        let client = try daemon.client()
        for index in 0..<3000 {
            _ = try client.call("io.scened.Manager.Connect", ["app": .string("com.example.app\(index % 20)"), "background": true])
        }
        client.close()
        try daemon.stop()

        daemon = try DaemonProcess(workspace, environment: ["SCENED_TEST_HOOKS": "1", "SCENED_TEST_LOAD_HEARTBEAT_MS": "2"])
        var messages = daemon.notify?.messages ?? []
        let ready = try #require(messages.firstIndex { $0.hasPrefix("READY=1") }, "\(messages)")
        let extensions = messages[..<ready].filter { $0.hasPrefix("EXTEND_TIMEOUT_USEC=") }
        #expect(!extensions.isEmpty, "no EXTEND_TIMEOUT_USEC= before READY=1: \(messages)")
        #expect(extensions.allSatisfy { $0.hasPrefix("EXTEND_TIMEOUT_USEC=6000\nSTATUS=Loading the session database (") }, "\(extensions)")
        try daemon.stop()
        messages = daemon.notify?.messages ?? []
        // The stop announces its own bound (StopTimeoutSec= and a slack); the load's stop at READY=1.
        let stopping = try #require(messages.firstIndex { $0.hasPrefix("STOPPING=1") }, "\(messages)")
        #expect(!messages[ready..<stopping].contains { $0.hasPrefix("EXTEND_TIMEOUT_USEC=") }, "an extension after READY=1: \(messages)")
        #expect(messages[stopping...].contains { $0 == "EXTEND_TIMEOUT_USEC=25000000" }, "the stop's extension: \(messages)")

        // Without the test hooks the interval is the production one (2 s), longer than this load.
        daemon = try DaemonProcess(workspace, environment: ["SCENED_TEST_LOAD_HEARTBEAT_MS": "2"])
        #expect(!(daemon.notify?.messages ?? []).contains { $0.hasPrefix("EXTEND_TIMEOUT_USEC=") })
        try daemon.stop()
    }
}
