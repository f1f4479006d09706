import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 10, item 6: stored data is not trusted blindly. A damaged row is quarantined (kept,
/// never served, reported); a damaged write-ahead log is refused with its evidence copied aside
/// until the operator asks for recovery; what a crash leaves starts as usual; no identifier or
/// sequence number is handed out twice.
@Suite("Durability: damaged storage", .serialized)
struct DamagedStorageTests {
    /// Connects `count` sessions (one commit each) and returns their ids and the highest
    /// sequence number of their events.
    static func connect(_ daemon: Scened, count: Int, app: String = "org.damage.a") throws -> (ids: [UInt64], lastSeq: Int64) {
        let client = try daemon.client()
        var ids: [UInt64] = []
        var lastSeq: Int64 = 0
        for i in 0..<count {
            let reply = try client.call("io.scened.Manager.Connect",
                                        ["app": .string(app), "background": .bool(i % 2 == 0),
                                         "userInfo": ["i": .int(Int64(i)), "pad": .string(String(repeating: "d", count: 200))]])
            ids.append(try #require(reply["session"]?["id"]?.identifierNumber))
            lastSeq = max(lastSeq, reply["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue }.max() ?? 0)
        }
        return (ids, lastSeq)
    }

    static func listed(_ daemon: Scened) throws -> [String] {
        var ids: [String] = []
        try daemon.client().callMore("io.scened.Manager.ListSessions") { reply in
            ids += reply["sessions"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            return true
        }
        let unstreamed = try daemon.call("ListSessions")["sessions"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
        #expect(unstreamed == ids, "ListSessions with and without more disagree")
        return ids
    }

    static func expectQuarantinedRefusal(_ daemon: Scened, _ method: String, _ session: String,
                                         sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try daemon.call(method, ["session": .string(session)])
            Issue.record("\(method) \(session) succeeded", sourceLocation: sourceLocation)
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.NoSuchSession", "\(error)", sourceLocation: sourceLocation)
            let message = error.parameters["message"]?.stringValue ?? ""
            #expect(message.contains("session \(session) is quarantined"), "\(message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(method) \(session): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("a session row whose userInfo is not JSON and one whose state is out of range: the daemon starts, neither is served, ListSessions works for everyone, GetStatus and scenectl status count them, their ids are never handed out again")
    func damagedRowsAreQuarantined() throws {
        let workspace = try DaemonWorkspace()
        let first = try workspace.start()
        let (ids, _) = try Self.connect(first, count: 5)
        try #require(ids == [1, 2, 3, 4, 5])
        try first.stop()
        let inspector = try DatabaseInspector(directory: workspace.path)
        // s5 is the highest: with the counter lowered too, only its damaged row holds its id.
        // s2's userInfo is small (its size says so), so start-up reads and checks it; a large
        // one is left in the store and checked when read (SavedDataTests).
        try inspector.damage(workspace.databasePath, """
            UPDATE sessions SET user_info = '{"i": 1, "pad"', user_info_size = 13 WHERE id = 2;
            UPDATE sessions SET scene_state = 9 WHERE id = 5;
            UPDATE counters SET next_session = 5;
            """)

        let daemon = try workspace.start()
        #expect(daemon.stderr.contains("Stored session s2 is damaged and quarantined"), "stderr:\n\(daemon.stderr)")
        #expect(daemon.stderr.contains("Stored session s5 is damaged and quarantined: it is kept in the database but not served (scene state 9 is not one)"))
        #expect(try Self.listed(daemon) == ["s1", "s3", "s4"])
        // Other clients' listing and calls go on as usual.
        let app = try daemon.call("GetApp", ["app": "org.damage.a"])["app"]
        #expect(app?["sessions"]?.intValue == 3)
        let status = try daemon.call("GetStatus")["status"]
        #expect(status?["quarantined"]?.intValue == 2)
        #expect(status?["sessions"]?["total"]?.intValue == 3)
        for method in ["GetSession", "Activate", "Discard"] { Self.expectQuarantinedRefusal(daemon, method, "s2") }
        Self.expectQuarantinedRefusal(daemon, "Background", "s5")

        let control = try run([Binaries.require(Binaries.scenectl), "--socket", workspace.socketPath, "status"], in: workspace.path)
        #expect(control.status == 0, "\(control.summary)")
        #expect(control.stdout.contains("Quarantined: 2 stored rows (damaged on disk; journalctl -u scened MESSAGE_ID="),
                "\(control.stdout)")

        let next = try daemon.call("Connect", ["app": "org.damage.a"])["session"]?["id"]?.stringValue
        #expect(next == "s6", "the next session reused a quarantined id: \(next ?? "none")")
        try daemon.stop()

        // Kept: both rows are where they were, recorded with their reasons.
        let rows = try inspector.query(workspace.databasePath, "SELECT id, scene_state FROM sessions WHERE id IN (2, 5) ORDER BY id")
        #expect(rows.map(\.first) == ["2", "5"] && rows.last?.last == "9", "\(rows)")
        let recorded = try inspector.query(workspace.databasePath, "SELECT table_name, row_key FROM quarantine ORDER BY row_key")
        #expect(recorded == [["sessions", "2"], ["sessions", "5"]])

        // And again after a restart: still quarantined, s6 kept.
        let again = try workspace.start()
        #expect(try Self.listed(again) == ["s1", "s3", "s4", "s6"])
        #expect(try again.call("GetStatus")["status"]?["quarantined"]?.intValue == 2)
        try again.stop()
    }

    @Test("a session id damaged far beyond the counters (a decodable row): served, and the next id is above it; nothing sized by the gap")
    func farSessionIdRaisesTheCounter() throws {
        let workspace = try DaemonWorkspace()
        let first = try workspace.start()
        _ = try Self.connect(first, count: 4)
        try first.stop()
        let far: UInt64 = 1 << 40
        try DatabaseInspector(directory: workspace.path).damage(workspace.databasePath,
                                                                "UPDATE sessions SET id = \(far) WHERE id = 3")
        let daemon = try workspace.start()
        #expect(try Self.listed(daemon) == ["s1", "s2", "s4", "s\(far)"])
        let next = try daemon.call("Connect", ["app": "org.damage.a"])["session"]?["id"]?.identifierNumber
        #expect(next == far + 1)
        _ = try daemon.call("Activate", ["session": .string("s\(far)")])
        _ = try daemon.call("Background", ["session": .string("s\(far + 1)")])
        _ = try daemon.call("Activate", ["session": .string("s\(far + 1)")])
        #expect(daemon.isRunning)
        try daemon.stop()
    }

    /// Runs a daemon, commits `count` sessions, kills it (the commits stay in the -wal), and
    /// damages one byte in the page of a frame inside a middle transaction.
    static func damagedLog(_ workspace: DaemonWorkspace, count: Int = 12) throws -> (ids: [UInt64], lastSeq: Int64) {
        let daemon = try workspace.start()
        let made: (ids: [UInt64], lastSeq: Int64)
        do { made = try connect(daemon, count: count) } catch { throw TestFailure("\(error); stderr:\n\(daemon.stderr)") }
        daemon.crash()
        let walPath = workspace.databasePath + "-wal"
        var wal = try WALFileBytes(walPath)
        let commits = wal.commitFrames
        try #require(commits.count >= count, "the log holds \(commits.count) commits")
        let victim = commits[commits.count / 2] - 1
        try #require(!wal.isCommit(victim))
        wal.damagePage(ofFrame: victim)
        try wal.write(walPath)
        return made
    }

    static func evidenceDirectories(_ workspace: DaemonWorkspace) -> [String] {
        directoryEntries(workspace.stateDirectory).filter { $0.hasPrefix("damaged-") }
    }

    @Test("one flipped byte in a middle frame of the log, commits after it: refused (exit 1, STATUS naming the evidence and scened --recover), the evidence byte-identical; scened --recover starts, and the next session id and event seq are above anything handed out")
    func damagedLogIsRefusedThenRecovered() throws {
        let workspace = try DaemonWorkspace()
        let (ids, lastSeq) = try Self.damagedLog(workspace)
        let files = ["", "-wal", "-shm"].map { workspace.databasePath + $0 }
        let damaged = files.map { readWholeFile($0) }

        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["write-ahead log"])
        #expect(failure.status == 1)
        #expect(failure.stderr.contains("is damaged: frame "), "\(failure.stderr)")
        #expect(failure.stderr.contains("scened --recover"))
        let evidence = Self.evidenceDirectories(workspace)
        try #require(evidence.count == 1, "evidence directories: \(evidence)")
        let directory = workspace.stateDirectory + "/" + evidence[0]
        #expect(failure.statusLine?.contains("copied to \(directory)") == true, "\(failure.statusLine ?? "no STATUS")")
        #expect(failure.statusLine?.contains("scened --recover") == true)
        var st = stat()
        #expect(stat(directory, &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(["scened.db", "scened.db-wal", "scened.db-shm"].map { readWholeFile(directory + "/" + $0) } == damaged,
                "the copies differ from the damaged files")
        #expect(files.map { readWholeFile($0) } == damaged, "the refused start changed the files")

        // Refused again (systemd would restart it): the same evidence, no second copy.
        _ = try StartupFailure(workspace)
        #expect(Self.evidenceDirectories(workspace) == evidence)

        let daemon = try workspace.start(extraArguments: ["--recover"])
        #expect(daemon.stderr.contains("Recovered from the damaged write-ahead log"), "stderr:\n\(daemon.stderr)")
        #expect(daemon.stderr.contains(directory))
        let status = try #require(try daemon.call("GetStatus")["status"])
        #expect((status["nextSeq"]?.intValue ?? 0) > lastSeq)
        let reply = try daemon.call("Connect", ["app": "org.damage.b"])
        let id = try #require(reply["session"]?["id"]?.identifierNumber)
        #expect(id > ids.max()!, "s\(id) is not above every session handed out (s\(ids.max()!))")
        let seqs = reply["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
        #expect(!seqs.isEmpty && seqs.allSatisfy { $0 > lastSeq }, "event seqs \(seqs) not above #\(lastSeq)")
        // What was intact is served.
        let served = try Self.listed(daemon)
        #expect(!served.isEmpty && served.count < ids.count + 1, "\(served)")
        try daemon.stop()

        // A plain start afterwards: nothing left to refuse, nothing handed out twice.
        let again = try workspace.start()
        let later = try again.call("Connect", ["app": "org.damage.b"])["session"]?["id"]?.identifierNumber
        #expect((later ?? 0) > id)
        try again.stop()
        #expect(try DatabaseInspector(directory: workspace.path).integrityCheck(workspace.databasePath) == ["ok"])
    }

    @Test("the recover file in the state directory does what --recover does, once")
    func recoverFile() throws {
        let workspace = try DaemonWorkspace()
        let (ids, _) = try Self.damagedLog(workspace, count: 8)
        let flag = workspace.stateDirectory + "/recover"
        try writeTextFile(flag, "")
        let daemon = try workspace.start()
        #expect(!fileExists(flag), "the recover file was left behind")
        let id = try daemon.call("Connect", ["app": "org.damage.b"])["session"]?["id"]?.identifierNumber ?? 0
        #expect(id > ids.max()!)
        try daemon.stop()
        #expect(Self.evidenceDirectories(workspace).count == 1)
    }

    @Test("a torn tail (the last frame cut short) or garbage after the last commit: starts as usual, nothing refused")
    func tornTailStartsAsUsual() throws {
        for variant in ["cut", "garbage"] {
            let workspace = try DaemonWorkspace()
            let daemon = try workspace.start()
            let (ids, _) = try Self.connect(daemon, count: 6)
            daemon.crash()
            let walPath = workspace.databasePath + "-wal"
            var wal = try WALFileBytes(walPath)
            if variant == "cut" {
                wal.bytes.removeLast(wal.frameSize / 2)
            } else {
                var rng = SplitMix64(seed: 7)
                wal.bytes += (0..<(2 * wal.frameSize + 77)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            }
            try wal.write(walPath)
            let restarted = try workspace.start()
            let served = try Self.listed(restarted)
            let all = ids.map { "s\($0)" }
            if variant == "cut" {
                #expect(served == Array(all.dropLast()), "\(variant): \(served)")
            } else {
                #expect(served == all, "\(variant): \(served)")
            }
            #expect(try restarted.call("GetStatus")["status"]?["quarantined"]?.intValue == 0)
            try restarted.stop()
            #expect(Self.evidenceDirectories(workspace).isEmpty, "\(variant): evidence was copied for a torn tail")
        }
    }

    @Test("frames of an earlier generation of the log after the current ones (a checkpoint, then fewer new frames): starts as usual")
    func staleGenerationStartsAsUsual() throws {
        let workspace = try DaemonWorkspace()
        let daemon = try workspace.start()
        var (ids, _) = try Self.connect(daemon, count: 10)
        let inspector = try DatabaseInspector(directory: workspace.path)
        let checkpoint = try inspector.checkpoint(workspace.databasePath)
        try #require(checkpoint.first == 0 && checkpoint.count == 3 && checkpoint[1] == checkpoint[2],
                     "the checkpoint did not copy the whole log: \(checkpoint)")
        ids += try Self.connect(daemon, count: 2).ids
        daemon.crash()
        let wal = try WALFileBytes(workspace.databasePath + "-wal")
        let current = (1...wal.frameCount).prefix { wal.hasHeaderSalts($0) }.count
        try #require(current > 0 && current < wal.frameCount && !wal.hasHeaderSalts(current + 1),
                     "no frames of an earlier generation after the \(current) current ones (of \(wal.frameCount))")

        let restarted = try workspace.start()
        #expect(try Self.listed(restarted) == ids.map { "s\($0)" })
        try restarted.stop()
        #expect(Self.evidenceDirectories(workspace).isEmpty)
    }
}
