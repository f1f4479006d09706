import Foundation
import Glibc
import Testing

/// Issue 14, item 5, end to end: one user's scened, socket-activated under that user's own
/// `systemd --user`, starts that user's app without any privilege — as the user, in a cgroup
/// of the delegated subtree, frozen while suspended, thawed when active, gone with its cgroup
/// when terminated, and gone with the service when it stops.
///
/// Every file the daemon reads is the user's own, written as the user in their configuration
/// directory, which a user's scened reads first: `$XDG_CONFIG_HOME/scened/scened.conf` and
/// `apps.d/` beside it (the drop-in only points the unit at the staged binaries). Only the
/// app's program is installed by root, as a distribution installs programs.
extension SystemTests {
    static let deskApp = "com.example.desk"
    /// Where root installs scene-notes inside the namespace, readable and executable by anyone.
    static let deskAppProgram = "/run/systest/apps/scene-notes"

    @Test func userServiceStartsUsersApps() throws {
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
            report("user apps: total \(format(monotonicSeconds() - began, 1)) s")
        }
        let desk = try #require(ns.desk)
        let app = Self.deskApp
        let scenectl = "\(UserManagerNamespace.stage)/usr/bin/scenectl"
        report("user apps: namespace up in \(format(monotonicSeconds() - began, 2)) s, \(desk.name) uid \(desk.uid)")

        // The program, installed by root like any other; as the user, it finds the Swift
        // runtime through its RUNPATH, as the staged scened does.
        let installed = ns.exec(["install", "-D", "-m", "0755", notes, Self.deskAppProgram])
        try #require(installed.succeeded, "installing scene-notes in the namespace:\n\(installed)")
        let ldd = ns.asDesk(["ldd", Self.deskAppProgram])
        try #require(ldd.succeeded && !ldd.stdout.contains("not found"), "scene-notes's libraries as \(desk.name):\n\(ldd)")

        // The user's own files, written as the user.
        let config = ns.deskRuntimeDirectory + "/config/scened"
        let dropIn = """
            [Service]
            ExecStart=
            ExecStart=\(UserManagerNamespace.stage)/usr/libexec/scened
            ExecReload=
            ExecReload=\(scenectl) --socket %t/scened/io.scened.Manager reload

            """
        try deskWrite(ns, ns.deskUnitDirectory + "/scened.service.d/50-systest.conf", dropIn)
        try deskWrite(ns, config + "/scened.conf", "[Lifecycle]\nSuspendDelaySec=500ms\n")
        try deskWrite(ns, config + "/apps.d/\(app).conf", "[Launch]\nExecStart=\(Self.deskAppProgram)\n")
        let reload = ns.deskSystemctl("daemon-reload")
        try #require(reload.succeeded, "systemctl --user daemon-reload as \(desk.name):\n\(reload)")
        let start = ns.deskSystemctl("start", "scened.socket")
        try #require(start.succeeded, "systemctl --user start scened.socket:\n\(start)")

