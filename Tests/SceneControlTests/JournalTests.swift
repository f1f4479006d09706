import Glibc
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// `show` and `logs` reading journal files written by a private journald.
@Suite(.enabled(if: PrivateJournald.available, "needs root, unshare and systemd-journald"))
struct JournalTests {
    /// Runs scenectl on `journald`'s files.
    static func ctlJournal(_ journald: PrivateJournald, _ arguments: [String],
                           replies: [String: [Result<JSONObject, VarlinkError>]] = [:]) -> CtlResult {
        ctl(arguments + ["--journal-directory", journald.journalDirectory], replies: replies)
    }

    /// Waits until `logs` sees `count` scened entries (journald writes asynchronously).
    static func awaitEntries(_ journald: PrivateJournald, count: Int) throws {
        let deadline = monotonicSeconds() + 10
        while ctlJournal(journald, ["logs", "--no-legend"]).out.split(separator: "\n").count < count {
            guard monotonicSeconds() < deadline else { throw TestFailure("journald did not write \(count) entries") }
            usleep(10_000)
        }
    }

    /// "Nov 29 16:40:01 scened[1234]: text" with whatever time it was written.
    static func messages(_ lines: some Sequence<Substring>) -> [String] {
        lines.map { line in
            let pieces = line.split(separator: " ", maxSplits: 3)
            #expect(pieces.count == 4 && pieces[2].count == 8, "\(line)")
            return pieces.count == 4 ? String(pieces[3]) : String(line)
        }
    }

    @Test func showEndsWithTheSessionsRecentEntries() throws {
        let journald = try PrivateJournald()
        defer { journald.stop() }
        for i in 1...12 { try journald.log("s42 entry \(i)", session: "s42", app: "com.example.mail") }
        try journald.log("other session", session: "s43", app: "com.example.mail")
        try journald.log("not scened's", session: "s42", identifier: "impostor")
        try journald.log("two sessions", session: "s42\nignored")  // a value with a newline is not s42
        try Self.awaitEntries(journald, count: 14)

        let reply: [String: [Result<JSONObject, VarlinkError>]] = ["GetSession": [.success(["session": .object(Fixtures.session("s42"))])]]
        let shown = Self.ctlJournal(journald, ["show", "s42"], replies: reply)
        #expect(shown.status == 0)
        let parts = shown.out.split(separator: "\n\n", maxSplits: 1)
        try #require(parts.count == 2)
        #expect(parts[0].hasPrefix("● s42 - com.example.mail"))
        #expect(Self.messages(parts[1].split(separator: "\n")) == (3...12).map { "scened[1234]: s42 entry \($0)" })

        let two = Self.ctlJournal(journald, ["show", "s42", "-n", "2"], replies: reply)
        #expect(Self.messages(two.out.split(separator: "\n\n")[1].split(separator: "\n")) == ["scened[1234]: s42 entry 11", "scened[1234]: s42 entry 12"])
        let all = Self.ctlJournal(journald, ["show", "s42", "-n", "all"], replies: reply)
        #expect(Self.messages(all.out.split(separator: "\n\n")[1].split(separator: "\n")) == (1...12).map { "scened[1234]: s42 entry \($0)" })
        let none = Self.ctlJournal(journald, ["show", "s42", "-n", "0"], replies: reply)
        #expect(!none.out.contains("entry"))
        let unknown = Self.ctlJournal(journald, ["show", "s99"], replies: ["GetSession": [.success(["session": .object(Fixtures.session("s99"))])]])
        #expect(unknown.out.hasSuffix("Restoration: none\n"), "no entries: no journal section")
    }

    @Test func logsSelectsBySessionAndApp() throws {
        let journald = try PrivateJournald()
        defer { journald.stop() }
        try journald.log("launched", app: "com.example.mail", events: ["didFinishLaunching"])
        try journald.log("connected s1", session: "s1", app: "com.example.mail", events: ["willConnectTo", "willEnterForeground", "didBecomeActive"])
        try journald.log("connected s2", session: "s2", app: "org.example.notes")
        try journald.log("multi\nline", session: "s1", app: "com.example.mail")
        try Self.awaitEntries(journald, count: 4)

        let all = Self.ctlJournal(journald, ["logs"])
        #expect(all.status == 0)
        #expect(Self.messages(all.out.split(separator: "\n").filter { !$0.hasPrefix(" ") })
            == ["scened[1234]: launched", "scened[1234]: connected s1", "scened[1234]: connected s2", "scened[1234]: multi"])
        #expect(all.out.hasSuffix("scened[1234]: multi\n" + String(repeating: " ", count: 30) + "line\n"))

