import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

/// Runs only in a test binary that PrivateJournaldTests re-executes inside private
/// namespaces, where /run is a fresh tmpfs: journald's socket path is ours to play with
/// ("no-journald") or belongs to a private journald ("journald").
@Suite(.serialized) struct JournaldChild {
    static let socketPath = "/run/systemd/journal/socket"

    /// Records that test `name` got to its end, for the parent to check.
    func finished(_ name: String) {
        guard let marker = getenv("SYSTEMDKIT_CHILD_MARKER") else { return }
        let fd = open(marker, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        writeString(fd, name + "\n")
        close(fd)
    }

    // MARK: Without journald

    @Test(.enabled(if: childRole == "no-journald")) func missingSocketDropsSilently() {
        #expect(access(Self.socketPath, F_OK) != 0)
        // libsystemd's choice: no journald at all is not an error.
        #expect(Journal.send([.message("into the void")]) == 0)
        finished("missingSocketDropsSilently")
    }

    @Test(.enabled(if: childRole == "no-journald")) func staleSocketIsRefused() throws {
        mkdir("/run/systemd", 0o755)
        mkdir("/run/systemd/journal", 0o755)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(withUnixAddress(Self.socketPath) { bind(fd, $0, $1) } == 0)
        close(fd) // the socket file stays, nobody listens: what a crashed journald leaves
        #expect(Journal.send([.message("stale")]) == -ECONNREFUSED)
        unlink(Self.socketPath)
        finished("staleSocketIsRefused")
    }

    /// Playing journald: the exact datagram sd_journal_sendv makes from our iovecs.
    @Test(.enabled(if: childRole == "no-journald")) func wireFormat() throws {
        mkdir("/run/systemd", 0o755)
        mkdir("/run/systemd/journal", 0o755)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd); unlink(Self.socketPath) }
        try #require(withUnixAddress(Self.socketPath) { bind(fd, $0, $1) } == 0)

