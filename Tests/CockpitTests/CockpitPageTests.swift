import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// scened's Cockpit page (cockpit/scened) in a real browser: headless Chromium, driven by
/// Tests/Cockpit/cockpit_page_test.py, against a real cockpit-ws with a local session and a real
/// scened. The script checks what the page shows; this suite sets the daemon up and checks, over
/// Varlink, that the page's actions changed it (or, refused, did not).
@Suite("Cockpit page in a browser", .serialized)
struct CockpitPageTests {
    static let mail = "com.example.mail"
    static let maps = "com.example.maps"
    static let notes = "com.example.notes"
    static let mebibyte: Int64 = 1024 * 1024

    /// A budget of 1 GiB, so that the sessions' footprints are a visible share of it.
    static let configuration = Workspace.calmConfiguration + """

    [Pressure]
    MemoryBudget=1G
    """

    /// The daemon, reachable by every user (the test user's bridge connects to its socket), with
    /// three apps' sessions: s1 mail (foreground), s2 maps (background), s3 notes (foreground).
    final class Setup {
        let workspace: Workspace
        var daemon: DaemonProcess
        let scratch = TemporaryDirectory(prefix: "scened-cockpit")
        let screenshots: String

        init() throws {
            try CockpitPaths.requireTools()
            workspace = try Workspace(configuration: CockpitPageTests.configuration)
            chmod(workspace.path, 0o755)
            chmod(scratch.path, 0o755)
            daemon = try DaemonProcess(workspace)
            screenshots = try Self.screenshotDirectory()
            print("Cockpit page screenshots: \(screenshots)")
            for (app, background, footprint) in [(mail, false, 200), (maps, true, 250), (notes, false, 150)] {
                _ = try daemon.call("Connect", ["app": .string(app), "background": .bool(background),
                                                "footprint": .int(Int64(footprint) * mebibyte)])
            }
        }

        /// Kept after the test (the README's pictures come from there), under /tmp.
        static func screenshotDirectory() throws -> String {
            var template = Array("/tmp/scened-cockpit-screenshots-XXXXXX".utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw TestFailure("mkdtemp: \(errnoText())")
            }
            return String(cString: made)
        }

        /// A cockpit-ws of its own for one browser phase, as root or as `account`.
        func server(as account: TestAccount?, label: String) throws -> CockpitServer {
            let home = scratch.file("home-\(label)")
            try installPage(into: home)
            if let account { _ = try run(["/bin/chown", "-R", account.name, home]) }
            return try CockpitServer(user: account?.name, home: home, scenedSocket: workspace.socketPath,
                                     directory: scratch.path, label: "cockpit-ws-\(label)")
        }

        func phase(_ name: String, _ server: CockpitServer) -> BrowserPhase {
            var phase = BrowserPhase(phase: name, url: server.pageURL, screenshots: screenshots)
            phase.apps = [mail, maps, notes]
            phase.sessions = ["s1", "s2", "s3"]
            return phase
        }

        func session(_ id: String) throws -> JSONValue? {
            try daemon.call("GetSession", ["session": .string(id)])["session"]
        }

        func pressure() throws -> JSONValue? {
            try daemon.call("GetPressure")["pressure"]
        }
    }

