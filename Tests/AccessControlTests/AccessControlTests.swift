import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Who may do what, with real users (created and removed by the test): root, a member of the
/// administrator group, the owner of one app, the owner of another, and a stranger, over every
/// class of method, through scenectl as each of them; the private data each sees; and the
/// squatting and impostor attacks on the socket.
@Suite("Who may do what", .serialized)
struct AccessControlTests {
    static let ownedApp = "com.example.owned"
    static let otherApp = "com.example.other"

    /// The daemon, run as root, with the users' roles configured.
    final class Setup {
        let users: TestUsers
        let dir = TemporaryDirectory(prefix: "scened-access")
        let child: ChildProcess
        var socket: String { dir.file("io.scened.Manager") }

        init(_ users: TestUsers) throws {
            self.users = users
            // Other users must reach the socket (the directory may not be writable by them).
            chmod(dir.path, 0o755)
            _ = try dir.write("scened.conf", """
                [Access]
                AdministratorGroup=\(users.adminGroup)
                [Lifecycle]
                SuspendDelaySec=60s
                [Store]
                Durability=normal
                """)
            _ = try dir.write("apps.d/\(AccessControlTests.ownedApp).conf", "[App]\nUser=\(users.owner)\n")
            _ = try dir.write("apps.d/\(AccessControlTests.otherApp).conf", "[App]\nUser=\(users.otherOwner)\n")
            (child, _) = try ScenedLaunch.spawn(
                [Binaries.scened, "--config", dir.file("scened.conf"), "--socket", dir.file("io.scened.Manager"),
                 "--state-dir", dir.file("state")],
                notifyPath: nil, directory: dir.path, label: "scened-access")
            try ScenedLaunch.waitReady(child, notify: nil, socketPath: dir.file("io.scened.Manager"), timeout: 20)
        }

        deinit {
            child.killNow()
            dir.remove()
        }

        func ctl(_ user: String, _ arguments: [String]) throws -> Completed {
            try users.run(as: user, [Binaries.scenectl, "--socket", socket] + arguments)
        }

        func ok(_ user: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let r = try ctl(user, arguments)
            #expect(r.status == 0, "\(r.summary)", sourceLocation: sourceLocation)
            return r.stdout
        }
    }