        let s1 = Self.ctlJournal(journald, ["logs", "s1", "-n", "1"])
        #expect(Self.messages(s1.out.split(separator: "\n").prefix(1)) == ["scened[1234]: multi"])
        let notes = Self.ctlJournal(journald, ["logs", "--app", "org.example.notes"])
        #expect(Self.messages(notes.out.split(separator: "\n")) == ["scened[1234]: connected s2"])
        let nothing = Self.ctlJournal(journald, ["logs", "s77"])
        #expect(nothing.out == "-- No entries --\n")
        #expect(Self.ctlJournal(journald, ["logs", "s77", "--json"]).out.isEmpty)

        let json = Self.ctlJournal(journald, ["logs", "s1", "--json"])
        let entries = try json.out.split(separator: "\n").map { try JSONParser.parse(String($0)) }
        try #require(entries.count == 2)
        #expect(entries[0]["MESSAGE"] == "connected s1")
        #expect(entries[0]["SCENED_EVENT"] == ["willConnectTo", "willEnterForeground", "didBecomeActive"])
        #expect(entries[0]["SCENED_SESSION"] == "s1")
        #expect(entries[1]["MESSAGE"] == "multi\nline")
        #expect(entries[0]["__REALTIME_TIMESTAMP"]?.stringValue.flatMap { UInt64($0) } != nil)
        #expect(entries[0]["__CURSOR"] != nil)
    }

    @Test func logsFollowPrintsNewEntriesOnce() throws {
        let journald = try PrivateJournald()
        defer { journald.stop() }
        for i in 1...3 { try journald.log("before \(i)", session: "s5") }
        try journald.log("elsewhere", session: "s6")
        try Self.awaitEntries(journald, count: 4)

        let out = CapturedOutput(), err = CapturedOutput()
        let stop = Shared(false)
        let status = Shared<Int32>(-1)
        let directory = journald.journalDirectory
        let follower = TestThread {
            let context = Context(out: out, err: err, connect: { _, _ in RecordingTransport() }, utc: true,
                                  shouldStop: { stop.value })
            let code = SceneCtl.run(["logs", "s5", "-f", "-n", "2", "--journal-directory", directory], context: context)
            status.update { $0 = code }
        }
        #expect(out.wait { $0.split(separator: "\n").count == 2 })
        for i in 1...3 { try journald.log("after \(i)", session: "s5") }
        try journald.log("elsewhere again", session: "s6")
        #expect(out.wait { $0.split(separator: "\n").count == 5 })
        usleep(300_000)  // anything printed twice would show up by now
        stop.update { $0 = true }
        follower.join()
        #expect(status.value == 0)
        #expect(err.text.isEmpty)
        #expect(Self.messages(out.text.split(separator: "\n"))
            == ["before 2", "before 3", "after 1", "after 2", "after 3"].map { "scened[1234]: " + $0 })
    }

    @Test func followWithNothingYetStartsAtTheFirstNewEntry() throws {
        let journald = try PrivateJournald()
        defer { journald.stop() }
        try journald.log("unrelated", session: "s1")
        try Self.awaitEntries(journald, count: 1)
        let out = CapturedOutput()
        let stop = Shared(false)
        let directory = journald.journalDirectory
        let follower = TestThread {
            let context = Context(out: out, err: CapturedOutput(), connect: { _, _ in RecordingTransport() }, utc: true,
                                  shouldStop: { stop.value })
            _ = SceneCtl.run(["logs", "s2", "-f", "--journal-directory", directory], context: context)
        }
        usleep(200_000)
        for i in 1...3 { try journald.log("new \(i)", session: "s2") }
        #expect(out.wait { $0.split(separator: "\n").count == 3 })
        stop.update { $0 = true }
        follower.join()
        #expect(Self.messages(out.text.split(separator: "\n")) == (1...3).map { "scened[1234]: new \($0)" })
    }
}

/// Without a readable journal, `show` says so in one line and `logs` fails; no journald needed.
@Suite struct JournalUnavailableTests {
    @Test func showStillShowsTheSession() {
        let result = ctl(["show", "s42", "--journal-directory", "/nonexistent/journal"],
                         replies: ["GetSession": [.success(["session": .object(Fixtures.session("s42"))])]])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("● s42 - com.example.mail\n"))
        #expect(result.out.hasSuffix("\n\nJournal entries unavailable: sd_journal_open_directory: ENOENT (No such file or directory)\n"))
        #expect(result.err.isEmpty)
    }

    @Test func logsFails() {
        let result = ctl(["logs", "--journal-directory", "/nonexistent/journal"])
        #expect(result.status == 1)
        #expect(result.err == "scenectl: cannot read the journal: sd_journal_open_directory: ENOENT (No such file or directory)\n")
        #expect(result.out.isEmpty)
        #expect(result.connections.isEmpty, "logs reads the journal only")
    }
}
