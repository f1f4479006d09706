import Foundation
import Varlink

/// `scene-notes --demo`: a private scened in a temporary directory, this program started as the
/// app, and the story told through io.scened.Manager: to the background (the app saves), a
/// reclaim-style disconnect, reactivation (restored), kill -9 of the app, a new process
/// (its archived session reconnects with the saved state), termination.
struct Demo {
    let app: String

    func step(_ text: String) {
        out("\n==> \(text)")
    }

    func run() -> Int32 {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let scened = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("scened").path
        guard FileManager.default.isExecutableFile(atPath: scened) else {
            out("scene-notes --demo needs scened next to it (\(scened)): run `swift build` first")
            return 1
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scene-notes-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/io.scened.Manager"

        step("starting a private scened on \(socket)")
        guard let daemon = startDaemon(scened, socket: socket, directory: directory) else { return 1 }
        defer {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        guard wait("scened to answer", { (try? VarlinkClient(path: socket, timeout: .seconds(2)).call("org.varlink.service.GetInfo")) != nil }) else {
            return 1
        }
        return Stage(demo: self, me: me, socket: socket).tell()
    }

    /// scened on `socket`, its state and log in `directory`, with a configuration of its own.
    private func startDaemon(_ scened: String, socket: String, directory: String) -> Process? {
        let config = directory + "/scened.conf"
        try? "[Lifecycle]\nSuspendDelaySec=60s\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: scened)
        daemon.arguments = ["--socket", socket, "--state-dir", directory + "/state", "--config", config]
        var environment = ProcessInfo.processInfo.environment
        for name in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC", "SCENED_SOCKET"] { environment[name] = nil }
        daemon.environment = environment
        daemon.standardError = FileHandle(forWritingAtPath: directory + "/scened.log")
        do { try daemon.run() } catch {
            out("cannot start scened: \(error)")
            return nil
        }
        return daemon
    }

    /// The story, told to the running daemon: this program as the app, and the Manager's calls.
    private struct Stage {
        let demo: Demo
        let me: String
        let socket: String
        var app: String { demo.app }

        func tell() -> Int32 {
            demo.step("starting the app (\(me) --app \(app))")
            guard var process = startApp() else { return 1 }
            guard demo.wait("the app's scene to become active", { sessionState()?.state == "foregroundActive" }),
                  let session = sessionState()?.id else { return 1 }
            pause()

            demo.step("the user goes home: \(session) to the background (the app saves its state)")
            _ = manager("Background", ["session": .string(session)])
            pause()
            demo.step("memory pressure: \(session) is disconnected (reclaim), the session archived")
            _ = manager("Disconnect", ["session": .string(session)])
            pause()
            demo.step("the user opens the app again: \(session) reconnects with the saved state")
            _ = manager("Activate", ["session": .string(session)])
            pause()
            demo.step("to the background again (saves the new count)")
            _ = manager("Background", ["session": .string(session)])
            pause()

            demo.step("kill -9 of the app (pid \(process.processIdentifier))")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            guard demo.wait("scened to see the process gone", {
                manager("GetApp", ["app": .string(app)])?["app"]?["process"]?.stringValue == "notRunning"
            }) else { return 1 }
            demo.step("starting the app again: its archived session reconnects with the state it saved")
            guard let again = startApp() else { return 1 }
            process = again
            guard demo.wait("the scene to be back", { sessionState()?.state == "foregroundActive" }) else { return 1 }
            pause()

            demo.step("terminating the app (applicationWillTerminate, answered; then the process exits)")
            _ = manager("Terminate", ["app": .string(app)])
            process.waitUntilExit()
            demo.step("done")
            return 0
        }

        func startApp() -> Process? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: me)
            process.arguments = ["--app", app, "--socket", socket]
            // Its lines interleave with the demo's: keep them naming the process, piped or not.
            var environment = ProcessInfo.processInfo.environment
            environment["SCENE_NOTES_DEMO"] = "1"
            process.environment = environment
            do { try process.run() } catch {
                out("cannot start the app: \(error)")
                return nil
            }
            return process
        }

        func manager(_ method: String, _ parameters: JSONObject) -> JSONObject? {
            do {
                return try VarlinkClient(path: socket, timeout: .seconds(10)).call("io.scened.Manager." + method, parameters)
            } catch {
                out("\(method) failed: \(error)")
                return nil
            }
        }

        func sessionState() -> (id: String, state: String)? {
            guard let s = manager("ListSessions", ["app": .string(app)])?["sessions"]?[0],
                  let id = s["id"]?.stringValue, let state = s["state"]?.stringValue else { return nil }
            return (id, state)
        }

        func pause() { Thread.sleep(forTimeInterval: 0.4) }
    }

    fileprivate func wait(_ what: String, seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        out("timed out waiting for \(what)")
        return false
    }
}
