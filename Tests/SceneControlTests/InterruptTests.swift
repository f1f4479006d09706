import Glibc
import Locking
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// `interrupt` and `end-interruption`: the decisions as plain data, the command line, and runs
/// in process against canned replies (real commands, no signals of its own).
@Suite struct InterruptTests {
    static let events: JSONObject = ["token": "i4", "events": [
        ["seq": 20, "time": 0, "event": "willResignActive", "app": "com.example.mail", "session": "s1",
         "state": "foregroundInactive", "cause": "interruption"],
    ]]
    static let endEvents: JSONObject = ["events": [
        ["seq": 21, "time": 0, "event": "didBecomeActive", "app": "com.example.mail", "session": "s1",
         "state": "foregroundActive", "cause": "interruption"],
    ]]
    static var replies: [String: [Result<JSONObject, VarlinkError>]] {
        ["BeginInterruption": [.success(events)], "EndInterruption": [.success(endEvents)]]
    }

    static func begin(_ reason: String) -> RecordedCall {
        RecordedCall(method: "io.scened.Manager.BeginInterruption", parameters: ["reason": .string(reason)], more: false)
    }

    static let end = RecordedCall(method: "io.scened.Manager.EndInterruption", parameters: ["token": "i4"], more: false)

    // MARK: The decisions

    @Test func heldUntilASignalWithoutACommand() {
        var hold = InterruptHold(runsCommand: false)
        #expect(hold.handle(.commandExited(waitStatus: 0)) == [], "no command to wait for")
        #expect(hold.handle(.signal(SIGINT, fromProcess: false)) == [.end, .exit(0)])
        #expect(hold.finished)
        #expect(hold.handle(.signal(SIGTERM, fromProcess: true)) == [], "done is done")
        #expect(hold.handle(.daemonGone) == [])

        var gone = InterruptHold(runsCommand: false)
        #expect(gone.handle(.daemonGone) == [.fail(ControlError(.unreachable, "scened closed the connection; the interruption ended with it"))])
        #expect(gone.handle(.signal(SIGINT, fromProcess: true)) == [])
    }

    @Test func withACommandTheCommandDecides() {
        var hold = InterruptHold(runsCommand: true)
        #expect(hold.handle(.signal(SIGTERM, fromProcess: true)) == [.forward(SIGTERM)], "kill(1) of scenectl reaches the command")
        #expect(hold.handle(.signal(SIGINT, fromProcess: false)) == [], "the terminal's Ctrl-C reached it already")
        #expect(hold.handle(.signal(SIGHUP, fromProcess: true)) == [.forward(SIGHUP)])
        #expect(!hold.finished)
        #expect(hold.handle(.commandExited(waitStatus: 3 << 8)) == [.end, .exit(3)])
        #expect(hold.handle(.commandExited(waitStatus: 0)) == [])

        var gone = InterruptHold(runsCommand: true)
        #expect(gone.handle(.daemonGone) == [.warnDaemonGone])
        #expect(gone.handle(.daemonGone) == [], "said once")
        #expect(gone.handle(.signal(SIGTERM, fromProcess: true)) == [.forward(SIGTERM)], "the command still runs")
        #expect(gone.handle(.commandExited(waitStatus: SIGTERM)) == [.exit(128 + SIGTERM)], "nothing left to end")
    }

    @Test func exitStatusAsAShellReportsIt() {
        #expect(InterruptHold.exitStatus(waitStatus: 0) == 0)
        #expect(InterruptHold.exitStatus(waitStatus: 255 << 8) == 255)
        #expect(InterruptHold.exitStatus(waitStatus: SIGINT) == 130)
        #expect(InterruptHold.exitStatus(waitStatus: SIGKILL | 0x80) == 137, "a core dump changes nothing")
    }

    // MARK: The command line

