import Foundation
import Glibc
import Testing

/// Who writes the desktop entries: the installed user unit scened-desktop-entries.service, under
/// an unprivileged user's manager, runs when scened starts and again at each `systemctl --user
/// reload scened` (ReloadPropagatedFrom=), into $HOME/.local/share/scened-desktop/applications:
/// an app's entry appears with its scheme and goes with it.
extension SystemTests {
    @Test func userDesktopEntriesFollowStartAndReload() throws {
        let began = monotonicSeconds()
        if let problem = privilegeProblem(tools: UserManagerNamespace.tools) {
            Issue.record("cannot run the system tests: \(problem)")
            return
        }
        let binaries = try binariesUnderTest()
        let hostBefore = HostState.capture()
        let ns: UserManagerNamespace
        do {
            ns = try UserManagerNamespace(packageRoot: packageRoot(), binaries: binaries, dropIn: Self.dropIn, deskUser: Self.deskUser)
        } catch {
            Issue.record("setting up journald and the user managers in a namespace failed: \(error)")
            return
        }
        defer {
            for problem in ns.teardown() { Issue.record("teardown: \(problem)") }
            for difference in HostState.capture().differences(from: hostBefore) { Issue.record("the host changed: \(difference)") }
            ns.scratch.remove()
            report("user desktop entries: total \(format(monotonicSeconds() - began, 1)) s")
        }
        let desk = try #require(ns.desk)
        let scenectl = "\(UserManagerNamespace.stage)/usr/bin/scenectl", units = ns.deskUnitDirectory
        let config = ns.deskRuntimeDirectory + "/config/scened"
        let ctl = "\(scenectl) --socket %t/scened/io.scened.Manager"

        // The installed unit, with only the staged scenectl in place of /usr/bin's.
        let unit = ns.exec(["cat", "\(UserManagerNamespace.stage)/usr/lib/systemd/user/scened-desktop-entries.service"])
        try #require(unit.succeeded && unit.stdout.contains("ReloadPropagatedFrom=scened.service"), "\(unit)")
        try deskWrite(ns, units + "/scened-desktop-entries.service", unit.stdout)
        try deskWrite(ns, units + "/scened-desktop-entries.service.d/50-systest.conf",
                      "[Service]\nExecStart=\nExecStart=\(ctl) desktop-entries\nExecReload=\nExecReload=\(ctl) desktop-entries\n")
        try deskWrite(ns, units + "/scened.service.d/50-systest.conf", Self.deskDropIn)
        try deskWrite(ns, config + "/apps.d/org.example.notes.conf", "[App]\nURLSchemes=notes\n")
        try #require(ns.deskSystemctl("daemon-reload").succeeded)
        let enable = ns.deskSystemctl("enable", "scened-desktop-entries.service")
        try #require(enable.succeeded, "systemctl --user enable scened-desktop-entries.service:\n\(enable)")
        try #require(ns.deskSystemctl("start", "scened.socket").succeeded)

        // Where the unit writes: $XDG_DATA_HOME if the manager has it (this one does), else the
        // user's home (which the manager gives its services as $HOME) + /.local/share.
        let environment = ns.asDesk(["systemctl", "--user", "show-environment"]).stdout.split(separator: "\n")
        let passwd = ns.exec(["getent", "passwd", desk.name]).stdout.split(separator: ":", omittingEmptySubsequences: false)
        try #require(passwd.count >= 7, "getent passwd \(desk.name): \(passwd)")
        let data = environment.first { $0.hasPrefix("XDG_DATA_HOME=") }.map { String($0.dropFirst(14)) } ?? passwd[5] + "/.local/share"
        let entries = data + "/scened-desktop/applications"
        let exists = { (name: String) in ns.asDesk(["test", "-f", entries + "/" + name]).succeeded }

        // The first client starts scened, which pulls the unit in after it is ready.
        let t0 = monotonicSeconds()
        #expect(ns.asDesk([scenectl, "status"]).succeeded)
        #expect(waitUntil(seconds: 20) { exists("scened-org.example.notes.desktop") },
                "no entry in \(entries) after scened started (found: \(ns.exec(["find", "/run", "/home", "/root", "/var", "-name", "scened-*.desktop"]).stdout)): \(ns.deskShow("scened-desktop-entries.service", ["ActiveState", "Result"]))\n\(deskUnitJournal(ns))")
        report("user desktop entries: written \(format(monotonicSeconds() - t0, 2)) s after the first client")
        let cache = ns.asDesk(["cat", entries + "/mimeinfo.cache"]).stdout
        #expect(cache.contains("\nx-scheme-handler/notes=scened-org.example.notes.desktop;\n"), "\(cache)")
        let entry = ns.asDesk(["cat", entries + "/scened-org.example.notes.desktop"]).stdout
        #expect(entry.contains("\nExec=\(scenectl) --socket \(ns.deskRuntimeDirectory)/scened/io.scened.Manager open -- %u\n"), "\(entry)")

        // A scheme added: systemctl --user reload scened writes its entry; removed: it goes.
        try deskWrite(ns, config + "/apps.d/com.example.maps.conf", "[App]\nURLSchemes=maps\n")
        #expect(ns.deskSystemctl("reload", "scened.service").succeeded)
        #expect(waitUntil(seconds: 20) { exists("scened-com.example.maps.desktop") }, "no entry after the reload\n\(deskUnitJournal(ns))")
        _ = ns.asDesk(["rm", "-f", config + "/apps.d/com.example.maps.conf"])
        #expect(ns.deskSystemctl("reload", "scened.service").succeeded)
        #expect(waitUntil(seconds: 20) { !exists("scened-com.example.maps.desktop") }, "the entry stayed after its scheme went")
        #expect(exists("scened-org.example.notes.desktop"))

        // scened stops: the unit stops with it (PartOf=), the entries stay for socket activation.
        #expect(ns.deskSystemctl("stop", "scened.service").succeeded)
        #expect(ns.deskShow("scened-desktop-entries.service", ["ActiveState"])["ActiveState"] == "inactive")
        #expect(exists("scened-org.example.notes.desktop"))
        _ = ns.deskSystemctl("stop", "scened.socket")
    }

    private func deskUnitJournal(_ ns: UserManagerNamespace) -> String {
        // What scenectl printed (the directory and the count), then the manager's own lines.
        ns.journal(["-o", "cat", "_SYSTEMD_USER_UNIT=scened-desktop-entries.service"]).stdout
            + ns.journal(["-o", "cat", "USER_UNIT=scened-desktop-entries.service"]).stdout
    }
}
