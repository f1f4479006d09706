import Foundation
import Glibc
import Testing

/// The user units (systemd/user) under the user manager of an unprivileged user, as a desktop
/// session has it: socket activation at %t, `scenectl status` without options, and the
/// delegated cgroup scened will start, freeze and kill its apps in.
extension SystemTests {
    static let deskUser = "scened-desk"
    /// Only where the staged binaries are; everything else is the installed user unit's.
    static let deskDropIn = """
        [Service]
        ExecStart=
        ExecStart=\(UserManagerNamespace.stage)/usr/libexec/scened
        ExecReload=
        ExecReload=\(UserManagerNamespace.stage)/usr/bin/scenectl --socket %t/scened/io.scened.Manager reload

        """

    @Test func userServiceHasDelegatedCgroup() throws {
        let began = monotonicSeconds()
        if let problem = privilegeProblem(tools: UserManagerNamespace.tools) {
            Issue.record("cannot run the system tests: \(problem)")
            return
        }
        let binaries = try binariesUnderTest()
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
            report("user service: total \(format(monotonicSeconds() - began, 1)) s")
        }
        let desk = try #require(ns.desk)
        report("user service: namespace up in \(format(monotonicSeconds() - began, 2)) s, \(desk.name) uid \(desk.uid), its manager PID \(desk.managerPID)")

        try ns.writeFile(ns.deskUnitDirectory + "/scened.service.d/50-systest.conf", Self.deskDropIn)
        let reload = ns.deskSystemctl("daemon-reload")
        try #require(reload.succeeded, "systemctl --user daemon-reload as \(desk.name):\n\(reload)")

        // The installed units, as this user's manager loads them (drop-in included), verify clean.
        let verify = ns.asDesk(["systemd-analyze", "--user", "verify", "--man=no", "--recursive-errors=no",
                                "scened.socket", "scened.service"])
        #expect(verify.status == 0 && verify.stdout.isEmpty && verify.stderr.isEmpty,
                "systemd-analyze --user verify in the user's manager is not clean:\n\(verify)")

        // The socket at %t: the path the daemon would bind itself, this user's only.
        let socketPath = ns.deskRuntimeDirectory + "/scened/io.scened.Manager"
        let start = ns.deskSystemctl("start", "scened.socket")
        try #require(start.succeeded, "systemctl --user start scened.socket:\n\(start)")
        let socket = ns.deskShow("scened.socket", ["ActiveState", "SubState", "Listen"])
        #expect(socket["ActiveState"] == "active" && socket["SubState"] == "listening"
                    && socket["Listen"] == "\(socketPath) (Stream)", "socket unit: \(socket)")
        let node = ns.exec(["stat", "-c", "%u %a %F", socketPath])
        #expect(node.stdout == "\(desk.uid) 600 socket\n", "the socket node: \(node)")
        #expect(ns.deskShow("scened.service", ["ActiveState"])["ActiveState"] == "inactive", "the service started before any client")

        // scenectl, as the user and without options, finds it and activates the service.
        let ctl = ns.asDesk(["\(UserManagerNamespace.stage)/usr/bin/scenectl", "status"])
        #expect(ctl.succeeded && ctl.stdout.contains("Socket: \(socketPath)\n"), "scenectl status as \(desk.name):\n\(ctl)")
        var p: [String: String] = [:]
        let running = waitUntil(seconds: 10) {
            p = ns.deskShow("scened.service", ["ActiveState", "SubState", "MainPID", "Delegate", "StatusText"])
            return p["ActiveState"] == "active" && p["SubState"] == "running"
        }
        try #require(running, "the first client did not activate the user service: \(p)")
        let main = p["MainPID"] ?? "0"
        #expect(p["Delegate"] == "yes", "the user service is not delegated: \(p)")
        #expect(ns.exec(["stat", "-c", "%u", "/proc/\(main)"]).stdout == "\(desk.uid)\n", "scened does not run as \(desk.name)")
        #expect(ns.deskSystemctl("reload", "scened.service").succeeded, "systemctl --user reload (ExecReload= names %t's socket)")

        let environ = ns.exec(["/bin/sh", "-c", "tr '\\0' '\\n' < /proc/$1/environ", "sh", main]).stdout
        let stateDirectory = environ.split(separator: "\n").first { $0.hasPrefix("STATE_DIRECTORY=") }.map { String($0.dropFirst(16)) }
        #expect(stateDirectory != nil && ns.exec(["test", "-s", (stateDirectory ?? "") + "/scened.db"]).succeeded,
                "no session database in STATE_DIRECTORY (\(stateDirectory ?? "unset"))")
        report("user service: PID \(main), STATE_DIRECTORY=\(stateDirectory ?? "unset"), status \"\(p["StatusText"] ?? "")\"")

        // The delegated subtree: the service's v2 cgroup takes a child made as the user, from
        // inside the service's own mount namespace (where scened itself will make them).
        let cgroupLine = ns.exec(["cat", "/proc/\(main)/cgroup"]).stdout.split(separator: "\n").first { $0.hasPrefix("0::") }
        let path = try #require(cgroupLine.map { String($0.dropFirst(3)) }, "no v2 line in /proc/\(main)/cgroup")
        let v2 = ns.hierarchies.contains("unified") ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup"
        let directory = v2 + path
        #expect(path.hasSuffix("/scened.service"), "the v2 cgroup of scened: \(path)")
        #expect(ns.exec(["stat", "-c", "%u", directory]).stdout == "\(desk.uid)\n", "\(directory) does not belong to \(desk.name)")
        let probe = directory + "/systest-probe"
        let made = ns.exec(["/usr/bin/nsenter", "-t", main, "-m", "--", "/usr/bin/setpriv", "--reuid=\(desk.uid)",
                            "--regid=\(desk.gid)", "--init-groups", "/bin/sh", "-c", "mkdir \"$1\" && rmdir \"$1\"", "sh", probe])
        #expect(made.succeeded, "mkdir/rmdir in the delegated cgroup as \(desk.name):\n\(made)")
        // Negative control: the check does depend on who asks.
        let stranger = ns.exec(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/mkdir", probe])
        #expect(!stranger.succeeded, "another user could make a cgroup in scened's subtree:\n\(stranger)")
        _ = ns.exec(["rmdir", probe])
        report("user service: \(directory) (owner \(desk.uid)) took a child cgroup made as \(desk.name); nobody's was refused")

        let stop = ns.deskSystemctl("stop", "scened.service", "scened.socket")
        #expect(stop.succeeded && !ns.exec(["test", "-e", socketPath]).succeeded, "stop (RemoveOnStop=yes):\n\(stop)")
    }
}
