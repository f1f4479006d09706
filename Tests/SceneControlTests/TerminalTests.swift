import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The built scenectl on a real terminal (tmux, 80×24) against the real daemon: top's screen,
/// its updates from the event stream, its keys; the pager and -j, which depend on a terminal.
@Suite(.serialized) struct TerminalTests {
    /// A daemon with two apps, one live session in the foreground and one in the background.
    static func daemon() throws -> DaemonProcess {
        let daemon = try DaemonProcess(try Workspace())
        try daemon.call("Connect", ["app": "com.example.mail", "footprint": .int(300 << 20)])
        try daemon.call("Connect", ["app": "com.example.maps", "footprint": .int(1 << 30), "background": true])
        return daemon
    }

    func scenectl(_ daemon: DaemonProcess, _ arguments: [String]) -> [String] {
        [Binaries.scenectl, "--socket", daemon.socketPath] + arguments
    }

    @Test(.timeLimit(.minutes(1))) func topShowsLiveStateAndFollowsEvents() throws {
        let daemon = try Self.daemon()
        defer { try? daemon.stop() }
        // A long --delay: what changes on screen below comes from the event stream. The shell
        // around it reports the exit status on the screen (tmux may mark a pane dead at the
        // end of its output before it knows the status).
        let tmux = try Tmux(["/bin/sh", "-c", "\"$@\"; echo \"top exited with $?\"", "sh"] + scenectl(daemon, ["top", "--delay", "60s"]))
        var (held, screen) = try tmux.waitForScreen { $0.contains { $0.hasPrefix("s2 ") } }
        try #require(held, "top did not draw the sessions:\n\(screen.joined(separator: "\n"))")
        #expect(screen.count == 24 && screen.allSatisfy { $0.count <= 80 }, "not an 80×24 screen:\n\(screen.joined(separator: "\n"))")
        #expect(screen[0].hasPrefix("scened ") && screen.contains { $0.hasPrefix("Pressure: normal") && $0.contains("|") })
        #expect(screen.contains { $0.hasPrefix("com.example.maps ") && $0.hasSuffix("1.0G") })
        #expect(screen.last?.hasPrefix("q:quit") == true && screen.last?.hasSuffix("[footprint]") == true)
        // By footprint: the 1G session above the 300M one.
        let maps = screen.firstIndex { $0.hasPrefix("s2 ") }!, mail = screen.firstIndex { $0.hasPrefix("s1 ") }!
        #expect(maps < mail)

        // A new session and a reclaim action appear without waiting for the 60 s refresh.
        try daemon.call("Connect", ["app": "org.example.notes", "footprint": .int(10 << 20)])
        (held, screen) = try tmux.waitForScreen(seconds: 5) { $0.contains { $0.hasPrefix("s3 ") } }
        #expect(held, "the new session s3 did not show up:\n\(screen.joined(separator: "\n"))")
        try daemon.call("SetPressure", ["level": "critical"])
        (held, screen) = try tmux.waitForScreen(seconds: 10) { lines in
            lines.contains { $0.contains("didDisconnect s2 com.example.maps at critical") }
                && lines.contains { $0.hasPrefix("Pressure: critical") }
        }
        #expect(held, "the reclaim of s2 and the critical level did not show up:\n\(screen.joined(separator: "\n"))")

        // Keys: by name (the apps in alphabetical order), reversed, then quit.
        try tmux.send("n")
        (held, screen) = try tmux.waitForScreen(seconds: 5) { $0.last?.hasSuffix("[name]") == true }
        #expect(held)
        let order = screen.compactMap { line in ["com.example.mail", "com.example.maps", "org.example.notes"].first { line.hasPrefix($0 + " ") } }
        #expect(order == ["com.example.mail", "com.example.maps", "org.example.notes"], "\(screen.joined(separator: "\n"))")
        try tmux.send("r")
        (held, screen) = try tmux.waitForScreen(seconds: 5) { $0.last?.hasSuffix("[name, reversed]") == true }
        #expect(held)
        let reversed = screen.compactMap { line in ["com.example.mail", "com.example.maps", "org.example.notes"].first { line.hasPrefix($0 + " ") } }
        #expect(reversed == order.reversed())
        try tmux.send("q")
        // With the lines scrolled off: where tmux puts the cursor back varies.
        (held, screen) = try tmux.waitForScreen(seconds: 20, history: true) { $0.contains { $0.hasPrefix("top exited with ") } }
        #expect(held && screen.contains("top exited with 0"), "q did not end top with status 0:\n\(screen.joined(separator: "\n"))")
        // The alternate screen was left: the shell's screen is back, without top's lines (the
        // alternate screen has no history of its own).
        #expect(!screen.contains { $0.hasPrefix("Pressure:") }, "\(screen.joined(separator: "\n"))")
    }

    @Test(.timeLimit(.minutes(1))) func pagerAndJSONOnATerminal() throws {
        let daemon = try Self.daemon()
        defer { try? daemon.stop() }
        let pager = ["SCENECTL_PAGER": "sed 's/^/PAGED: /'"]
        let paged = try Tmux(scenectl(daemon, ["list"]), environment: pager)
        var (held, screen) = try paged.waitForScreen(history: true) { $0.contains { $0.hasPrefix("PAGED: 2 sessions listed.") } }
        #expect(held && screen.contains { $0.hasPrefix("PAGED: SESSION") }, "list did not go through the pager:\n\(screen.joined(separator: "\n"))")

        let unpaged = try Tmux(scenectl(daemon, ["--no-pager", "list"]), environment: pager)
        (held, screen) = try unpaged.waitForScreen(history: true) { $0.contains { $0.hasPrefix("2 sessions listed.") } }
        #expect(held && !screen.contains { $0.hasPrefix("PAGED") }, "--no-pager:\n\(screen.joined(separator: "\n"))")

        // Into a pipe: never a pager, whatever the environment says.
        let piped = try Tmux(["/bin/sh", "-c", (scenectl(daemon, ["list"]).map(Tmux.quote) + ["|", "cat"]).joined(separator: " ")],
                             environment: pager)
        (held, screen) = try piped.waitForScreen(history: true) { $0.contains { $0.hasPrefix("2 sessions listed.") } }
        #expect(held && !screen.contains { $0.hasPrefix("PAGED") }, "piped:\n\(screen.joined(separator: "\n"))")

        // -j on a terminal is pretty: one member per line (compact output has no " : ").
        let json = try Tmux(scenectl(daemon, ["-j", "status", "--no-pager"]))
        (held, screen) = try json.waitForScreen(history: true) { $0.contains { $0.contains("\"nextSeq\" : ") } }
        #expect(held, "-j on a terminal:\n\(screen.joined(separator: "\n"))")
    }
}