    @Test func optionsEndAtTheCommand() throws {
        let plain = try ArgumentParser.parse(["interrupt", "sleep", "-v", "1"])
        #expect(plain.verb?.name == "interrupt" && plain.arguments == ["sleep", "-v", "1"] && !plain.global.verbose)
        let dashes = try ArgumentParser.parse(["-v", "interrupt", "--reason", "call", "--", "ls", "--help"])
        #expect(dashes.arguments == ["ls", "--help"] && dashes.global.verbose && !dashes.global.help)
        #expect(dashes.options.value("reason") == "call")
        let after = try ArgumentParser.parse(["interrupt", "ls", "--reason", "x"])
        #expect(after.arguments == ["ls", "--reason", "x"] && after.options.value("reason") == nil)
        // Other verbs still take options after their arguments.
        #expect(try ArgumentParser.parse(["activate", "s1", "-v"]).global.verbose)
        #expect(try ArgumentParser.parse(["interrupt"]).arguments.isEmpty)
    }

    @Test func reasons() throws {
        #expect(InterruptCommand.reason(for: []) == "scenectl interrupt")
        #expect(InterruptCommand.reason(for: ["sleep", "10"]) == "sleep 10")
        // Shortened to 255 bytes, never inside a character.
        let long = InterruptCommand.reason(for: [String(repeating: "é", count: 200)])
        #expect(long.utf8.count == 254 && long.allSatisfy { $0 == "é" })
        #expect(try Check.reason(String(repeating: "x", count: 255)).utf8.count == 255)
        for bad in ["", String(repeating: "x", count: 256)] {
            let result = ctl(["interrupt", "--reason", bad, "--", "true"])
            #expect(result.status == 2 && result.calls.isEmpty && result.err.contains("--reason"), "\(result.err)")
        }
    }

    @Test func tokens() {
        #expect(ctl(["end-interruption", "3"], replies: Self.replies).calls.first?.parameters == ["token": "i3"])
        for bad in ["i0", "i01", "x3", "i", "s3", "i-1"] {
            let result = ctl(["end-interruption", bad])
            #expect(result.status == 2 && result.calls.isEmpty, "\(bad)")
            #expect(result.err == "scenectl: '\(bad)' is not an interruption token (i<number>, e.g. i3)\n")
        }
        let missing = ctl(["end-interruption", "i9"], replies: ["EndInterruption": [.failure(VarlinkError(
            name: "io.scened.Manager.NoSuchInterruption", parameters: ["token": "i9", "message": "no interruption i9 is held"]))]])
        #expect(missing.status == 4 && missing.err == "scenectl: no interruption i9 is held\n")
    }

    @Test func endInterruptionReportsLikeOtherChanges() {
        let quiet = ctl(["end-interruption", "i4"], replies: Self.replies)
        #expect(quiet.status == 0 && quiet.out.isEmpty && quiet.calls == [Self.end])
        let verbose = ctl(["-v", "end-interruption", "i4", "--no-legend"], replies: Self.replies)
        #expect(verbose.out == "21 didBecomeActive com.example.mail s1 foregroundActive\n")
    }

    // MARK: Runs

    @Test(.timeLimit(.minutes(1))) func aCommandRunsUnderTheInterruption() throws {
        let result = ctl(["interrupt", "--", "sh", "-c", "exit 7"], replies: Self.replies)
        #expect(result.status == 7, "COMMAND's status: \(result.err)")
        #expect(result.calls == [Self.begin("sh -c exit 7"), Self.end])
        #expect(result.out.isEmpty && result.err.isEmpty, "quiet unless -v")

        let verbose = ctl(["-v", "interrupt", "--reason", "call", "--no-legend", "--", "true"], replies: Self.replies)
        #expect(verbose.status == 0)
        #expect(verbose.calls == [Self.begin("call"), Self.end])
        #expect(verbose.out == "20 willResignActive com.example.mail s1 foregroundInactive\n"
                + "21 didBecomeActive com.example.mail s1 foregroundActive\n")

