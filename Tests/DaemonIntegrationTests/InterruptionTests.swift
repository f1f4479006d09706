import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// io.scened.Manager's BeginInterruption and EndInterruption against a real daemon (R28): the
/// active scenes resign and stay in the foreground, activations stop at foregroundInactive,
/// interruptions nest and overlap and end with their connection, and at the end exactly the
/// held scenes come back with didBecomeActive only.
@Suite("Interruptions held by a shell", .serialized)
struct InterruptionTests {
    static let configuration = """
        [Lifecycle]
        SuspendDelaySec=60s
        [System]
        FollowLogin=no
        [Store]
        Durability=normal
        """

    static func state(_ daemon: DaemonProcess, _ session: String) throws -> String {
        try daemon.call("GetSession", ["session": .string(session)])["session"]?["state"]?.stringValue ?? "?"
    }

    static func interruptions(_ daemon: DaemonProcess) throws -> [JSONValue] {
        try daemon.call("GetStatus")["status"]?["system"]?["interruptions"]?.arrayValue ?? []
    }

    /// The (event, session) pairs of a reply's events, and their causes.
    static func summary(_ reply: JSONObject) -> [String] {
        (reply["events"]?.arrayValue ?? []).map {
            "\($0["event"]?.stringValue ?? "?") \($0["session"]?.stringValue ?? "-") \($0["cause"]?.stringValue ?? "?")"
        }
    }

    @Test("Begin resigns the active scenes; activations stay inactive; overlapping ones end with the last; exactly the held scenes come back",
          .timeLimit(.minutes(2)))
    func nestedAndOverlapping() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let a = try daemon.call("Connect", ["app": "com.example.a"]).sessionID
        let b = try daemon.call("Connect", ["app": "com.example.b"]).sessionID
        let c = try daemon.call("Connect", ["app": "com.example.c", "background": true]).sessionID
        let d = try daemon.call("Connect", ["app": "com.example.d"]).sessionID
        try daemon.call("Deactivate", ["session": .string(d)])

