import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Issue items 3 and 5: where the database lives (--state-dir over $STATE_DIRECTORY over the XDG
/// directory), and that an existing file is never re-created or overwritten.
@Suite("Durability: state directory", .serialized)
struct StateDirectoryTests {
    /// Runs a daemon with `stateDirectory` and `environment`, creates a session, stops it; then
    /// checks that `expected` holds a database with that session and that a restart the same way
    /// restores it.
    private func roundTrip(_ workspace: DaemonWorkspace, stateDirectory: DaemonWorkspace.StateDirectoryOption,
                           environment: [String: String?], expected: String,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        let first = try workspace.start(stateDirectory: stateDirectory, environment: environment)
        let id = try first.call("Connect", ["app": "org.dir.a", "userInfo": ["where": .string(expected)]])["session"]?["id"] ?? .null
        try first.stop()
        #expect((fileSize(expected) ?? 0) > 0, "no database at \(expected)", sourceLocation: sourceLocation)
        let second = try workspace.start(stateDirectory: stateDirectory, environment: environment)
        let restored = try second.call("GetSession", ["session": id])
        #expect(restored["session"]?["userInfo"]?["where"] == .string(expected), sourceLocation: sourceLocation)
        try second.stop()
    }

    @Test("--state-dir is used, and wins over $STATE_DIRECTORY")
    func stateDirOption() throws {
        let workspace = try DaemonWorkspace()
        let option = workspace.directory.file("option-dir")
        let systemd = workspace.directory.file("systemd-dir")
        try makeDirectory(systemd)
        try roundTrip(workspace, stateDirectory: .path(option), environment: ["STATE_DIRECTORY": systemd],
                      expected: option + "/scened.db")
        #expect(directoryEntries(systemd).isEmpty, "$STATE_DIRECTORY was used although --state-dir was given: \(directoryEntries(systemd))")
    }

    @Test("$STATE_DIRECTORY (first entry) is used without --state-dir, over XDG_STATE_HOME")
    func stateDirectoryVariable() throws {
        let workspace = try DaemonWorkspace()
        let systemd = workspace.directory.file("systemd-dir")
        let other = workspace.directory.file("systemd-second")
        let xdg = workspace.directory.file("xdg")
        try makeDirectory(systemd)
        try roundTrip(workspace, stateDirectory: .omitted,
                      environment: ["STATE_DIRECTORY": "\(systemd):\(other)", "XDG_STATE_HOME": xdg, "HOME": workspace.path],
                      expected: systemd + "/scened.db")
        #expect(!fileExists(xdg) && !fileExists(other), "a directory other than $STATE_DIRECTORY's first entry was created")
    }

    @Test("run by hand: $XDG_STATE_HOME/scened")
    func xdgStateHome() throws {
        let workspace = try DaemonWorkspace()
        let xdg = workspace.directory.file("xdg")
        try roundTrip(workspace, stateDirectory: .omitted, environment: ["XDG_STATE_HOME": xdg, "HOME": workspace.path],
                      expected: xdg + "/scened/scened.db")
    }

    @Test("a zero-length scened.db (left by an interrupted first start) is treated as a new database")
    func zeroLengthFile() throws {
        let workspace = try DaemonWorkspace()
        try makeDirectory(workspace.stateDirectory)
        try writeFile(workspace.databasePath, [], mode: 0o600)
        try roundTrip(workspace, stateDirectory: .workspace, environment: [:], expected: workspace.databasePath)
        let inspector = try DatabaseInspector(directory: workspace.path)
        #expect(try inspector.integrityCheck(workspace.databasePath) == ["ok"])
    }

    @Test("scened.db missing but its write-ahead log present: refused, no new database created over it")
    func orphanWriteAheadLog() throws {
        let workspace = try DaemonWorkspace()
        let daemon = try workspace.start()
        _ = try daemon.call("Connect", ["app": "org.dir.a"])
        daemon.crash()  // the last commits are only in the -wal
        let wal = workspace.databasePath + "-wal"
        try #require((fileSize(wal) ?? 0) > 0, "no write-ahead log after kill -9")
        unlink(workspace.databasePath)
        unlink(workspace.databasePath + "-shm")
        let before = readWholeFile(wal)

        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["write-ahead log"])
        #expect(!fileExists(workspace.databasePath), "a new scened.db was created beside the orphaned log")
        #expect(readWholeFile(wal) == before, "the orphaned write-ahead log was changed")
    }

    @Test("an empty scened.db whose write-ahead log holds the data: refused, the log kept (SQLite would delete it)")
    func emptyFileWithWriteAheadLog() throws {
        let workspace = try DaemonWorkspace()
        let daemon = try workspace.start()
        let id = try daemon.call("Connect", ["app": "org.dir.a"])["session"]?["id"] ?? .null
        daemon.crash()  // everything committed is still only in the -wal
        let wal = workspace.databasePath + "-wal"
        try #require((fileSize(wal) ?? 0) > 0, "no write-ahead log after kill -9")
        // The state a lost write of the database file's first page leaves (or a truncation).
        try #require(truncate(workspace.databasePath, 0) == 0)
        unlink(workspace.databasePath + "-shm")
        let before = readWholeFile(wal)

        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["write-ahead log"])
        #expect(readWholeFile(wal) == before, "the write-ahead log holding \(id) was deleted or changed")
        #expect(fileSize(workspace.databasePath) == 0, "a new database was created over the log")
    }

    @Test("a directory where scened.db should be: refused, left alone")
    func directoryInTheWay() throws {
        let workspace = try DaemonWorkspace()
        try makeDirectory(workspace.stateDirectory)
        try makeDirectory(workspace.databasePath)
        try writeTextFile(workspace.databasePath + "/keep", "x")
        let failure = try StartupFailure(workspace)
        failure.expectReported(file: workspace.databasePath, problem: ["EISDIR", "directory", "not a regular file"])
        #expect(directoryEntries(workspace.databasePath) == ["keep"])
    }
}
