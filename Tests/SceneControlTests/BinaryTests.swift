import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The built scenectl binary, for what only a real process shows: every monitor line reaches
/// a pipe at once, SIGINT and a closed pipe end it with status 0.
@Suite struct BinaryTests {
    let binary = Binaries.scenectl

    /// A daemon that streams `first` events at once, then one more each time `release` is bumped,
    /// and otherwise keeps the connection open until `done`.
    static func streamingDaemon(release: Shared<Int>, done: Shared<Bool>) throws -> ScriptedDaemon {
        try ScriptedDaemon { _, peer in
            peer.reply([:], continues: true)
            var sent = 0
            let deadline = monotonicSeconds() + 10
            while !done.value && monotonicSeconds() < deadline {
                if sent < release.value {
                    sent += 1
                    peer.reply(["event": .object(LiveSocketTests.event(Int64(sent), "didBecomeActive"))], continues: true)
                }
                usleep(1_000)
            }
            return false
        }
    }

    @Test func monitorLinesReachAPipeAtOnceAndSIGINTExitsZero() throws {
        #expect(access(binary, X_OK) == 0, "\(binary) not built")
        let release = Shared(1), done = Shared(false)
        let daemon = try Self.streamingDaemon(release: release, done: done)
        defer { done.update { $0 = true }; daemon.stop() }
        let child = try ChildProcess([binary, "--socket", daemon.path, "monitor", "--json"],
                                     directory: daemon.directory.path, label: "scenectl", stdoutPipe: true)
        // The daemon sends the next event only after the previous line was read from the pipe.
        for seq in 1...3 {
            let line = try #require(child.readLine(), "event \(seq) did not arrive; stderr: \(child.stderr)")
            #expect(try JSONParser.parse(line)["seq"] == .int(Int64(seq)))
            release.update { $0 += 1 }
        }
        kill(child.pid, SIGINT)
        #expect(child.finish(within: 10) == 0, "\(child.outcome)")
        #expect(child.stderr.isEmpty)
    }

    @Test func monitorExitsZeroWhenThePipeCloses() throws {
        let release = Shared(1), done = Shared(false)
        let daemon = try Self.streamingDaemon(release: release, done: done)
        defer { done.update { $0 = true }; daemon.stop() }
        let child = try ChildProcess([binary, "--socket", daemon.path, "monitor"],
                                     directory: daemon.directory.path, label: "scenectl", stdoutPipe: true)
        #expect(child.readLine()?.hasPrefix("    SEQ TIME") == true)
        #expect(child.readLine()?.hasPrefix("      1 ") == true)
        child.closeStdout()
        release.update { $0 = 100 }
        #expect(child.finish(within: 10) == 0, "\(child.outcome)")
        #expect(child.stderr.isEmpty)
    }

    @Test func statusAgainstASocketThatIsNotThere() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let child = try ChildProcess([binary, "--socket", directory.path + "/sock", "status"],
                                     directory: directory.path, label: "scenectl", stdoutPipe: true)
        #expect(child.readLine() == nil)
        #expect(child.finish(within: 10) == 3, "\(child.outcome)")
        #expect(child.stderr == "scenectl: cannot connect to \(directory.path)/sock: No such file or directory; is scened running?\n")
    }
}