        let first = try daemon.client()
        let begun = try first.call("io.scened.Manager.BeginInterruption", ["reason": "incoming call"])
        let token1 = try #require(begun["token"]?.stringValue)
        #expect(Set(Self.summary(begun)) == ["willResignActive \(a) interruption", "willResignActive \(b) interruption"],
                "\(Self.summary(begun))")
        #expect(try [a, b, d].map { try Self.state(daemon, $0) } == Array(repeating: "foregroundInactive", count: 3))

        // An activation under the interruption stops at foregroundInactive.
        let activated = try daemon.call("Activate", ["session": .string(c)])
        #expect(Self.summary(activated) == ["willEnterForeground \(c) request"], "\(Self.summary(activated))")
        #expect(try Self.state(daemon, c) == "foregroundInactive")

        // A second, overlapping interruption from another shell: nothing moves either way.
        let second = try daemon.client()
        let nested = try second.call("io.scened.Manager.BeginInterruption", ["reason": "app switcher"])
        let token2 = try #require(nested["token"]?.stringValue)
        #expect(Self.summary(nested).isEmpty)
        #expect(try Self.interruptions(daemon).count == 2)
        let ended1 = try second.call("io.scened.Manager.EndInterruption", ["token": .string(token1)])
        #expect(Self.summary(ended1).isEmpty, "still interrupted: \(Self.summary(ended1))")
        #expect(try Self.state(daemon, a) == "foregroundInactive")

        // The last one ends: didBecomeActive only, for a, b and the activated c; not for d.
        let ended2 = try first.call("io.scened.Manager.EndInterruption", ["token": .string(token2)])
        #expect(Set(Self.summary(ended2)) == ["didBecomeActive \(a) interruption", "didBecomeActive \(b) interruption",
                                               "didBecomeActive \(c) interruption"], "\(Self.summary(ended2))")
        #expect(try Self.state(daemon, d) == "foregroundInactive", "a scene that was inactive stays so")
        #expect(try Self.interruptions(daemon).isEmpty)

        // Ending it again, or a token never given: NoSuchInterruption, and the daemon serves on.
        for token in [token2, "nonsense"] {
            do {
                _ = try first.call("io.scened.Manager.EndInterruption", ["token": .string(token)])
                Issue.record("EndInterruption \(token) succeeded")
            } catch let error as VarlinkError {
                #expect(error.name == "io.scened.Manager.NoSuchInterruption", "\(error.name)")
                #expect(error.parameters["token"]?.stringValue == token)
            }
        }
        for reason in ["", String(repeating: "x", count: 300)] {
            #expect(throws: VarlinkError.self) { try first.call("io.scened.Manager.BeginInterruption", ["reason": .string(reason)]) }
        }
        try daemon.assertServing("after interruptions")
    }

    @Test("a connection that closes while holding an interruption ends it: the scenes come back", .timeLimit(.minutes(2)))
    func closingEnds() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let a = try daemon.call("Connect", ["app": "com.example.a"]).sessionID
        let shell = try RawConnection(path: daemon.socketPath)
        try shell.sendCall("io.scened.Manager.BeginInterruption", ["reason": "notification centre"])
        #expect(try shell.receiveObject().errorName == nil)
        #expect(try Self.state(daemon, a) == "foregroundInactive")
        let since = try StopSupport.nextSeq(daemon)
        shell.close()
        try StopSupport.waitFor("the scene back", seconds: 5) { try Self.state(daemon, a) == "foregroundActive" }
        let events = try StopSupport.events(daemon, since: since)
        #expect(events.map(\.event) == ["didBecomeActive"], "\(events)")
        #expect(try Self.interruptions(daemon).isEmpty)
    }

    @Test("a user who is not an administrator is refused with PermissionDenied", .timeLimit(.minutes(2)))
    func notAnAdministrator() throws {
        guard geteuid() == 0 else {
            // Only root can run the client as another user; elsewhere the case is not shown.
            print("not root: the non-administrator case needs another uid")
            return
        }
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        chmod(workspace.path, 0o755)
        let script = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(json.dumps({"method": "io.scened.Manager.BeginInterruption", "parameters": {"reason": "x"}}).encode() + b"\\0")
            buf = b""
            while b"\\0" not in buf:
                d = s.recv(65536)
                if not d: break
                buf += d
            print(buf.split(b"\\0")[0].decode())
            """
        let result = try run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              "/usr/bin/python3", "-c", script, daemon.socketPath], in: workspace.path)
        #expect(result.stdout.contains("org.varlink.service.PermissionDenied"), "\(result.summary)")
        #expect(try Self.interruptions(daemon).isEmpty)
    }

    /// GetStatus calls answered per second on one connection over `seconds`.
    static func callRate(_ client: VarlinkClient, seconds: Double, while running: () -> Bool = { true }) throws -> Double {
        let start = monotonicSeconds()
        var calls = 0
        while monotonicSeconds() - start < seconds && running() {
            _ = try client.call("io.scened.Manager.GetStatus")
            calls += 1
        }
        return Double(calls) / (monotonicSeconds() - start)
    }

    @Test("a shell that begins 10,000 interruptions: 64 held, the rest LimitExceeded; a bystander is served; memory bounded",
          .timeLimit(.minutes(3)))
    func tenThousandBegins() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace, environment: ScenedLaunch.measuredMemoryEnvironment)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let a = try daemon.call("Connect", ["app": "com.example.a"]).sessionID
        let bystander = try daemon.client(timeout: .seconds(20))
        let alone = try Self.callRate(bystander, seconds: 1)
        let rssBefore = ThousandAppsTests.residentKiB(daemon, "VmRSS")

        let flooder = try RawConnection(path: daemon.socketPath)
        let total = 10_000, batch = 500
        let done = Shared(false)
        let probe = RateProbe(path: daemon.socketPath, running: { !done.value })
        let start = monotonicSeconds()
        var errors: [String: Int] = [:]
        // Pipelined in batches, each read back before the next, so that neither side's socket
        // buffer fills with what the other does not read.
        for _ in 0..<(total / batch) {
            for _ in 0..<batch { try flooder.sendCall("io.scened.Manager.BeginInterruption", ["reason": "flood"]) }
            for _ in 0..<batch {
                let reply = try flooder.receiveObject(timeout: 60)
                errors[reply.errorName ?? "none", default: 0] += 1
                if let limit = reply.parametersObject["limit"]?.stringValue { #expect(limit == "MaxInterruptionsPerConnection") }
            }
        }
        done.update { $0 = true }
        let during = probe.finish()
        let floodSeconds = monotonicSeconds() - start
        let rssAfter = ThousandAppsTests.residentKiB(daemon, "VmRSS")
        print("10,000 BeginInterruption in \(Int(floodSeconds * 1000)) ms: \(errors); bystander \(Int(alone))/s alone, \(Int(during))/s during (ratio \(Int(during / alone * 100)) %); RSS \(rssBefore) → \(rssAfter) KiB")
        #expect(errors == ["none": 64, "io.scened.Manager.LimitExceeded": total - 64], "\(errors)")
        #expect(try Self.interruptions(daemon).count == 64)
        #expect(during >= alone * 0.05, "the bystander kept \(during)/s of \(alone)/s")
        #expect(rssAfter - rssBefore < 16 * 1024, "RSS grew \(rssAfter - rssBefore) KiB")
        // Closing the flooder ends its 64: the scene comes back.
        flooder.close()
        try StopSupport.waitFor("the scene back", seconds: 5) { try Self.state(daemon, a) == "foregroundActive" }
        #expect(try Self.interruptions(daemon).isEmpty)
    }

    @Test("500 connections each holding an interruption all close at once: all end and the scenes come back", .timeLimit(.minutes(3)))
    func fiveHundredClose() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let sessions = try (0..<5).map { try daemon.call("Connect", ["app": .string("com.example.s\($0)")]).sessionID }
        var shells: [RawConnection] = []
        for _ in 0..<500 {
            let shell = try RawConnection(path: daemon.socketPath)
            try shell.sendCall("io.scened.Manager.BeginInterruption", ["reason": "overlay"])
            shells.append(shell)
        }
        for shell in shells { #expect(try shell.receiveObject().errorName == nil) }
        #expect(try Self.interruptions(daemon).count == 500)
        #expect(try sessions.allSatisfy { try Self.state(daemon, $0) == "foregroundInactive" })
        let since = try StopSupport.nextSeq(daemon)
        let start = monotonicSeconds()
        for shell in shells { shell.close() }
        try StopSupport.waitFor("all interruptions ended", seconds: 10) { try Self.interruptions(daemon).isEmpty }
        try StopSupport.waitFor("the scenes back", seconds: 10) {
            try sessions.allSatisfy { try Self.state(daemon, $0) == "foregroundActive" }
        }
        print("500 holding connections closed to every scene back: \(Int((monotonicSeconds() - start) * 1000)) ms")
        let events = try StopSupport.events(daemon, since: since)
        #expect(events.map(\.event) == Array(repeating: "didBecomeActive", count: 5), "once each: \(events)")
        try daemon.assertServing("after 500 shells closed")
    }
}

/// A bystander on its own thread calling GetStatus as fast as it is answered while `running`.
final class RateProbe: @unchecked Sendable {
    private let result = Shared(0.0)
    private var thread: TestThread?

    init(path: String, running: @escaping @Sendable () -> Bool) {
        let result = self.result
        thread = TestThread {
            guard let client = try? VarlinkClient(path: path, timeout: .seconds(20)) else { return }
            let rate = (try? InterruptionTests.callRate(client, seconds: 60, while: running)) ?? 0
            result.update { $0 = rate }
        }
    }

    func finish() -> Double {
        thread?.join()
        return result.value
    }
}
