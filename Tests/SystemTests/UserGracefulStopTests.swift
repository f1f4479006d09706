import Foundation
import Glibc
import Testing

/// Issue 35, items 1 and 4, under the real user manager: `systemctl --user stop scened` with
/// scene-notes in the foreground saves its count on the way down (resign, didEnterBackground
/// with its answer, willTerminate, reason shutdown); after a new start, activating the session
/// restores it; the journal says shutdown.
extension SystemTests {
    static let stopApp = "com.example.stopdesk"

    @Test func userServiceStopSavesState() throws {
        let began = monotonicSeconds()
        if let problem = privilegeProblem(tools: UserManagerNamespace.tools) {
            Issue.record("cannot run the system tests: \(problem)")
            return
        }
        let binaries = try binariesUnderTest()
        let notes = binaries + "/scene-notes"
        try #require(access(notes, X_OK) == 0, "no executable \(notes): build the products first (swift build)")
        let hostBefore = HostState.capture()
        let ns: UserManagerNamespace
        do {
            ns = try UserManagerNamespace(packageRoot: packageRoot(), binaries: binaries, dropIn: Self.dropIn,
                                          deskUser: Self.deskUser)
        } catch {
            Issue.record("setting up journald and the user managers in a namespace failed: \(error)")
            return
        }
        defer {
            for problem in ns.teardown() { Issue.record("teardown: \(problem)") }
            for difference in HostState.capture().differences(from: hostBefore) {
                Issue.record("the host changed: \(difference)")
            }
            ns.scratch.remove()
            report("user stop: total \(format(monotonicSeconds() - began, 1)) s")
        }
        let desk = try #require(ns.desk)
        let app = Self.stopApp
        let scenectl = "\(UserManagerNamespace.stage)/usr/bin/scenectl"
        let installed = ns.exec(["install", "-D", "-m", "0755", notes, Self.deskAppProgram])
        try #require(installed.succeeded, "installing scene-notes in the namespace:\n\(installed)")

        let config = ns.deskRuntimeDirectory + "/config/scened"
        try deskWrite(ns, ns.deskUnitDirectory + "/scened.service.d/50-systest.conf", """
            [Service]
            ExecStart=
            ExecStart=\(UserManagerNamespace.stage)/usr/libexec/scened

            """)
        // No logind in the namespace: FollowLogin=no keeps its absence out of the story.
        try deskWrite(ns, config + "/scened.conf", "[Lifecycle]\nSuspendDelaySec=60s\nStopTimeoutSec=10s\n[System]\nFollowLogin=no\n")
        try deskWrite(ns, config + "/apps.d/\(app).conf", "[Launch]\nExecStart=\(Self.deskAppProgram)\n")
        try #require(ns.deskSystemctl("daemon-reload").succeeded)
        let socket = ns.deskSystemctl("start", "scened.socket")
        try #require(socket.succeeded, "systemctl --user start scened.socket:\n\(socket)")

        // scene-notes in the foreground, its counter moved to 3.
        let connect = ns.asDesk([scenectl, "--json=short", "connect", app], timeout: 30)
        try #require(connect.succeeded, "scenectl connect \(app) as \(desk.name):\n\(connect)\n\(stopJournal(ns))")
        let session = try #require(((try? JSONSerialization.jsonObject(with: Data(connect.stdout.utf8))) as? [String: Any])
            .flatMap { $0["session"] as? [String: Any] }?["id"] as? String, "no session id in: \(connect.stdout)")
        for _ in 0..<2 {
            #expect(ns.asDesk([scenectl, "deactivate", session]).succeeded)
            #expect(ns.asDesk([scenectl, "activate", session]).succeeded)
        }
        let counted = waitUntil(seconds: 10, interval: 0.1) { appMessages(ns, app).contains("counter=3") }
        try #require(counted, "scene-notes did not count 3 activations:\n\(stopJournal(ns))")

        // The stop.
        let t0 = monotonicSeconds()
        let stop = ns.deskSystemctl("stop", "scened.service", timeout: 30)
        let stopSeconds = monotonicSeconds() - t0
        #expect(stop.succeeded, "systemctl --user stop scened.service:\n\(stop)")
        report("user stop: systemctl --user stop with scene-notes in the foreground took \(format(stopSeconds, 2)) s (StopTimeoutSec=10s)")
        #expect(stopSeconds < 5, "the stop took \(format(stopSeconds, 1)) s")

        _ = ns.exec(["journalctl", "--sync"], timeout: 10)
        let said = appMessages(ns, app)
        #expect(said.contains("sceneWillResignActive") && said.contains("sceneDidEnterBackground"), "\(said.suffix(1500))")
        #expect(said.contains("saving counter=3"), "the app saved its count:\n\(said.suffix(1500))")
        #expect(said.contains("applicationWillTerminate"), "\(said.suffix(1500))")
        let entries = ns.journalEntries(["_UID=\(desk.uid)", "SYSLOG_IDENTIFIER=scened", "SCENED_APP=\(app)"])
        let terminated = entries.filter { ($0["MESSAGE"] as? String ?? "").contains("terminated") }
        #expect(terminated.contains { ($0["MESSAGE"] as? String ?? "").contains("terminated (shutdown)") },
                "the journal says shutdown: \(terminated.map { $0["MESSAGE"] ?? "" })")
        #expect(!entries.contains { ($0["MESSAGE"] as? String ?? "").contains("(exited)") }, "never exited")
        report("user stop: journal: \(terminated.compactMap { $0["MESSAGE"] as? String })")

        // A new start (socket activation): activating the session restores the count.
        let activate = ns.asDesk([scenectl, "activate", session], timeout: 30)
        #expect(activate.succeeded, "scenectl activate \(session) after the restart:\n\(activate)")
        let restored = waitUntil(seconds: 15, interval: 0.1) { appMessages(ns, app).contains("restored counter=3") }
        #expect(restored, "the count was not restored:\n\(stopJournal(ns))")
        report("user stop: restored after the restart: \(restored)")
        #expect(ns.deskSystemctl("stop", "scened.service", timeout: 30).succeeded)
        _ = ns.deskSystemctl("stop", "scened.socket")
    }

    /// What the app printed (its stdout goes to the journal under its app id).
    private func appMessages(_ ns: UserManagerNamespace, _ app: String) -> String {
        ns.journal(["-o", "cat", "SYSLOG_IDENTIFIER=\(app)"]).stdout
    }

    private func stopJournal(_ ns: UserManagerNamespace) -> String {
        _ = ns.exec(["journalctl", "--sync"], timeout: 10)
        let entries = ns.journal(["-o", "short-monotonic", "_UID=\(ns.desk?.uid ?? 0)",
                                  "SYSLOG_IDENTIFIER=scened", "SYSLOG_IDENTIFIER=\(Self.stopApp)"]).stdout
        return "--- the journal of the user's scened and its app:\n" + String(entries.suffix(3000))
    }
}
