import Glibc
import ScenedTestSupport
import SystemdKit

/// The journal checks, meant to run inside the private mount and PID namespaces that
/// PrivateJournaldTests sets up, where /run is a fresh tmpfs: journald's socket path is ours to
/// play with ("no-journald") or belongs to a private journald ("journald"). Each check only
/// ever removes a socket it bound itself.
struct JournaldChecks {
    static let socketPath = "/run/systemd/journal/socket"

    // MARK: Without journald

    func missingSocketDropsSilently(_ check: Check) {
        check.expect(access(Self.socketPath, F_OK) != 0, "\(Self.socketPath) absent")
        // libsystemd's choice: no journald at all is not an error.
        check.expectEqual(Journal.send([.message("into the void")]), 0, "Journal.send without journald")
    }

    func staleSocketIsRefused(_ check: Check) throws {
        mkdir("/run/systemd", 0o755)
        mkdir("/run/systemd/journal", 0o755)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let bound = withUnixAddress(Self.socketPath) { bind(fd, $0, $1) }
        let bindError = errno
        close(fd) // the socket file stays, nobody listens: what a crashed journald leaves
        try check.require(bound == 0, "bind \(Self.socketPath) to succeed (\(errnoText(bindError)))")
        defer { unlink(Self.socketPath) }
        check.expectEqual(Journal.send([.message("stale")]), -ECONNREFUSED, "Journal.send to a stale socket")
    }

