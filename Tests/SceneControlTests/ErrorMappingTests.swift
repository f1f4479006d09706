import Glibc
import Testing
import Varlink
@testable import SceneControl

@Suite struct ErrorMappingTests {
    static func managerError(_ name: String, _ parameters: JSONObject) -> VarlinkError {
        VarlinkError(name: "io.scened.Manager." + name, parameters: parameters)
    }

    /// Daemon errors: exit status and the line on stderr; stdout stays empty.
    @Test(arguments: [
        (["show", "s9"], "GetSession", managerError("NoSuchSession", ["session": "s9", "message": "no session s9"]), Int32(4), "no session s9"),
        (["activate", "s9"], "Activate", managerError("SessionDiscarded", ["session": "s9", "message": "session s9 was discarded"]), 4, "session s9 was discarded"),
        (["launch", "com.example.x"], "Launch", managerError("NoSuchApp", ["app": "com.example.x", "message": "no app com.example.x"]), 4, "no app com.example.x"),
        (["task", "end", "t4"], "EndBackgroundTask", managerError("NoSuchTask", ["token": "t4", "message": "no task t4"]), 4, "no task t4"),
        (["deactivate", "s1"], "Deactivate", managerError("InvalidTransition", [
            "command": "deactivate", "app": "com.example.mail", "session": "s1", "state": "background",
            "reason": "not foregroundActive", "message": "cannot deactivate s1: it is background"]), 1, "cannot deactivate s1: it is background"),
        (["connect", "com.example.mail"], "Connect", managerError("InvalidArgument", ["parameter": "footprint", "reason": "too big"]), 1,
         "invalid argument (parameter: footprint, reason: too big)"),
        (["launch", "com.example.mail"], "Launch", managerError("StorageFailure", ["message": "disk full"]), 1, "disk full"),
        (["monitor", "--since", "1"], "Monitor", managerError("EventsUnavailable", ["since": 1, "oldest": 50, "message": "events before 50 are no longer kept"]), 1,
         "events before 50 are no longer kept"),
        (["reload"], "Reload", managerError("ConfigurationError", ["file": "/etc/scened/scened.conf", "line": 3,
                                                                  "message": "/etc/scened/scened.conf:3: unknown key Foo"]), 1,
         "/etc/scened/scened.conf:3: unknown key Foo"),
        (["cancel-task", "com.example.mail", "a"], "CancelBackgroundTask", managerError("NoSuchBackgroundTask", [
            "app": "com.example.mail", "identifier": "a", "message": "com.example.mail has no background task a"]), 4,
         "com.example.mail has no background task a"),
        (["notify", "com.example.mail", "{}"], "Notify", managerError("LimitExceeded", [
            "limit": "MaxPendingNotifications", "maximum": 64, "message": "com.example.mail has 64 notifications waiting"]), 1,
         "com.example.mail has 64 notifications waiting"),
        (["status"], "GetStatus", VarlinkError.invalidParameter("x"), 1, "scened rejected the parameter 'x'"),
        (["status"], "GetStatus", VarlinkError.permissionDenied(), 5, "permission denied"),
        (["pressure", "set", "critical"], "SetPressure", VarlinkError(name: "org.varlink.service.PermissionDenied", parameters: [
            "message": "permission denied: SetPressure is for administrators; you are alice (uid 1001)"]), 5,
         "permission denied: SetPressure is for administrators; you are alice (uid 1001)"),
        (["status"], "GetStatus", VarlinkError(name: "io.scened.Manager.NoSuchApp", parameters: ["app": "a.b"]), 4, "no such app (app: a.b)"),
        (["status"], "GetStatus", VarlinkError(name: "io.scened.Manager.NoSuchApp", parameters: ["app": "a.b", "message": ""]), 4,
         "no such app (app: a.b, message: )"),
    ])
    func daemonErrors(_ arguments: [String], _ method: String, _ error: VarlinkError, _ status: Int32, _ message: String) {
        let result = ctl(arguments, replies: [method: [.failure(error)]])
        #expect(result.status == status, "\(arguments)")
        #expect(result.err == "scenectl: \(message)\n")
        #expect(result.out.isEmpty)
    }

