import Glibc
import ScenedTestSupport

/// A real cockpit-ws on the loopback with a local session: the bridge runs as the user that
/// started cockpit-ws (root, or a test user through setpriv) without a login, and finds the page
/// in its XDG_DATA_HOME. One browser session per server: a local session serves its first
/// browser only, so each browser phase gets a server of its own.
final class CockpitServer {
    let port: UInt16
    let child: ChildProcess
    let socketPath: String

    /// - Parameters:
    ///   - user: nil for the test runner's own user (root), else the name of the user the
    ///     server and its bridge run as.
    ///   - home: the bridge's HOME and XDG_DATA_HOME (the page is installed there).
    init(user: String?, home: String, scenedSocket: String, directory: String, label: String) throws {
        socketPath = scenedSocket
        var lastError = ""
        // The port is free when chosen; another program could take it before cockpit-ws does.
        for attempt in 1...3 {
            let port = try freeLoopbackPort()
            let server = [CockpitPaths.cockpitWS, "--no-tls", "--address", "127.0.0.1", "--port", String(port),
                          "--local-session=" + CockpitPaths.bridge]
            let environment = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home, "XDG_DATA_HOME=" + home, "LANG=C.UTF-8"]
            var command = ["/usr/bin/env", "-i"] + environment + server
            if let user {
                command = ["/usr/bin/setpriv", "--reuid", user, "--regid", user, "--init-groups", "--"] + command
            }
            // A session of its own (setsid execs in place: the child leads no group yet), so
            // that what the bridge starts and leaves behind (a session bus, an ssh-agent) can be
            // found and ended with it.
            command = ["/usr/bin/setsid"] + command
            let child = try ChildProcess(command, directory: directory, label: "\(label)-\(attempt)")
            if waitUntil(seconds: 15, { loopbackPortAccepts(port) || !child.isRunning }), child.isRunning {
                self.port = port
                self.child = child
                return
            }
            child.killNow()
            lastError = "cockpit-ws \(child.outcome): \(child.stderr)"
        }
        throw TestFailure("cockpit-ws did not listen: \(lastError)")
    }

    /// The page, told which scened socket to use.
    var pageURL: String {
        "http://127.0.0.1:\(port)/cockpit/@localhost/scened/index.html?socket=" + socketPath
    }

    /// The page inside Cockpit's shell (its menu, the page in a frame), told the socket by
    /// the shell's address.
    var shellURL: String {
        "http://127.0.0.1:\(port)/scened#/?socket=" + socketPath
    }

    /// Ends cockpit-ws, then everything left in its session: the bridge and what the bridge
    /// started (they outlive cockpit-ws, reparented to init, but keep its session id).
    func stop() {
        child.signal(SIGTERM)
        if !child.wait(seconds: 5) { child.killNow() }
        endSession(child.pid)
    }

    deinit { stop() }
}

/// The browser script, one phase per run: its "ok:" lines are the checks it made.
struct BrowserPhase {
    let phase: String
    var url: String
    var apps: [String] = []
    var sessions: [String] = []
    var level = "normal"
    var target = ""
    var daemonPid: pid_t = 0
    var marker = ""
    let screenshots: String

    /// In a session of its own: chromedriver and Chromium are ended with it whatever happens.
    var arguments: [String] {
        ["/usr/bin/setsid", CockpitPaths.python, CockpitPaths.script, phase, "--url", url, "--apps", apps.joined(separator: ","),
         "--sessions", sessions.joined(separator: ","), "--level", level, "--target", target,
         "--daemon-pid", String(daemonPid), "--marker", marker, "--screenshots", screenshots]
    }

    /// Runs the phase to its end (bounded); fails with everything it printed unless it passed.
    func run(in directory: String, timeout: Double = 120) throws -> PhaseOutput {
        let child = try ChildProcess(arguments, environment: ["PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"], directory: directory, label: "browser-\(phase)")
        let finished = child.wait(seconds: timeout)
        if !finished { child.killNow() }
        endSession(child.pid)
        let result = PhaseOutput(stdout: child.stdout, stderr: child.stderr, outcome: child.outcome)
        guard finished, child.status == 0, result.stdout.contains("phase \(phase): passed") else {
            throw TestFailure("browser phase \(phase) failed\(finished ? "" : " (not within \(Int(timeout)) s)")\n\(result.summary)")
        }
        return result
    }

    /// Starts the phase with its stdout on a pipe, for the phases that wait for the test.
    func start(in directory: String) throws -> ChildProcess {
        try ChildProcess(arguments, environment: ["PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"], directory: directory, label: "browser-\(phase)",
                         stdoutPipe: true)
    }
}

/// What a browser phase printed, and how it ended.
struct PhaseOutput {
    let stdout: String
    let stderr: String
    let outcome: String

    var summary: String { "browser \(outcome)\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)" }
}
