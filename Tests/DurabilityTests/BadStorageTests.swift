import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue item 5 at start-up: a database that is corrupt, from a newer schema, not a database,
/// not writable, or held by another daemon is refused loudly (non-zero exit, stderr and
/// STATUS= naming the file and the problem, ERRNO=), and left byte for byte as it was.
@Suite("Durability: bad storage at start-up", .serialized)
struct BadStorageTests {
    /// A scened database with `sessions` sessions (userInfo padded by `padding` bytes), made by
    /// the daemon itself and closed cleanly (WAL checkpointed into the file).
    static func makeDatabase(_ workspace: DaemonWorkspace, sessions: Int, padding: Int = 0) throws -> [String] {
        let daemon = try workspace.start()
        let client = try daemon.client()
        var ids: [String] = []
        let pad = String(repeating: "p", count: padding)
        for i in 0..<sessions {
            let reply = try client.call("io.scened.Manager.Connect",
                                        ["app": .string("org.bad.a\(i % 3)"), "background": .bool(i % 2 == 0),
                                         "userInfo": ["i": .int(Int64(i)), "pad": .string(pad)]])
            ids.append(reply["session"]?["id"]?.stringValue ?? "?")
        }
        try daemon.stop()
        guard let size = fileSize(workspace.databasePath), size > 0 else {
            throw TestFailure("the daemon left no database at \(workspace.databasePath)")
        }
        return ids
    }