        // 1. A connect, through the socket-activated service, starts the app.
        let t0 = monotonicSeconds()
        let connect = ns.asDesk([scenectl, "--json=short", "connect", app], timeout: 30)
        try #require(connect.succeeded, "scenectl connect \(app) as \(desk.name):\n\(connect)\n\(deskJournal(ns))")
        let session = try #require((jsonObject(connect.stdout)?["session"] as? [String: Any])?["id"] as? String,
                                   "no session id in: \(connect.stdout)")
        report("user apps: connect (service activation + app start + attach) took \(format(monotonicSeconds() - t0, 2)) s, session \(session)")
        let service = ns.deskShow("scened.service", ["ActiveState", "MainPID"])
        #expect(service["ActiveState"] == "active", "the user service: \(service)")
        let scenedPID = service["MainPID"] ?? "0"

        var record = showApp(ns, scenectl, app)
        let pidNumber = try #require(record["startedPid"] as? Int, "no startedPid: \(record)")
        let pid = String(pidNumber)
        #expect(record["attachedPid"] as? Int == pidNumber, "the started process is not the one attached: \(record)")
        #expect(record["process"] as? String == "running", "\(record)")

        // As the user, a child of the user's scened, in a session of its own.
        let uids = statusField(ns, pid, "Uid")
        #expect(uids == Array(repeating: String(desk.uid), count: 4), "the app's uids (real, effective, saved, fs): \(uids)")
        let gids = statusField(ns, pid, "Gid")
        #expect(gids == Array(repeating: String(desk.gid), count: 4), "the app's gids: \(gids)")
        let fields = statFields(ns, pid)
        #expect(fields.count > 14 && fields[1] == scenedPID && fields[2] == pid && fields[3] == pid,
                "ppid (scened \(scenedPID)), pgrp and sid of the app: \(fields.prefix(4))")
        let capabilities = statusField(ns, pid, "CapEff")
        #expect(capabilities == ["0000000000000000"], "the app has capabilities: \(capabilities)")

        // In the service's delegated subtree.
        let cgroupPath = try #require(v2Cgroup(ns, pid), "no v2 line in /proc/\(pid)/cgroup")
        let expected = "/user-\(desk.uid).slice/user@\(desk.uid).service/app.slice/scened.service/apps/app-\(app)"
        #expect(cgroupPath.hasSuffix(expected), "the app's v2 cgroup \(cgroupPath) does not end in \(expected)")
        let v2 = ns.hierarchies.contains("unified") ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup"
        let directory = v2 + cgroupPath
        #expect(ns.exec(["stat", "-c", "%u", directory]).stdout == "\(desk.uid)\n", "\(directory) was not made by \(desk.name)")
        report("user apps: PID \(pid) uid \(uids.first ?? "?"), sid \(fields.count > 3 ? fields[3] : "?"), cgroup \(cgroupPath)")

        // 2. Background: suspended after SuspendDelaySec=500ms, and then frozen.
        let background = ns.asDesk([scenectl, "background", session])
        try #require(background.succeeded, "scenectl background \(session):\n\(background)")
        let tb = monotonicSeconds()
        var events = ""
        let frozen = waitUntil(seconds: 10, interval: 0.1) {
            record = showApp(ns, scenectl, app)
            events = ns.exec(["cat", directory + "/cgroup.events"]).stdout
            return record["frozen"] as? Bool == true && events.contains("frozen 1")
        }
        #expect(frozen, "not frozen within 10 s: \(record), cgroup.events: \(events)\n\(deskJournal(ns))")
        report("user apps: frozen \(format(monotonicSeconds() - tb, 2)) s after background")
        if frozen {
            #expect(record["process"] as? String == "suspended", "\(record)")
            let before = cpuTicks(ns, pid)
            sleepSeconds(1)
            let after = cpuTicks(ns, pid)
            #expect(before != nil && before == after, "the frozen app's utime+stime moved over 1 s: \(before ?? -1) -> \(after ?? -1)")
            // Frozen: every thread parked in the cgroup v2 freezer's trap.
            let wchans = ns.sh("for t in /proc/\(pid)/task/*/wchan; do cat \"$t\"; echo; done").stdout
                .split(separator: "\n").map(String.init)
            #expect(!wchans.isEmpty && wchans.allSatisfy { $0 == "get_signal" || $0 == "do_freezer_trap" },
                    "threads of the frozen app outside the freezer's trap (wchan): \(wchans)")
            report("user apps: frozen, CPU ticks \(before ?? -1) -> \(after ?? -1) over 1 s, thread wchans: \(wchans.joined(separator: " "))")
        }

        // 3. Activate: thawed.
        let activate = ns.asDesk([scenectl, "activate", session])
        #expect(activate.succeeded, "scenectl activate \(session):\n\(activate)")
        record = showApp(ns, scenectl, app)
        events = ns.exec(["cat", directory + "/cgroup.events"]).stdout
        #expect(record["frozen"] as? Bool == false && events.contains("frozen 0"), "not thawed: \(record), cgroup.events: \(events)")

        // 4. Terminate: the process and its cgroup go.
        let terminate = ns.asDesk([scenectl, "terminate", app])
        #expect(terminate.succeeded, "scenectl terminate \(app):\n\(terminate)")
        let tt = monotonicSeconds()
        let gone = waitUntil(seconds: 10) { !ns.exec(["test", "-e", "/proc/\(pid)"]).succeeded }
        #expect(gone, "the app's process \(pid) is still there 10 s after terminate: \(statFields(ns, pid).prefix(3))")
        let removed = waitUntil(seconds: 10) { !ns.exec(["test", "-e", directory]).succeeded }
        #expect(removed, "\(directory) is still there 10 s after terminate")
        report("user apps: terminated: process gone and cgroup removed in \(format(monotonicSeconds() - tt, 2)) s")

        // 5. Stopping the service, with the app started again and frozen, leaves nothing behind.
        // The archived s1 goes first: scene-notes would reconnect it at its launch, in the foreground.
        let discard = ns.asDesk([scenectl, "discard", session])
        #expect(discard.succeeded, "scenectl discard \(session):\n\(discard)")
        let again = ns.asDesk([scenectl, "--json=short", "connect", app], timeout: 30)
        try #require(again.succeeded, "the second connect:\n\(again)")
        let second = try #require((jsonObject(again.stdout)?["session"] as? [String: Any])?["id"] as? String)
        let secondPID = try #require(showApp(ns, scenectl, app)["startedPid"] as? Int, "no second startedPid")
        #expect(secondPID != pidNumber, "the second launch reused the first process")
        #expect(ns.asDesk([scenectl, "background", second]).succeeded, "scenectl background \(second)")
        var secondRecord: [String: Any] = [:]
        let frozenAgain = waitUntil(seconds: 10, interval: 0.1) {
            secondRecord = showApp(ns, scenectl, app)
            return secondRecord["frozen"] as? Bool == true
        }
        #expect(frozenAgain, "the second process was not frozen within 10 s: \(secondRecord)\n\(deskJournal(ns))")
        let ts = monotonicSeconds()
        let stop = ns.deskSystemctl("stop", "scened.service", timeout: 30)
        #expect(stop.succeeded, "systemctl --user stop scened.service:\n\(stop)")
        let stopSeconds = monotonicSeconds() - ts
        // About 2 s today: at SIGTERM scene-notes asks scened to Detach and waits for the answer,
        // which a stopping scened (blocked in its bounded wait for its apps' exits) never serves,
        // so the app is SIGKILLed when that wait (2 s) ends. The bound is systemd's side of it.
        #expect(stopSeconds < 10, "stopping the service took \(format(stopSeconds, 1)) s (a frozen app held it up?)")
        #expect(!ns.exec(["test", "-e", "/proc/\(secondPID)"]).succeeded, "app process \(secondPID) survived the service")
        let serviceCgroup = v2 + String(cgroupPath.dropLast("/apps/app-\(app)".count))
        #expect(!ns.exec(["test", "-e", serviceCgroup]).succeeded, "\(serviceCgroup) was left behind")
        // Nothing of the user's runs but its manager.
        let leftover = ns.sh("for s in /proc/[0-9]*/status; do p=${s#/proc/}; p=${p%/status}; "
                             + "[ \"$p\" = \(desk.managerPID) ] && continue; "
                             + "awk -v p=\"$p\" '/^Uid:/ && $2 == \(desk.uid) { print p }' \"$s\" 2>/dev/null; done").stdout
        #expect(leftover.isEmpty, "processes of \(desk.name) besides its manager after the stop: \(leftover)")
        report("user apps: service stopped in \(format(stopSeconds, 2)) s with a frozen app; nothing left")
        _ = ns.deskSystemctl("stop", "scened.socket")
    }

    /// Writes `text` to `path` as the desk user (the directories too).
    func deskWrite(_ ns: UserManagerNamespace, _ path: String, _ text: String) throws {
        let result = ns.asDesk(["/bin/sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && printf '%s' \"$2\" > \"$1\"", "sh", path, text])
        guard result.succeeded else { throw HarnessError("cannot write \(path) as the desk user:\n\(result)") }
    }

    /// `scenectl --json show-app APP` as the desk user: the app record, empty on failure.
    private func showApp(_ ns: UserManagerNamespace, _ scenectl: String, _ app: String) -> [String: Any] {
        jsonObject(ns.asDesk([scenectl, "--json=short", "show-app", app]).stdout)?["app"] as? [String: Any] ?? [:]
    }

    private func jsonObject(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    /// The values of a /proc/PID/status line (`Uid:	0	0	0	0` -> ["0", "0", "0", "0"]).
    private func statusField(_ ns: UserManagerNamespace, _ pid: String, _ name: String) -> [String] {
        let status = ns.exec(["cat", "/proc/\(pid)/status"]).stdout
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return [] }
        return line.dropFirst(name.count + 1).split(whereSeparator: { $0 == "\t" || $0 == " " }).map(String.init)
    }

    /// /proc/PID/stat after the command: [state, ppid, pgrp, session, ...]; empty when gone.
    private func statFields(_ ns: UserManagerNamespace, _ pid: String) -> [String] {
        let text = ns.exec(["cat", "/proc/\(pid)/stat"]).stdout
        guard let close = text.lastIndex(of: ")") else { return [] }
        return text[text.index(after: close)...].split(separator: " ").map(String.init)
    }

    /// utime + stime (clock ticks) of the whole process.
    private func cpuTicks(_ ns: UserManagerNamespace, _ pid: String) -> Int? {
        let fields = statFields(ns, pid)
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    private func v2Cgroup(_ ns: UserManagerNamespace, _ pid: String) -> String? {
        ns.exec(["cat", "/proc/\(pid)/cgroup"]).stdout.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }

    /// The user's scened's and its app's messages, for failure reports: by identifier, not by
    /// _SYSTEMD_USER_UNIT=, which journald may give as init.scope for a process's first second
    /// (its cached context of the same PID in the manager's cgroup, before the fork moved it).
    private func deskJournal(_ ns: UserManagerNamespace) -> String {
        _ = ns.exec(["journalctl", "--sync"], timeout: 10)
        let entries = ns.journal(["-o", "short-monotonic", "_UID=\(ns.desk?.uid ?? 0)",
                                  "SYSLOG_IDENTIFIER=scened", "SYSLOG_IDENTIFIER=\(Self.deskApp)"]).stdout
        return "--- the journal of the user's scened and its app:\n" + String(entries.suffix(3000))
    }
}