        let killed = ctl(["interrupt", "sh", "-c", "kill -TERM $$"], replies: Self.replies)
        #expect(killed.status == 128 + SIGTERM && killed.calls.count == 2)
    }

    @Test(.timeLimit(.minutes(1))) func theCommandGetsItsArgumentsAsGiven() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let marker = directory.file("ran")
        let result = ctl(["interrupt", "sh", "-c", "printf '%s' \"$1\" > \(marker)", "sh", "-v --json"], replies: Self.replies)
        #expect(result.status == 0, "\(result.err)")
        #expect(readTextFile(marker) == "-v --json")
    }

    @Test(.timeLimit(.minutes(1))) func aCommandThatCannotRunEndsTheInterruption() {
        let missing = ctl(["interrupt", "--", "/nonexistent/command", "x"], replies: Self.replies)
        #expect(missing.status == 127)
        #expect(missing.err == "scenectl: cannot run '/nonexistent/command': No such file or directory\n")
        #expect(missing.calls == [Self.begin("/nonexistent/command x"), Self.end])

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("plain")
        try? writeTextFile(file, "not a program\n")
        let notExecutable = ctl(["interrupt", "--", file], replies: Self.replies)
        #expect(notExecutable.status == 126 && notExecutable.err.contains("Permission denied"), "\(notExecutable.err)")
        #expect(notExecutable.calls.count == 2)
    }

    @Test(.timeLimit(.minutes(1))) func aRefusedInterruptionRunsNothing() {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let marker = directory.file("ran")
        let refused = ctl(["interrupt", "--", "touch", marker], replies: ["BeginInterruption": [.failure(VarlinkError(
            name: "org.varlink.service.PermissionDenied", parameters: ["message": "BeginInterruption is for administrators"]))]])
        #expect(refused.status == 5 && refused.err == "scenectl: BeginInterruption is for administrators\n")
        #expect(access(marker, F_OK) != 0, "the command did not run")
        #expect(refused.calls.count == 1)

        let limited = ctl(["interrupt", "--", "touch", marker], replies: ["BeginInterruption": [.failure(VarlinkError(
            name: "io.scened.Manager.LimitExceeded",
            parameters: ["limit": "MaxInterruptionsPerConnection", "maximum": 64, "message": "this connection already holds 64 interruptions; end one first"]))]])
        #expect(limited.status == 1 && limited.err.contains("64 interruptions") && access(marker, F_OK) != 0)
    }

    @Test(.timeLimit(.minutes(1))) func withoutACommandItPrintsTheTokenAndEventsAndHoldsUntilStopped() {
        let checks = Locked(0)
        let stopAfterTwoLooks: () -> Bool = { checks.withLock { $0 += 1; return $0 > 2 } }
        let result = ctl(["interrupt"], replies: Self.replies, shouldStop: stopAfterTwoLooks)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.calls == [Self.begin("scenectl interrupt"), Self.end])
        #expect(checks.withLock { $0 } == 3, "it waited until told to stop")
        #expect(result.out == """
            i4
            SEQ EVENT            APP              SESSION STATE
             20 willResignActive com.example.mail s1      foregroundInactive

            1 event.
            SEQ EVENT           APP              SESSION STATE
             21 didBecomeActive com.example.mail s1      foregroundActive

            1 event.

            """)

        let json = ctl(["interrupt", "--json"], replies: Self.replies, shouldStop: { true })
        #expect(json.out == JSONValue.object(Self.events).serializedString() + "\n"
                + JSONValue.object(Self.endEvents).serializedString() + "\n")
        #expect(ctl(["interrupt", "-q"], replies: Self.replies, shouldStop: { true }).out.isEmpty)
    }

    @Test(.timeLimit(.minutes(1))) func anInterruptionEndedElsewhereIsNoFailure() {
        var replies = Self.replies
        replies["EndInterruption"] = [.failure(VarlinkError(name: "io.scened.Manager.NoSuchInterruption",
                                                            parameters: ["token": "i4", "message": "no interruption i4 is held"]))]
        let held = ctl(["interrupt"], replies: replies, shouldStop: { true })
        #expect(held.status == 0 && held.err.isEmpty)
        #expect(held.out.hasPrefix("i4\n") && !held.out.contains("didBecomeActive"))
        let command = ctl(["interrupt", "true"], replies: replies)
        #expect(command.status == 0 && command.err.isEmpty)
    }
}