    /// Playing journald: the exact datagram sd_journal_sendv makes from our iovecs.
    func wireFormat(_ check: Check) throws {
        mkdir("/run/systemd", 0o755)
        mkdir("/run/systemd/journal", 0o755)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        let bound = withUnixAddress(Self.socketPath) { bind(fd, $0, $1) }
        let bindError = errno
        try check.require(bound == 0, "bind \(Self.socketPath) to succeed (\(errnoText(bindError)))")
        defer { unlink(Self.socketPath) }

        func receive() -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 2_000) == 1 else { return [] }
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? Array(buffer[..<n]) : []
        }

        check.expectEqual(Journal.send([
            .message("hi"), .priority(.notice), .syslogIdentifier("systemdkit-test"),
            JournalField(name: "MULTI", value: "a\nb"), JournalField(name: "BLOB", bytes: [0, 0xff]),
            JournalField(name: "EMPTY", value: ""),
        ]), 0, "Journal.send")
        // Plain fields as NAME=value lines; a value with a newline as NAME, newline,
        // 64-bit little-endian length, the bytes, newline.
        let expected = Array("MESSAGE=hi\nPRIORITY=5\nSYSLOG_IDENTIFIER=systemdkit-test\nMULTI\n".utf8)
            + [3, 0, 0, 0, 0, 0, 0, 0] + Array("a\nb\nBLOB=".utf8) + [0, 0xff] + Array("\nEMPTY=\n".utf8)
        check.expectEqual(receive(), expected, "the datagram")

        // Without SYSLOG_IDENTIFIER libsystemd appends the program name.
        check.expectEqual(Journal.send([.message("x")]), 0, "Journal.send")
        let text = String(decoding: receive(), as: UTF8.self)
        check.expect(text.hasPrefix("MESSAGE=x\nSYSLOG_IDENTIFIER="),
                     "datagram \(show(text)) starts with MESSAGE=x and SYSLOG_IDENTIFIER=")
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

    func fieldsRoundTrip(_ check: Check) throws {
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: runID())
        let big = [UInt8](repeating: UInt8(ascii: "z"), count: 100_000)
        let sentAt = Clock.realtime.now()
        check.expectEqual(Journal.send([
            .message("first"), run, .syslogIdentifier("systemdkit-test"), .priority(.warning),
            JournalField(name: "TAG", value: "a"), JournalField(name: "TAG", value: "b"),
            JournalField(name: "BLOB", bytes: [0, 1, 10, 255, 61]), JournalField(name: "BIG", bytes: big),
        ]), 0, "Journal.send")
        let logLine = #line + 1
        check.expectEqual(Journal.log(.info, "second\nwith a newline", [run]), 0, "Journal.log")

        let reader = try JournalReader()
        try reader.addMatch(run.description)
        check.expectEqual(try awaitEntries(reader, count: 2), ["first", "second\nwith a newline"], "the messages")

        try reader.seekHead()
        try check.require(reader.next(), "a first entry")
        check.expectEqual(reader.field("MESSAGE"), "first", "MESSAGE")
        check.expectEqual(reader.field("PRIORITY"), "4", "PRIORITY")
        check.expectEqual(reader.field("SYSLOG_IDENTIFIER"), "systemdkit-test", "SYSLOG_IDENTIFIER")
        check.expectEqual(reader.field("TAG"), "a", "TAG")
        check.expectEqual(reader.allValues(of: "TAG"), ["a", "b"], "all TAG values")
        check.expectEqual(reader.allValues(of: "TA"), [], "all TA values")
        check.expectEqual(reader.data("BLOB"), [0, 1, 10, 255, 61], "BLOB")
        check.expectEqual(reader.field("NO_SUCH_FIELD"), nil, "NO_SUCH_FIELD")
        // Trusted fields come from journald, not from us.
        check.expectEqual(reader.field("_PID"), String(getpid()), "_PID")
        check.expect(reader.realtimeUSec.map { $0 >= sentAt - 1_000_000 && $0 <= Clock.realtime.now() } == true,
                     "realtime \(show(reader.realtimeUSec)) between the send (\(sentAt)) and now")
        let names = Set(reader.allFields().map(\.name))
        let wanted: Set = ["MESSAGE", "TAG", "BLOB", "SYSTEMDKIT_RUN", "_PID", "_BOOT_ID"]
        check.expect(names.isSuperset(of: wanted),
                     "field names lack \(show(wanted.subtracting(names).sorted()))")
        check.expectEqual(reader.allFields().filter { $0.name == "TAG" }.map(\.value), ["a", "b"],
                          "TAG in allFields()")
        // Without a threshold even a large (possibly compressed) field comes back whole.
        try reader.setDataThreshold(0)
        let bigRead = reader.data("BIG")
        check.expect(bigRead == big, "BIG came back with \(show(bigRead?.count)) bytes, not the 100000 sent")

        try check.require(reader.next(), "a second entry")
        check.expectEqual(reader.field("MESSAGE"), "second\nwith a newline", "MESSAGE")
        check.expectEqual(reader.field("PRIORITY"), "6", "PRIORITY")
        check.expectEqual(reader.field("CODE_FILE"), "systemdkit_probe/JournaldChecks.swift", "CODE_FILE")
        check.expectEqual(reader.field("CODE_LINE"), String(logLine), "CODE_LINE")
        check.expectEqual(reader.field("CODE_FUNC"), "fieldsRoundTrip(_:)", "CODE_FUNC")
        check.expectEqual(reader.next(), false, "a third entry")
    }

    func matchesAndCursors(_ check: Check) throws {
        let id = runID()
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: id)
        for kind in ["x", "y", "z"] {
            check.expectEqual(Journal.send([.message("kind \(kind)"), run, JournalField(name: "KIND", value: kind)]),
                              0, "Journal.send kind \(kind)")
        }
        let reader = try JournalReader()
        try reader.addMatch(run.description)
        check.expectEqual(try awaitEntries(reader, count: 3), ["kind x", "kind y", "kind z"], "all of the run")

        // Same field twice: OR; different fields: AND.
        reader.flushMatches()
        try reader.addMatch(run.description)
        try reader.addMatch("KIND=x")
        try reader.addMatch("KIND=y")
        check.expectEqual(try awaitEntries(reader, count: 2), ["kind x", "kind y"], "run AND (KIND=x OR KIND=y)")

        // (KIND=x OR KIND=z) AND run, built with a disjunction and a conjunction.
        reader.flushMatches()
        try reader.addMatch("KIND=x")
        try reader.addDisjunction()
        try reader.addMatch("KIND=z")
        try reader.addConjunction()
        try reader.addMatch(run.description)
        check.expectEqual(try awaitEntries(reader, count: 2), ["kind x", "kind z"], "(KIND=x OR KIND=z) AND run")

        check.expectThrows(SystemdError(errno: EINVAL, function: "sd_journal_add_match"),
                           "addMatch(\"no equals sign\")") {
            try reader.addMatch("no equals sign")
        }

        // Cursors, seeking both ways.
        reader.flushMatches()
        try reader.addMatch(run.description)
        try reader.seekHead()
        try check.require(reader.next(), "a first entry")
        let firstCursor = try check.require(reader.cursor, "the first entry's cursor")
        try check.require(reader.next(), "a second entry")
        check.expectEqual(reader.test(cursor: firstCursor), false, "test(cursor:) on the second entry")
        try reader.seek(cursor: firstCursor)
        try check.require(reader.next(), "an entry at the first cursor")
        check.expectEqual(reader.test(cursor: firstCursor), true, "test(cursor:) after seek(cursor:)")
        check.expectEqual(reader.field("MESSAGE"), "kind x", "MESSAGE at the first cursor")
        try reader.seekTail()
        try check.require(reader.previous(), "an entry before the tail")
        check.expectEqual(reader.field("MESSAGE"), "kind z", "MESSAGE before the tail")
        try check.require(reader.previous(), "an entry before that")
        check.expectEqual(reader.field("MESSAGE"), "kind y", "MESSAGE two before the tail")
        let time = try check.require(reader.realtimeUSec, "the entry's realtime")
        try reader.seek(realtimeUSec: time)
        try check.require(reader.next(), "an entry at that realtime")
        check.expectEqual(reader.field("MESSAGE"), "kind y", "MESSAGE after seek(realtimeUSec:)")
    }

    func directoryAndFiles(_ check: Check) throws {
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: runID())
        check.expectEqual(Journal.send([.message("on disk"), run]), 0, "Journal.send")
        // Wait through the default reader so the entry is surely written.
        let all = try JournalReader()
        try all.addMatch(run.description)
        check.expectEqual(try awaitEntries(all, count: 1), ["on disk"], "the default reader's entries")

        let machineID = try readExistingTextFile("/etc/machine-id").filter { !$0.isWhitespace }
        let directory = "/run/log/journal/" + machineID
        let byDirectory = try JournalReader(directory: directory)
        try byDirectory.addMatch(run.description)
        check.expectEqual(try awaitEntries(byDirectory, count: 1), ["on disk"], "\(directory)'s entries")

        let byFile = try JournalReader(files: [directory + "/system.journal"])
        try byFile.addMatch(run.description)
        check.expectEqual(try awaitEntries(byFile, count: 1), ["on disk"], "system.journal's entries")

        check.expectThrows(SystemdError.self, "JournalReader(files: [\"/nonexistent/system.journal\"])") {
            _ = try JournalReader(files: ["/nonexistent/system.journal"])
        }
    }

    /// Follow mode as the daemon would do it: the readers' fds in the event loop. One reader
    /// already has a matching entry, the other none yet (where a bare seekTail() loses entries).
    func followInEventLoop(_ check: Check) throws {
        let run = JournalField(name: "SYSTEMDKIT_RUN", value: runID())
        let followed = JournalField(name: "KIND", value: "followed")
        check.expectEqual(Journal.send([.message("before following"), run]), 0, "Journal.send")
        let withHistory = try JournalReader()
        let withoutHistory = try JournalReader()
        let fds = (try withHistory.fd, try withoutHistory.fd)
        try withHistory.addMatch(run.description)
        check.expectEqual(try awaitEntries(withHistory, count: 1), ["before following"], "the history")
        try withoutHistory.addMatch(run.description)
        try withoutHistory.addMatch(followed.description)

        let loop = try EventLoop()
        // A safety timer: a stuck loop ends with `stuck` instead of hanging the probe.
        let stuck: Int32 = 99
        try loop.addTimer(at: Clock.monotonic.now() + 10_000_000, accuracy: 1) { [unowned loop] in
            loop.exit(code: stuck)
        }
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
        check.expectEqual(try loop.run(), 0, "the loop's exit code (\(stuck): stuck)")
        check.expectEqual(seen, [["followed 1", "followed 2"], ["followed 1", "followed 2"]], "the followed messages")
        check.expect(changes.contains(.append) || changes.contains(.invalidate),
                     "changes \(show(changes)) include .append or .invalidate")
    }
}