    @Test func reloadOnADaemonWithoutIt() {
        let result = ctl(["reload"], replies: ["Reload": [.failure(.methodNotFound("io.scened.Manager.Reload"))]])
        #expect(result.status == 1)
        #expect(result.err == "scenectl: this scened cannot reload its configuration (no io.scened.Manager.Reload); restart it instead\n")
        #expect(ctl(["status"], replies: ["GetStatus": [.failure(.methodNotFound("io.scened.Manager.GetStatus"))]]).err
            == "scenectl: scened does not know the method io.scened.Manager.GetStatus\n")
    }

    @Test func transportFailures() {
        let missing = ctl(["--socket", "/nowhere/sock", "status"],
                          connectError: .socket(.system(operation: "connect", path: "/nowhere/sock", errno: ENOENT)))
        #expect(missing.status == 3)
        #expect(missing.err == "scenectl: cannot connect to /nowhere/sock: No such file or directory; is scened running?\n")
        #expect(missing.connections == ["/nowhere/sock"])

        let denied = ctl(["--socket", "/s", "status"], connectError: .socket(.system(operation: "connect", path: "/s", errno: EACCES)))
        #expect(denied.status == 3)
        #expect(denied.err == "scenectl: cannot connect to /s: Permission denied\n")

        let long = ctl(["--socket", "/s", "status"], connectError: .socket(.pathTooLong(path: "/s", byteCount: 200)))
        #expect(long.status == 3)
        #expect(long.err.hasPrefix("scenectl: cannot connect to scened: /s: socket path is 200 bytes"))
    }

    @Test func clientErrorsDuringACall() {
        let location = SocketLocation(path: "/run/scened/io.scened.Manager", candidates: [])
        let cases: [(VarlinkClientError, SceneControl.ExitStatus, String)] = [
            (.connectionClosed, .unreachable, "scened closed the connection (/run/scened/io.scened.Manager)"),
            (.timedOut, .unreachable, "timed out waiting for scened (/run/scened/io.scened.Manager)"),
            (.io(operation: "recv", errno: ECONNRESET), .unreachable, "/run/scened/io.scened.Manager: recv failed: Connection reset by peer"),
            (.invalidReply("junk"), .failure, "bad reply from scened (/run/scened/io.scened.Manager): invalid reply: junk"),
            (.messageTooLarge(limit: 10), .failure, "bad reply from scened (/run/scened/io.scened.Manager): reply exceeds 10 bytes"),
        ]
        for (error, status, message) in cases {
            #expect(ErrorReport.control(for: error, socket: location, noneExisted: false) == ControlError(status, message))
        }
    }

    @Test func exitStatusNumbers() {
        #expect(SceneControl.ExitStatus.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5])
        #expect(ErrorReport.words(of: "InvalidTransition") == "invalid transition")
    }
}

@Suite struct SocketLocationTests {
    let runtime = "/run/user/1000/scened/io.scened.Manager"
    let system = "/run/scened/io.scened.Manager"
    let fallback = "/tmp/scened-1000/io.scened.Manager"

    func resolve(_ explicit: String? = nil, environment: [String: String] = [:], existing: Set<String> = [],
                 uid: uid_t = 1000) -> SocketLocation {
        let context = Context(out: CapturedOutput(), err: CapturedOutput(), environment: { environment[$0] }, uid: uid,
                              exists: { existing.contains($0) }, connect: { _, _ in RecordingTransport() })
        return SocketLocation.resolve(explicit: explicit, context: context)
    }

    @Test func explicitWins() {
        #expect(resolve("/x/sock", environment: ["SCENED_SOCKET": "/y"]).path == "/x/sock")
        #expect(resolve(environment: ["SCENED_SOCKET": "/y", "XDG_RUNTIME_DIR": "/run/user/1000"], existing: [runtime]).path == "/y")
    }

    @Test func firstExistingCandidate() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(resolve(environment: env, existing: [runtime, system]).path == runtime)
        #expect(resolve(environment: env, existing: [system, fallback]).path == system)
        #expect(resolve(environment: env, existing: [fallback]).path == fallback)
        #expect(resolve(existing: [fallback]).path == fallback)
        // Nothing there: the caller's own default, and every candidate is named.
        let none = resolve(environment: env)
        #expect(none.path == runtime)
        #expect(none.candidates == [runtime, system, fallback])
        // root has no per-user fallback.
        #expect(resolve(uid: 0).candidates == [system])
    }

    @Test func unreachableNamesEveryCandidate() {
        let result = ctl(["status"], environment: ["XDG_RUNTIME_DIR": "/run/user/1000"],
                         connectError: .socket(.system(operation: "connect", path: runtime, errno: ENOENT)))
        #expect(result.status == 3)
        #expect(result.err == "scenectl: no scened socket at \(runtime), \(system) or \(fallback); is scened running? (--socket or $SCENED_SOCKET name another)\n")
        #expect(result.connections == [runtime])

        let rootResult = ctl(["status"], uid: 0, connectError: .socket(.system(operation: "connect", path: system, errno: ENOENT)))
        #expect(rootResult.err == "scenectl: cannot connect to \(system): No such file or directory; is scened running?\n")
    }
}