        func receive() -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 2_000) == 1 else { return [] }
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? Array(buffer[..<n]) : []
        }

        #expect(Journal.send([
            .message("hi"), .priority(.notice), .syslogIdentifier("systemdkit-test"),
            JournalField(name: "MULTI", value: "a\nb"), JournalField(name: "BLOB", bytes: [0, 0xff]),
            JournalField(name: "EMPTY", value: ""),
        ]) == 0)
        // Plain fields as NAME=value lines; a value with a newline as NAME, newline,
        // 64-bit little-endian length, the bytes, newline.
        let expected = Array("MESSAGE=hi\nPRIORITY=5\nSYSLOG_IDENTIFIER=systemdkit-test\nMULTI\n".utf8)
            + [3, 0, 0, 0, 0, 0, 0, 0] + Array("a\nb\nBLOB=".utf8) + [0, 0xff] + Array("\nEMPTY=\n".utf8)
        #expect(receive() == expected)

        // Without SYSLOG_IDENTIFIER libsystemd appends the program name.
        #expect(Journal.send([.message("x")]) == 0)
        let text = String(decoding: receive(), as: UTF8.self)
        #expect(text.hasPrefix("MESSAGE=x\nSYSLOG_IDENTIFIER="))
        finished("wireFormat")
    }

    // MARK: With a private journald

    /// Reads until `reader` (already filtered) has at least `count` entries from the head.
    func awaitEntries(_ reader: JournalReader, count: Int) throws -> [String] {
        let deadline = Clock.monotonic.now() + 10_000_000
        while true {
            try reader.seekHead()
            var messages: [String] = []
            while reader.next() { messages.append(reader.field("MESSAGE") ?? "") }
            if messages.count >= count || Clock.monotonic.now() > deadline { return messages }
            _ = try reader.wait(timeoutUSec: 100_000)
        }
    }

    func runID() -> String { "\(getpid())-\(Clock.realtime.now())" }

    @Test(.enabled(if: childRole == "journald")) func fieldsRoundTrip() throws {
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: runID())
        let big = [UInt8](repeating: UInt8(ascii: "z"), count: 100_000)
        let sentAt = Clock.realtime.now()
        #expect(Journal.send([
            .message("first"), run, .syslogIdentifier("systemdkit-test"), .priority(.warning),
            JournalField(name: "TAG", value: "a"), JournalField(name: "TAG", value: "b"),
            JournalField(name: "BLOB", bytes: [0, 1, 10, 255, 61]), JournalField(name: "BIG", bytes: big),
        ]) == 0)
        let logLine = #line + 1
        #expect(Journal.log(.info, "second\nwith a newline", [run]) == 0)

        let reader = try JournalReader()
        try reader.addMatch(run.description)
        #expect(try awaitEntries(reader, count: 2) == ["first", "second\nwith a newline"])

        try reader.seekHead()
        try #require(reader.next())
        #expect(reader.field("MESSAGE") == "first")
        #expect(reader.field("PRIORITY") == "4")
        #expect(reader.field("SYSLOG_IDENTIFIER") == "systemdkit-test")
        #expect(reader.field("TAG") == "a")
        #expect(reader.allValues(of: "TAG") == ["a", "b"])
        #expect(reader.allValues(of: "TA") == [])
        #expect(reader.data("BLOB") == [0, 1, 10, 255, 61])
        #expect(reader.field("NO_SUCH_FIELD") == nil)
        // Trusted fields come from journald, not from us.
        #expect(reader.field("_PID") == String(getpid()))
        #expect(reader.realtimeUSec.map { $0 >= sentAt - 1_000_000 && $0 <= Clock.realtime.now() } == true)
        let names = Set(reader.allFields().map(\.name))
        #expect(names.isSuperset(of: ["MESSAGE", "TAG", "BLOB", "SYSTEMDKIT_RUN", "_PID", "_BOOT_ID"]))
        #expect(reader.allFields().filter { $0.name == "TAG" }.map(\.value) == ["a", "b"])
        // Without a threshold even a large (possibly compressed) field comes back whole.
        try reader.setDataThreshold(0)
        #expect(reader.data("BIG") == big)

        try #require(reader.next())
        #expect(reader.field("MESSAGE") == "second\nwith a newline")
        #expect(reader.field("PRIORITY") == "6")
        #expect(reader.field("CODE_FILE") == "SystemdKitTests/JournaldChild.swift")
        #expect(reader.field("CODE_LINE") == String(logLine))
        #expect(reader.field("CODE_FUNC") == "fieldsRoundTrip()")
        #expect(reader.next() == false)
        finished("fieldsRoundTrip")
    }

    @Test(.enabled(if: childRole == "journald")) func matchesAndCursors() throws {
        let id = runID()
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: id)
        for kind in ["x", "y", "z"] {
            #expect(Journal.send([.message("kind \(kind)"), run, JournalField(name: "KIND", value: kind)]) == 0)
        }
        let reader = try JournalReader()
        try reader.addMatch(run.description)
        #expect(try awaitEntries(reader, count: 3) == ["kind x", "kind y", "kind z"])

        // Same field twice: OR; different fields: AND.
        reader.flushMatches()
        try reader.addMatch(run.description)
        try reader.addMatch("KIND=x")
        try reader.addMatch("KIND=y")
        #expect(try awaitEntries(reader, count: 2) == ["kind x", "kind y"])

        // (KIND=x OR KIND=z) AND run, built with a disjunction and a conjunction.
        reader.flushMatches()
        try reader.addMatch("KIND=x")
        try reader.addDisjunction()
        try reader.addMatch("KIND=z")
        try reader.addConjunction()
        try reader.addMatch(run.description)
        #expect(try awaitEntries(reader, count: 2) == ["kind x", "kind z"])

        #expect(throws: SystemdError(errno: EINVAL, function: "sd_journal_add_match")) {
            try reader.addMatch("no equals sign")
        }

        // Cursors, seeking both ways.
        reader.flushMatches()
        try reader.addMatch(run.description)
        try reader.seekHead()
        try #require(reader.next())
        let firstCursor = try #require(reader.cursor)
        try #require(reader.next())
        #expect(reader.test(cursor: firstCursor) == false)
        try reader.seek(cursor: firstCursor)
        try #require(reader.next())
        #expect(reader.test(cursor: firstCursor))
        #expect(reader.field("MESSAGE") == "kind x")
        try reader.seekTail()
        try #require(reader.previous())
        #expect(reader.field("MESSAGE") == "kind z")
        try #require(reader.previous())
        #expect(reader.field("MESSAGE") == "kind y")
        let time = try #require(reader.realtimeUSec)
        try reader.seek(realtimeUSec: time)
        try #require(reader.next())
        #expect(reader.field("MESSAGE") == "kind y")
        finished("matchesAndCursors")
    }

    @Test(.enabled(if: childRole == "journald")) func directoryAndFiles() throws {
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: runID())
        #expect(Journal.send([.message("on disk"), run]) == 0)
        // Wait through the default reader so the entry is surely written.
        let all = try JournalReader()
        try all.addMatch(run.description)
        #expect(try awaitEntries(all, count: 1) == ["on disk"])

        let machineID = try readExistingTextFile("/etc/machine-id").filter { !$0.isWhitespace }
        let directory = "/run/log/journal/" + machineID
        let byDirectory = try JournalReader(directory: directory)
        try byDirectory.addMatch(run.description)
        #expect(try awaitEntries(byDirectory, count: 1) == ["on disk"])

        let byFile = try JournalReader(files: [directory + "/system.journal"])
        try byFile.addMatch(run.description)
        #expect(try awaitEntries(byFile, count: 1) == ["on disk"])

        #expect(throws: SystemdError.self) { try JournalReader(files: ["/nonexistent/system.journal"]) }
        finished("directoryAndFiles")
    }

    /// Follow mode as the daemon would do it: the readers' fds in the event loop. One reader
    /// already has a matching entry, the other none yet (where a bare seekTail() loses entries).
    @Test(.enabled(if: childRole == "journald")) func followInEventLoop() throws {
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: runID())
        let followed = JournalField(name: "KIND", value: "followed")
        #expect(Journal.send([.message("before following"), run]) == 0)
        let withHistory = try JournalReader()
        let withoutHistory = try JournalReader()
        let fds = (try withHistory.fd, try withoutHistory.fd)
        try withHistory.addMatch(run.description)
        #expect(try awaitEntries(withHistory, count: 1) == ["before following"])
        try withoutHistory.addMatch(run.description)
        try withoutHistory.addMatch(followed.description)

        let loop = try EventLoop()
        try loop.addSafetyTimer(seconds: 10)
        var seen: [[String]] = [[], []]
        var changes: [JournalReader.WaitResult] = []
        for (index, (reader, fd)) in [(withHistory, fds.0), (withoutHistory, fds.1)].enumerated() {
            try reader.seekAfterLastEntry()
            try loop.addIO(fd: fd, events: try reader.pollEvents) { [unowned loop] _ in
                guard let change = try? reader.process() else { return }
                changes.append(change)
                while reader.next() { seen[index].append(reader.field("MESSAGE") ?? "") }
                if seen.allSatisfy({ $0.count >= 2 }) { loop.exit(code: 0) }
            }
        }
        try loop.addTimer(at: 0, accuracy: 1) {
            Journal.send([.message("followed 1"), run, followed])
            Journal.send([.message("followed 2"), run, followed])
        }
        #expect(try loop.run() == 0)
        #expect(seen == [["followed 1", "followed 2"], ["followed 1", "followed 2"]])
        #expect(changes.contains(.append) || changes.contains(.invalidate))
        finished("followInEventLoop")
    }
}