    @Test("root × administrator × owner × other owner × stranger over every class of method; private data; monitor filtering")
    func matrix() throws {
        try #require(getuid() == 0, "needs root: useradd and setpriv")
        let users = try TestUsers()
        defer { users.remove() }
        let setup = try Setup(users)
        let owned = Self.ownedApp, other = Self.otherApp

        // As root: one session of each app with userInfo and saved state, one spare to discard.
        let s1 = try setup.ok("root", ["connect", owned, "--user-info", #"{"secret":"owned"}"#]).trimmingCharacters
        let s2 = try setup.ok("root", ["connect", other, "--user-info", #"{"secret":"other"}"#]).trimmingCharacters
        let s3 = try setup.ok("root", ["connect", owned, "--background"]).trimmingCharacters
        _ = try setup.ok("root", ["save-state", s1, #"{"draft":"private"}"#])
        _ = try setup.ok("root", ["background", s1])

        let everyone = ["root", users.admin, users.owner, users.otherOwner, users.stranger]
        let owners = ["root", users.admin, users.owner]
        let otherOwners = ["root", users.admin, users.otherOwner]
        let administrators = ["root", users.admin]
        // (command, who may run it). The order keeps each allowed command valid in its state.
        let rows: [([String], [String])] = [
            (["status"], everyone), (["pressure"], everyone), (["list"], everyone), (["apps"], everyone),
            (["show-app", owned], everyone), (["tasks"], everyone),
            (["set-user-info", s1, #"{"secret":"changed"}"#], owners),
            (["save-state", s1, #"{"draft":"again"}"#], owners),
            (["set-footprint", s1, "10M"], owners),
            (["set-app-footprint", owned, "5M"], owners),
            (["memory-warning", owned], owners),
            (["task", "begin", s1], owners),
            (["connect", owned, "--background"], owners),
            (["launch", owned], []),                     // already running: refused or InvalidTransition
            (["memory-warning", other], otherOwners),
            (["set-footprint", s2, "1M"], otherOwners),
            (["memory-warning", owned, other], administrators),
            (["memory-warning"], administrators),
            (["set-protected", s1, "yes"], administrators),
            (["set-protected", s1, "no"], administrators),
            (["connect", owned, "--protected", "--background"], administrators),
            (["pressure", "set", "warning", "--for", "1s"], administrators),
            (["pressure", "clear"], administrators),
            (["reload"], administrators),
        ]
        for (command, allowed) in rows {
            for user in everyone {
                let r = try setup.ctl(user, command)
                if allowed.contains(user) || (command == ["launch", owned] && owners.contains(user)) {
                    #expect(r.status != 5, "\(user) may run \(command): \(r.summary)")
                    if command != ["launch", owned] { #expect(r.status == 0, "\(user): \(r.summary)") }
                } else {
                    #expect(r.status == 5 && r.stderr.contains("permission denied"), "\(user) may not run \(command): \(r.summary)")
                }
            }
        }

        // Refusals name what was refused, and are journal entries with the caller's ids.
        let refused = try setup.ctl(users.stranger, ["pressure", "set", "critical"])
        #expect(refused.stderr.contains("SetPressure is for administrators"), "\(refused.summary)")
        let strangerUID = users.uid(users.stranger)
        // (Rate-limited: of the many refusals above, the first ones are logged.)
        #expect(setup.child.stderr.contains("to uid \(strangerUID) (gid"), "\(setup.child.stderr.suffix(2000))")
        #expect(setup.child.stderr.contains("similar refusals not logged") || setup.child.stderr.components("Refused ") <= 10,
                "refusals are rate-limited")

        // An owner's reach ends at its own app.
        for command in [["activate", s2], ["background", s2], ["discard", s2], ["connect", other], ["launch", other],
                        ["save-state", s2, "{}"], ["set-user-info", s2, "{}"], ["terminate", other]] {
            let r = try setup.ctl(users.owner, command)
            #expect(r.status == 5, "\(users.owner) (owner of \(owned)) ran \(command): \(r.summary)")
        }
        // Nothing a refused call touched changed: s2 is as it was.
        let s2Shown = try setup.ok("root", ["--json", "show", s2, "-n", "0"])
        #expect(s2Shown.contains(#""secret":"other""#) && s2Shown.contains("foregroundActive"), "\(s2Shown)")

        // Private data: the owner and administrators see it, others see that it was withheld.
        for user in everyone {
            let shown = try setup.ok(user, ["--json", "show", s1, "-n", "0"])
            let visible = owners.contains(user)
            #expect(shown.contains(#""secret":"changed""#) == visible, "\(user): \(shown)")
            #expect(shown.contains(#""draft":"again""#) == visible, "\(user): \(shown)")
            #expect(shown.contains(#""withheld":true"#) == !visible, "\(user): \(shown)")
        }
        // The same when the engine left the payload to the store (over 64 bytes, read back from
        // SQLite for a reply): read for those who may see it, withheld from the others.
        let large = String(repeating: "L", count: 300)
        _ = try setup.ok(users.owner, ["set-user-info", s1, #"{"secret":"\#(large)"}"#])
        for user in everyone {
            let shown = try setup.ok(user, ["--json", "show", s1, "-n", "0"])
            let visible = owners.contains(user)
            #expect(shown.contains(large) == visible, "\(user): \(shown)")
            #expect(shown.contains(#""withheld":true"#) == !visible, "\(user): \(shown)")
            #expect(shown.contains(#""userInfoSize":\#(large.utf8.count + 13)"#), "\(user): \(shown)")
        }
        // No listing carries private data, for anyone.
        let listed = try setup.ok("root", ["--json", "list"])
        #expect(!listed.contains("secret") && !listed.contains("draft"), "\(listed)")

        // Monitor: everyone follows every app, but willConnectTo's restoration data only reaches
        // the owner and administrators.
        var monitors: [(String, ChildProcess)] = []
        for user in [users.owner, users.stranger, users.otherOwner] {
            let m = try ChildProcess([tool("setpriv"), "--reuid", user, "--regid", user, "--init-groups", "--",
                                      "env", "-i", "PATH=/usr/bin:/bin", Binaries.scenectl, "--socket", setup.socket,
                                      "--json", "monitor"], directory: setup.dir.path, label: "monitor-\(user)")
            monitors.append((user, m))
        }
        defer { for (_, m) in monitors { m.killNow() } }
        // Wait until all three are subscribed (each is a connection).
        #expect(waitUntilTrue(seconds: 10) {
            let status = (try? setup.ctl("root", ["--json", "status"]).stdout) ?? ""
            return status.contains(#""connections":4"#)
        }, "the monitors did not connect")
        _ = try setup.ok("root", ["disconnect", s1])
        _ = try setup.ok("root", ["activate", s1])
        for (user, m) in monitors {
            #expect(waitUntilTrue(seconds: 10) { m.stdout.contains("didBecomeActive") }, "\(user)'s monitor: \(m.stdout)")
            let willConnect = m.stdout.split(separator: "\n").first { $0.contains("willConnectTo") } ?? ""
            if user == users.owner {
                #expect(willConnect.contains(#""draft":"again""#) && !willConnect.contains("withheld"), "\(user): \(willConnect)")
            } else {
                #expect(!willConnect.contains("draft") && willConnect.contains(#""withheld":true"#), "\(user): \(willConnect)")
            }
        }

        // The owner may discard its own session; the stranger may not.
        #expect(try setup.ctl(users.stranger, ["discard", s3]).status == 5)
        _ = try setup.ok(users.owner, ["discard", s3])
    }

    @Test("io.scened.App: only the owner (or an administrator) attaches as an app, and only one process at a time")
    func attachIsTheOwners() throws {
        try #require(getuid() == 0, "needs root: useradd and setpriv")
        let users = try TestUsers()
        defer { users.remove() }
        let setup = try Setup(users)
        let owned = Self.ownedApp
        /// Attaches as `app` and prints the first reply; with "hold", keeps the attach open.
        let probe = #"""
        import json, socket, sys, time
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
        s.sendall(json.dumps({"method": "io.scened.App.Attach", "parameters": {"app": sys.argv[2]}, "more": True}).encode() + b"\0")
        b = b""
        while b"\0" not in b:
            d = s.recv(65536)
            if not d: break
            b += d
        print(b.split(b"\0")[0].decode(), flush=True)
        if len(sys.argv) > 3: time.sleep(30)
        """#
        func attach(_ user: String, _ app: String) throws -> String {
            try users.run(as: user, ["python3", "-c", probe, setup.socket, app]).stdout
        }
        for user in [users.stranger, users.otherOwner] {
            let reply = try attach(user, owned)
            #expect(reply.contains("org.varlink.service.PermissionDenied"), "\(user) attached as \(owned): \(reply)")
        }
        #expect(try setup.ctl("root", ["--json", "show-app", owned]).stdout.contains("\"launches\":0") ||
                (try setup.ctl("root", ["show-app", owned]).status) != 0, "a refused attach launched nothing")
        // The owner attaches and stays; a second process (even root's) is refused meanwhile.
        let held = try ChildProcess([tool("setpriv"), "--reuid", users.owner, "--regid", users.owner, "--init-groups", "--",
                                     "env", "-i", "PATH=/usr/bin:/bin", "python3", "-c", probe, setup.socket, owned, "hold"],
                                    directory: setup.dir.path, label: "attach-owner", stdoutPipe: true)
        defer { held.killNow() }
        let first = held.readLine(seconds: 10) ?? ""
        #expect(first.contains("\"attached\"") && first.contains("\"pid\""), "the owner's attach: \(first) \(held.stderr)")
        let second = try attach("root", owned)
        #expect(second.contains("io.scened.App.AlreadyAttached"), "\(second)")
        #expect(try setup.ctl("root", ["show-app", owned]).stdout.contains("running"))
    }

    @Test("no squatting: a runtime directory another user made first is refused; an impostor on the socket gets nothing")
    func squatting() throws {
        try #require(getuid() == 0, "needs root: useradd and setpriv")
        let users = try TestUsers()
        defer { users.remove() }
        let ownerUID = users.uid(users.owner)
        let fallback = "/tmp/scened-\(ownerUID)"
        let scratch = TemporaryDirectory(prefix: "scened-squat")
        defer {
            scratch.remove()
            _ = try? run([tool("rm"), "-rf", fallback])
        }
        chmod(scratch.path, 0o755)
        let state = scratch.file("owner-state")
        _ = try run([tool("install"), "-d", "-o", users.owner, "-m", "0700", state])
        _ = try run([tool("rm"), "-rf", fallback])

        // The stranger makes the owner's fallback directory first, open to all.
        let made = try users.run(as: users.stranger, [tool("mkdir"), "-m", "0777", fallback])
        try #require(made.status == 0, "\(made.summary)")
        let refused = try users.run(as: users.owner, [Binaries.scened, "--state-dir", state], environment: ["HOME=\(scratch.path)"])
        #expect(refused.status == 1, "\(refused.summary)")
        #expect(refused.stderr.contains("refusing to use \(fallback)") && refused.stderr.contains(users.stranger), "\(refused.summary)")

        // And plants an impostor there: the owner's scenectl finds it, checks who serves it, and
        // sends nothing.
        let received = scratch.file("impostor-received")
        chmod(scratch.path, 0o777)
        let impostor = try ChildProcess([tool("setpriv"), "--reuid", users.stranger, "--regid", users.stranger, "--init-groups", "--",
                                         tool("python3"), "-c", Self.impostorScript, fallback + "/io.scened.Manager", received],
                                        directory: scratch.path, label: "impostor")
        defer { impostor.killNow() }
        #expect(waitUntilTrue(seconds: 10) { access(fallback + "/io.scened.Manager", F_OK) == 0 }, "impostor did not start: \(impostor.stderr)")
        let fooled = try users.run(as: users.owner, [Binaries.scenectl, "save-state", "s1", #"{"password":"hunter2"}"#],
                                   environment: ["HOME=\(scratch.path)"], hidingSystemSocket: true)
        #expect(fooled.status == 5, "\(fooled.summary)")
        #expect(fooled.stderr.contains("served by \(users.stranger)") && fooled.stderr.contains("not talking to it"), "\(fooled.summary)")
        // Root is not fooled either, whatever socket it is pointed at.
        let rootFooled = try users.run(as: "root", [Binaries.scenectl, "--socket", fallback + "/io.scened.Manager", "status"])
        #expect(rootFooled.status == 5, "\(rootFooled.summary)")
        usleep(200_000)
        #expect(readTextFile(received).isEmpty, "the impostor received: \(readTextFile(received))")
        impostor.killNow()
        chmod(scratch.path, 0o755)

        // Gone: the owner's daemon makes its own directory, serves its user as an administrator
        // and everyone else read-only.
        _ = try run([tool("rm"), "-rf", fallback])
        let daemon = try ChildProcess([tool("setpriv"), "--reuid", users.owner, "--regid", users.owner, "--init-groups", "--",
                                       "env", "-i", "PATH=/usr/bin:/bin", "HOME=\(scratch.path)", Binaries.scened,
                                       "--state-dir", state], directory: scratch.path, label: "owner-scened")
        defer { daemon.killNow() }
        let socket = fallback + "/io.scened.Manager"
        #expect(waitUntilTrue(seconds: 20) { access(socket, F_OK) == 0 }, "the owner's daemon did not start: \(daemon.stderr)")
        var info = stat()
        #expect(lstat(fallback, &info) == 0 && info.st_uid == ownerUID && info.st_mode & 0o022 == 0,
                "\(fallback): uid \(info.st_uid), mode \(String(info.st_mode & 0o7777, radix: 8))")
        let mine = try users.run(as: users.owner, [Binaries.scenectl, "pressure", "set", "warning", "--for", "1s"],
                                 environment: ["HOME=\(scratch.path)"], hidingSystemSocket: true)
        #expect(mine.status == 0, "\(mine.summary)")
        let theirs = try users.run(as: users.stranger, [Binaries.scenectl, "--socket", socket, "pressure", "set", "warning"])
        #expect(theirs.status == 5, "\(theirs.summary)")
        let look = try users.run(as: users.stranger, [Binaries.scenectl, "--socket", socket, "status"])
        #expect(look.status == 5, "the stranger's scenectl must not trust a daemon run by another user either: \(look.summary)")
    }

    /// A fake scened: records what it is sent and answers every call with success.
    static let impostorScript = """
        import os, socket, sys
        path, log = sys.argv[1], sys.argv[2]
        open(log, "wb").close()
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen(8)
        while True:
            c, _ = s.accept()
            data = c.recv(65536)
            with open(log, "ab") as f:
                f.write(data)
            try:
                c.sendall(b'{"parameters":{}}\\0')
            except OSError:
                pass
            c.close()
        """
}

extension String {
    func components(_ separator: String) -> Int {
        split(separator: separator, omittingEmptySubsequences: false).count - 1
    }

    var trimmingCharacters: String {
        String(self.drop { $0 == " " || $0 == "\n" }.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
    }
}

/// Polls `condition` every 50 ms for up to `seconds`.
func waitUntilTrue(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Deadline(seconds: seconds)
    while !deadline.hasPassed {
        if condition() { return true }
        usleep(50_000)
    }
    return condition()
}
