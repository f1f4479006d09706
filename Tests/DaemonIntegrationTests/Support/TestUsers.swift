import Glibc
import ScenedTestSupport
import Varlink

/// Two users made for a test (useradd), removed at its end: one in a group of its own making,
/// one outside it; and Varlink calls made as either (setpriv), to test who may call what.
final class TestUsers {
    let group: String
    let member: String
    let outsider: String

    init() throws {
        guard geteuid() == 0 else { throw TestFailure("making test users needs root") }
        for tool in ["/usr/sbin/groupadd", "/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/sbin/groupdel", "/usr/bin/setpriv"] {
            _ = try Binaries.require(tool)
        }
        let suffix = String(UInt32(getpid()) % 100_000)
        group = "scwg\(suffix)"
        member = "scwm\(suffix)"
        outsider = "scwo\(suffix)"
        remove()
        try Self.check(["/usr/sbin/groupadd", group])
        try Self.check(["/usr/sbin/useradd", "-M", "-G", group, member])
        try Self.check(["/usr/sbin/useradd", "-M", outsider])
    }

    /// Removes the users and the group (also what an earlier run of this pid left).
    func remove() {
        for user in [member, outsider] { _ = try? run(["/usr/sbin/userdel", user], timeout: 30) }
        _ = try? run(["/usr/sbin/groupdel", group], timeout: 30)
    }

    private static func check(_ arguments: [String]) throws {
        let done = try run(arguments, timeout: 30)
        guard done.status == 0 else { throw TestFailure(done.summary) }
    }

    /// Any call made by `user` (with its groups) on a connection of its own; the reply's text.
    func call(as user: String, socket: String, _ method: String, _ parameters: JSONObject) throws -> String {
        let script = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            s.sendall(json.dumps({"method": sys.argv[2], "parameters": json.loads(sys.argv[3])}).encode() + b"\\0")
            reply = b""
            while not reply.endswith(b"\\0"):
                data = s.recv(65536)
                if not data:
                    break
                reply += data
            print(reply.rstrip(b"\\0").decode())
            """
        let text = String(decoding: JSONValue.object(parameters).serialized(), as: UTF8.self)
        let done = try run(["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--init-groups",
                            "/usr/bin/python3", "-c", script, socket, method, text], timeout: 30)
        guard done.status == 0 else { throw TestFailure(done.summary) }
        return done.stdout
    }

    /// io.scened.Manager.Notify made by `user` (with its groups); the reply's text.
    func notify(as user: String, socket: String, app: String) throws -> String {
        let script = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            call = {"method": "io.scened.Manager.Notify", "parameters": {"app": sys.argv[2], "payload": {"from": sys.argv[3]}}}
            s.sendall(json.dumps(call).encode() + b"\\0")
            reply = b""
            while not reply.endswith(b"\\0"):
                data = s.recv(65536)
                if not data:
                    break
                reply += data
            print(reply.rstrip(b"\\0").decode())
            """
        let done = try run(["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--init-groups",
                            "/usr/bin/python3", "-c", script, socket, app, user], timeout: 30)
        guard done.status == 0 else { throw TestFailure(done.summary) }
        return done.stdout
    }
}