    @Test("shows the daemon's apps, sessions and level; Background and Set pressure change it; a non-administrator is refused",
          .timeLimit(.minutes(5)))
    func showsActsAndRefuses() throws {
        try #require(getuid() == 0, "needs root: useradd, setpriv")
        let setup = try Setup()
        let started = monotonicSeconds()

        // As root, an administrator of scened: the page shows the state; Background changes it.
        var server = try setup.server(as: nil, label: "show")
        var phase = setup.phase("show", server)
        phase.target = "s1"
        let shown = try phase.run(in: setup.scratch.path)
        server.stop()
        #expect(shown.stdout.contains("ok: session s1 reads background"), "\(shown.summary)")
        #expect(try setup.session("s1")?["state"]?.stringValue == "background", "scened did not take s1 to the background")

        // In Cockpit's shell: listed in the menu, the socket passed in the shell's address.
        server = try setup.server(as: nil, label: "shell")
        phase = setup.phase("shell", server)
        phase.url = server.shellURL
        _ = try phase.run(in: setup.scratch.path)
        server.stop()

        // As a user who is not an administrator: read-only parts show, actions are refused.
        let account = try TestAccount()
        defer { account.remove() }
        server = try setup.server(as: account, label: "refused")
        phase = setup.phase("refused", server)
        phase.target = "s3"
        let refused = try phase.run(in: setup.scratch.path)
        server.stop()
        #expect(refused.stdout.contains("ok: Disconnect s3 shows PermissionDenied"), "\(refused.summary)")
        #expect(try setup.session("s3")?["condition"]?.stringValue == "live", "a refused Disconnect changed s3")
        #expect(setup.daemon.stderr.contains("Refused io.scened.Manager.Disconnect to uid \(account.uid) "), "scened logged no refusal for the page's user")

        // Usage rises (the chart's line), then the page forces critical: an episode begins.
        for footprint in [300, 400] as [Int64] {
            sleepMilliseconds(1500)
            _ = try setup.daemon.call("SetFootprint", ["session": "s3", "footprint": .int(footprint * Self.mebibyte)])
        }
        server = try setup.server(as: nil, label: "pressure")
        phase = setup.phase("pressure", server)
        let pressured = try phase.run(in: setup.scratch.path)
        server.stop()
        #expect(pressured.stdout.contains("ok: the chart shades the episode"), "\(pressured.summary)")
        let pressure = try setup.pressure()
        #expect(pressure?["override"]?.stringValue == "critical" && pressure?["level"]?.stringValue == "critical",
                "scened's pressure after Set: \(String(describing: pressure))")
        #expect(pressure?["episode"]?["number"]?.intValue == 1, "no episode: \(String(describing: pressure))")
        print("figure: the four browser phases took \(Int(monotonicSeconds() - started)) s")
        try setup.daemon.assertServing("after the page's phases")
    }

    @Test("the daemon killed under the open page, then back; a flood of events; more sessions than it lists",
          .timeLimit(.minutes(5)))
    func daemonGoneAndFlood() throws {
        try #require(getuid() == 0, "needs root: the browser kills the daemon by pid")
        let setup = try Setup()

        // Killed: the page says so; restarted with a new session: the page and its monitor resume.
        var server = try setup.server(as: nil, label: "vanish")
        var phase = setup.phase("vanish", server)
        phase.daemonPid = setup.daemon.pid
        phase.marker = setup.scratch.file("restarted")
        var browser = try phase.start(in: setup.scratch.path)
        defer { endSession(browser.pid) }
        guard waitForLine(browser, "down", seconds: 60) else {
            throw TestFailure("the page did not see the daemon go: \(browser.pipedLines)\n\(browser.stderr)")
        }
        #expect(setup.daemon.child.wait(seconds: 10), "scened still runs after SIGKILL")
        setup.daemon = try DaemonProcess(setup.workspace)
        let reply = try setup.daemon.call("Connect", ["app": .string(CockpitPageTests.notes), "background": true])
        let session = try #require(reply["session"]?["id"]?.stringValue)
        try writeTextFile(phase.marker, session + "\n")
        try expectPassed(browser, "vanish")
        server.stop()

        // A flood of events while the page is open: it keeps the last 100 and reaches the newest.
        server = try setup.server(as: nil, label: "flood")
        phase = setup.phase("flood", server)
        phase.marker = setup.scratch.file("flooded")
        endSession(browser.pid)
        browser = try phase.start(in: setup.scratch.path)
        guard waitForLine(browser, "loaded", seconds: 60) else {
            throw TestFailure("the flood phase did not load: \(browser.pipedLines)\n\(browser.stderr)")
        }
        let client = try setup.daemon.client()
        let floodStart = monotonicSeconds()
        for i in 0..<400 {
            let connected = try client.call("io.scened.Manager.Connect", ["app": .string("org.example.flood\(i % 20)"), "background": true])
            _ = try client.call("io.scened.Manager.Discard", ["session": connected["session"]?["id"] ?? .null])
        }
        let last = try #require(try setup.daemon.call("GetStatus")["status"]?["nextSeq"]?.intValue) - 1
        print("figure: flood up to event \(last) in \(Int((monotonicSeconds() - floodStart) * 1000)) ms")
        try writeTextFile(phase.marker, "\(last)\n")
        guard waitForLine(browser, "events done", seconds: 60) else {
            throw TestFailure("the flood phase did not reach the sessions: \(browser.pipedLines)\n\(browser.stderr)")
        }
        for i in 0..<600 {
            _ = try client.call("io.scened.Manager.Connect", ["app": .string("org.example.many\(i % 6)"), "background": true])
        }
        try writeTextFile(phase.marker + ".sessions", "603\n")
        try expectPassed(browser, "flood")
        try setup.daemon.assertServing("after the flood")
    }

    /// Reads the phase's lines until `line` (true) or its end or the time limit (false).
    func waitForLine(_ browser: ChildProcess, _ line: String, seconds: Double) -> Bool {
        let deadline = Deadline(seconds: seconds)
        while !deadline.hasPassed {
            if let next = browser.readLine(seconds: 1) {
                if next == line { return true }
            } else if !browser.isRunning {
                return false
            }
        }
        return false
    }

    /// Waits for a piped browser phase to end and fails unless it passed.
    func expectPassed(_ browser: ChildProcess, _ phase: String) throws {
        let ended = waitUntil(seconds: 90) {
            browser.readPipe(waitingMilliseconds: 200)
            return !browser.isRunning
        }
        // The rest of its output (bounded: the browser's own children may hold the pipe open).
        for _ in 0..<20 { browser.readPipe(waitingMilliseconds: 50) }
        let output = browser.pipedLines.joined(separator: "\n")
        if !ended { browser.killNow() }
        for line in browser.pipedLines where line.hasPrefix("figure:") { print(line) }
        guard ended, browser.status == 0, output.contains("phase \(phase): passed") else {
            throw TestFailure("browser phase \(phase) failed (\(browser.outcome))\n\(output)\n\(browser.stderr)")
        }
    }
}