    @Test("garbage bytes in scened.db: refused as not a database, file unchanged")
    func garbage() throws {
        let workspace = try DaemonWorkspace()
        try makeDirectory(workspace.stateDirectory)
        var rng = SplitMix64(seed: 0x5ced)
        let bytes = (0..<8192).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        try writeFile(workspace.databasePath, bytes, mode: 0o600)
        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["not an SQLite database"])
        #expect(readWholeFile(workspace.databasePath) == bytes, "the garbage file was modified")
        #expect(directoryEntries(workspace.stateDirectory) == ["scened.db"], "files appeared beside it: \(directoryEntries(workspace.stateDirectory))")
    }

    @Test("a text file named scened.db (short and long): refused as not a database, never touched", arguments: [4, 60])
    func textFile(lines: Int) throws {
        let workspace = try DaemonWorkspace()
        try makeDirectory(workspace.stateDirectory)
        let text = (0..<lines).map { "line \($0): this is somebody's notes, not a database\n" }.joined()
        try writeTextFile(workspace.databasePath, text)
        let before = readWholeFile(workspace.databasePath)
        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["not an SQLite database"])
        #expect(readWholeFile(workspace.databasePath) == before, "the text file was modified")
        #expect(directoryEntries(workspace.stateDirectory) == ["scened.db"], "files appeared beside it: \(directoryEntries(workspace.stateDirectory))")
    }

    @Test("a scened database with a damaged page in the sessions table: refused as corrupt, file unchanged")
    func damagedSessionsPage() throws {
        let workspace = try DaemonWorkspace()
        _ = try Self.makeDatabase(workspace, sessions: 300, padding: 1000)
        let inspector = try DatabaseInspector(directory: workspace.path)
        let (pageSize, pages) = try inspector.sessionLeafPages(workspace.databasePath)
        try #require(pages.count >= 3 && pageSize >= 512, "the sessions table has only \(pages.count) leaf pages")
        let page = pages[pages.count / 2]
        var bytes = try #require(readWholeFile(workspace.databasePath))
        let offset = (page - 1) * pageSize
        try #require(offset + pageSize <= bytes.count && offset > bytes.count / 8 && offset < bytes.count * 7 / 8,
                     "page \(page) is not in the middle of the file")
        var rng = SplitMix64(seed: UInt64(page))
        for i in offset..<(offset + pageSize) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
        bytes[offset] = 0xff  // no valid b-tree page type
        try writeFile(workspace.databasePath, bytes, mode: 0o600)

        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["SQLITE_CORRUPT", "malformed", "damaged"])
        #expect(readWholeFile(workspace.databasePath) == bytes, "the damaged database was modified")
        #expect(!fileExists(workspace.databasePath + "-wal") || fileSize(workspace.databasePath + "-wal") == 0,
                "a write-ahead log with content was left beside the damaged database")
    }

    @Test("a database from a newer schema (user_version 7): refused, file unchanged")
    func newerSchema() throws {
        let workspace = try DaemonWorkspace()
        _ = try Self.makeDatabase(workspace, sessions: 5)
        let inspector = try DatabaseInspector(directory: workspace.path)
        try inspector.setUserVersion(workspace.databasePath, 7)
        let before = try #require(readWholeFile(workspace.databasePath))
        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["schema version 7"])
        #expect(failure.stderr.contains("newer"), "stderr does not say the database is newer:\n\(failure.stderr)")
        #expect(readWholeFile(workspace.databasePath) == before, "the newer database was modified")
    }

    @Test("an immutable database (chattr +i): refused as not writable, file unchanged")
    func immutableFile() throws {
        let workspace = try DaemonWorkspace()
        _ = try Self.makeDatabase(workspace, sessions: 5)
        let chattr = try SystemTools.require("chattr", for: "making the database immutable")
        let set = try run([chattr, "+i", workspace.databasePath], in: workspace.path)
        try #require(set.status == 0, "chattr +i is not possible here (the test needs it): \(set.summary)")
        defer { _ = try? run([chattr, "-i", workspace.databasePath], in: workspace.path) }
        let before = try #require(readWholeFile(workspace.databasePath))
        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["EPERM", "not permitted", "not writable"])
        #expect(readWholeFile(workspace.databasePath) == before, "the immutable database changed")
    }

    @Test("a database on a read-only bind mount: refused as not writable, nothing written")
    func readOnlyMount() throws {
        let workspace = try DaemonWorkspace()
        _ = try Self.makeDatabase(workspace, sessions: 5)
        let unshare = try SystemTools.require("unshare", for: "a private mount namespace with a read-only bind mount")
        let before = try #require(readWholeFile(workspace.databasePath))
        let entries = directoryEntries(workspace.stateDirectory)
        // The namespace is the daemon's own: it goes away with the daemon, leaving no mount.
        let wrapper = [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c",
                       #"mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@""#, workspace.stateDirectory]
        let failure = try StartupFailure(workspace, wrapper: wrapper)
        try #require(!failure.stderr.contains("mount:"), "the read-only bind mount is not possible here: \(failure.stderr)")
        failure.expectReported(file: workspace.databasePath, problem: ["EROFS", "Read-only file system", "not writable"])
        #expect(readWholeFile(workspace.databasePath) == before, "the database changed")
        #expect(directoryEntries(workspace.stateDirectory) == entries)
    }

    @Test("a second daemon on the same state directory (and socket) is refused; the first keeps serving, nothing lost")
    func secondDaemon() throws {
        let workspace = try DaemonWorkspace()
        let first = try workspace.start()
        let session = try first.call("Connect", ["app": "org.bad.first", "userInfo": ["keep": true]])["session"]?["id"] ?? .null
        try #require(session.stringValue != nil)

        // The first daemon is idle: nothing but the refused one could change the files now.
        let files = [workspace.databasePath, workspace.databasePath + "-wal"]
        let before = files.map { readWholeFile($0) }
        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["in use by another process"])
        #expect(files.map { readWholeFile($0) } == before, "the database or its log changed while the second daemon was refused")

        // The refused daemon touched neither the socket nor the store of the first.
        #expect(first.isRunning, "the first daemon died: \(first.stderr)")
        let got = try first.call("GetSession", ["session": session])
        #expect(got["session"]?["userInfo"]?["keep"] == .bool(true))
        let second = try first.call("Connect", ["app": "org.bad.first", "background": true])["session"]?["id"] ?? .null
        try first.stop()

        let restarted = try workspace.start()
        for id in [session, second] {
            let s = try restarted.call("GetSession", ["session": id])
            #expect(s["session"]?["id"] == id)
        }
        try restarted.stop()
        let inspector = try DatabaseInspector(directory: workspace.path)
        #expect(try inspector.integrityCheck(workspace.databasePath) == ["ok"])
    }
}
