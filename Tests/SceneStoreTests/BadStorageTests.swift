import Glibc
import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// Bad storage is loud and loses nothing: every refusal names the file and the problem, and no
/// existing file is ever re-created or overwritten.
@Suite struct BadStorageTests {
    /// Expects opening (and loading) `path` to fail with `kind`, the description naming the file
    /// and containing each of `words`.
    @discardableResult
    func expectRefusal(_ path: String, _ kind: StoreError.Kind, _ words: [String],
                       sourceLocation: SourceLocation = #_sourceLocation) -> StoreError? {
        do {
            let store = try SceneStore(path: path, durability: .full)
            _ = try store.load()
            Issue.record("\(path) opened and loaded", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(path + ": "), "\(error)", sourceLocation: sourceLocation)
            for word in words {
                #expect(error.description.contains(word), "\(error) lacks \"\(word)\"", sourceLocation: sourceLocation)
            }
            return error
        }
    }

    func session(_ n: UInt64) -> SceneSession {
        SceneSession(id: SessionID(n), app: mail, role: .windowApplication, configurationName: "Default Configuration",
                     userInfo: UserInfo(json: #"{"n":\#(n),"pad":"\#(String(repeating: "x", count: 100))"}"#),
                     restoration: .json("{\"n\":\(n)}"), footprint: n, condition: .live, sceneState: .background,
                     sceneInstance: 1, createdAt: at(1), lastActiveAt: at(1), backgroundSince: at(1), activations: 0,
                     restores: 0, restoreCostMs: 0, isProtected: false)
    }

    func event(_ seq: UInt64) -> LifecycleEvent {
        LifecycleEvent(seq: seq, time: at(Double(seq)), name: .didEnterBackground, app: mail, session: SessionID(seq),
                       sceneInstance: 1, state: .scene(.background), appState: .background, cause: .request,
                       detail: .discarded([SessionID(seq), SessionID(seq + 1)]))
    }

    /// A closed database with `sessions` sessions and `events` events.
    func makeDatabase(_ path: String, sessions: UInt64 = 10, events: UInt64 = 10) throws {
        let store = try SceneStore(path: path, durability: .normal)
        try store.commit(StoreBatch(sessions: (1...sessions).map(session), apps: [AppRecord(id: mail)],
                                    events: (1...events).map(event)))
        store.close()
        #expect(!fileExists(path + "-wal"), "closing checkpoints everything into the file")
    }

    func pages(of table: String, _ path: String) throws -> [Int64] {
        try withConnection(path) { db in
            try db.texts("SELECT pageno FROM dbstat WHERE name = '\(table)' AND pagetype = 'leaf' ORDER BY pageno",
                         "test").compactMap { Int64($0) }
        }
    }

    /// Overwrites the start of a page (its b-tree header) with bytes no page can begin with.
    func damagePage(_ page: Int64, _ path: String) {
        writeBytes(path, [UInt8](repeating: 0xAB, count: 64), at: Int(page - 1) * 4096)
    }

    // MARK: - Not a database, and never overwritten

    static let nonDatabases: [(String, [UInt8])] = [
        ("text", Array("hello, world\n".utf8)),
        ("random", (0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }),
        ("zeros", [UInt8](repeating: 0, count: 4096)),
    ]

    @Test(arguments: 0..<nonDatabases.count)
    func nonDatabaseFileIsRefusedAndLeftAlone(_ index: Int) throws {
        let (name, bytes) = Self.nonDatabases[index]
        withTemporaryDirectory { dir in
            let path = dir.file("\(name).db")
            writeBytes(path, bytes)
            expectRefusal(path, .notADatabase, ["not an SQLite database"])
            #expect(readWholeFile(path) == bytes)
            #expect(!fileExists(path + "-wal") && !fileExists(path + "-shm"))
        }
    }

    @Test func damagedHeaderIsCorrupt() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path)
            writeBytes(path, [0x03, 0xE8], at: 16)   // page size 1000
            let before = readWholeFile(path)
            expectRefusal(path, .corrupt, ["database header is damaged: page size 1000"])
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
        }
    }

    @Test func otherSQLiteDatabasesAreNotTouched() throws {
        try withTemporaryDirectory { dir in
            // Someone's database without a scened version: refused before the switch to WAL.
            let plain = dir.file("plain.db")
            createEmptyFile(plain)
            try withConnection(plain) { db in try db.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1);", "test") }
            let before = readWholeFile(plain)
            expectRefusal(plain, .notADatabase, ["already holds tables but no scened schema version, not scened's"])
            let unchanged = readWholeFile(plain) == before
            #expect(unchanged)

            // Another application's, by its application_id.
            let foreign = dir.file("foreign.db")
            createEmptyFile(foreign)
            try withConnection(foreign) { db in
                try db.execute("PRAGMA application_id = 42; CREATE TABLE t (x); PRAGMA user_version = 3;", "test")
            }
            expectRefusal(foreign, .notADatabase, ["another application (application_id 0x2a)"])
        }
    }

    // MARK: - Damaged pages

    @Test func damagedSessionPageFailsTheLoad() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path, sessions: 3000)
            let leaves = try pages(of: "sessions", path)
            #expect(leaves.count > 10)
            damagePage(leaves[leaves.count / 2], path)
            let before = readWholeFile(path)

            // Open is cheap and does not read the middle of the sessions table; load reads it all.
            let store = try SceneStore(path: path, durability: .full)
            let error = try #require(throws: StoreError.self) { try store.load() }
            #expect(error.kind == .corrupt)
            #expect(error.description.hasPrefix(path + ": "))
            #expect(error.description.contains("sessions: database disk image is malformed (SQLITE_CORRUPT)"))
            // The full check finds it too: it reports problems, or cannot even finish.
            do throws(StoreError) {
                #expect(try store.integrityCheck() != ["ok"])
            } catch {
                #expect(error.kind == .corrupt)
            }
            store.close()
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
        }
    }

    /// Read on two threads, a damaged page in either id range fails the whole load (the other
    /// range's sessions let go), leaves the file as it was, and the store can load again.
    @Test(arguments: [1, 2, 3])
    func damagedSessionPageFailsATwoThreadLoad(_ quarters: Int) throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path, sessions: 3000)
            let leaves = try pages(of: "sessions", path)
            // A quarter, a half or three quarters of the way through the pages (in id order).
            damagePage(leaves[leaves.count * quarters / 4], path)
            let before = readWholeFile(path)
            let store = try SceneStore(path: path, durability: .full)
            for _ in 0..<2 {
                let error = try #require(throws: StoreError.self) { try store.loadTables(parallelAbove: 0) }
                #expect(error.kind == .corrupt)
                #expect(store.lastLoadRanges == 2)
            }
            store.close()
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
        }
    }

    @Test func damagedEventLogPageFailsTheOpen() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path, events: 3000)
            let leaves = try pages(of: "events", path)
            damagePage(leaves[leaves.count / 2], path)
            expectRefusal(path, .corrupt, ["checking table events: database disk image is malformed (SQLITE_CORRUPT)"])
        }
    }

    @Test func damagedSmallTablesFailTheOpen() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path)
            damagePage(try #require(try pages(of: "apps", path).first), path)
            expectRefusal(path, .corrupt, ["apps"])
        }
    }

    /// Valid SQLite, impossible for scened: the row is quarantined (left in place, recorded,
    /// not loaded), the rest loads, and nothing is handed out twice.
    @Test func garbledRowIsQuarantinedNotTrappedOn() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path)
            try withConnection(path) { db in
                try db.execute("UPDATE sessions SET scene_state = 9 WHERE id = 4; UPDATE events SET extra = X'0207' WHERE seq = 2",
                               "test")
            }
            let store = try SceneStore(path: path, durability: .full)
            let stored = try store.loadChecked()
            #expect(stored.quarantined == [QuarantinedRow(table: .sessions, key: 4, reason: "scene state 9 is not one")])
            #expect(stored.snapshot.sessions.map(\.id.rawValue) == [1, 2, 3, 5, 6, 7, 8, 9, 10])
            #expect(stored.snapshot.nextSessionNumber == 11)
            #expect(try store.quarantineRecords() == stored.quarantined)
            // The event log skips the damaged event and goes on past it.
            #expect(try store.events(after: 0, limit: 3).map(\.seq) == [1, 3, 4])
            #expect(store.quarantinedEvents == [QuarantinedRow(table: .events, key: 2, reason: "detail or cause is malformed")])
            // Recorded with the next commit, before anything else is written.
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)]))
            #expect(try store.quarantineRecords().map(\.name) == ["event #2", "session s4"])
            store.close()
            // Kept: the rows are still where they were.
            try withConnection(path) { (db: SQLiteConnection) throws in
                #expect(try db.integer("SELECT scene_state FROM sessions WHERE id = 4", "test") == 9)
                #expect(try db.integer("SELECT count(*) FROM events WHERE seq = 2", "test") == 1)
            }
        }
    }

    // MARK: - Newer schema

    @Test func newerSchemaIsRefused() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path)
            try withConnection(path) { db in try db.execute("PRAGMA user_version = 99", "test") }
            let before = readWholeFile(path)
            let current = SceneStore.schemaVersion
            let error = expectRefusal(path, .newerSchema(found: 99, supported: current),
                                      ["newer scened", "schema version 99", "up to \(current)"])
            #expect(error?.description == "\(path): written by a newer scened: schema version 99, this scened "
                        + "supports versions up to \(current); refusing to open it")
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
        }
    }

    // MARK: - Paths that cannot hold a database

    @Test func unusablePaths() throws {
        withTemporaryDirectory { dir in
            writeBytes(dir.file("plainfile"), [1, 2, 3])
            expectRefusal(dir.file("plainfile/scened.db"), .cantOpen, ["plainfile is not a directory"])
            expectRefusal(dir.file("missing/scened.db"), .cantOpen, ["directory \(dir.path)/missing", "ENOENT"])
            mkdir(dir.file("adirectory.db"), 0o755)
            expectRefusal(dir.file("adirectory.db"), .cantOpen, ["Is a directory (EISDIR)"])
            expectRefusal("", .cantOpen, ["empty database path"])
            #expect(readWholeFile(dir.file("plainfile")) == [1, 2, 3])
        }
    }

    @Test func orphanWriteAheadLogIsNotReplayedIntoANewFile() throws {
        withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            writeBytes(path + "-wal", [UInt8](repeating: 7, count: 100))
            expectRefusal(path, .corrupt, ["database file is missing but its write-ahead log", "-wal exists"])
            #expect(!fileExists(path))
        }
    }

    @Test func secondOpenerIsLockedOut() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let first = try SceneStore(path: path, durability: .full)
            try first.commit(StoreBatch(apps: [AppRecord(id: mail)]))
            expectRefusal(path, .locked, ["in use by another process"])
            // The refused opener changed nothing and the first one carries on.
            try first.commit(StoreBatch(apps: [AppRecord(id: maps)]))
            first.close()
            let second = try SceneStore(path: path, durability: .full)
            #expect(try second.load().apps.map(\.id) == [mail, maps])
        }
    }

    // MARK: - Not writable (root ignores permission bits: immutable files and read-only mounts)

    @Test(.enabled(if: canMakeImmutable, "needs root and a file system with the immutable attribute"))
    func immutableFileOrDirectoryIsNotWritable() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            try makeDatabase(path)
            let before = readWholeFile(path)
            #expect(setImmutable(path, true))
            expectRefusal(path, .notWritable, ["opening for writing", "EPERM"])
            setImmutable(path, false)
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)

            let locked = dir.file("locked")
            mkdir(locked, 0o755)
            #expect(setImmutable(locked, true))
            defer { setImmutable(locked, false) }
            expectRefusal(locked + "/scened.db", .notWritable, ["directory \(locked) is not writable", "EPERM"])
            #expect(!fileExists(locked + "/scened.db"))
        }
    }

    @Test(.enabled(if: canMountPrivately, "needs CAP_SYS_ADMIN for a private mount namespace"))
    func readOnlyMountIsNotWritable() throws {
        try withTemporaryDirectory { dir in
            let mountPoint = dir.file("ro")
            mkdir(mountPoint, 0o755)
            let path = mountPoint + "/scened.db"
            try makeDatabase(path)
            let before = readWholeFile(path)
            let outcome = inPrivateMountNamespace { () -> (String?, StoreError?, StoreError?) in
                guard makeReadOnly(mountPoint) else { return ("bind mount failed: errno \(errno)", nil, nil) }
                var existing: StoreError?
                var new: StoreError?
                do throws(StoreError) { _ = try SceneStore(path: path, durability: .full) } catch { existing = error }
                do throws(StoreError) { _ = try SceneStore(path: mountPoint + "/new.db", durability: .full) } catch { new = error }
                return (nil, existing, new)
            }
            let (setupError, existing, new) = try #require(outcome)
            #expect(setupError == nil)
            #expect(existing?.kind == .notWritable)
            #expect(existing?.description == "\(path): directory \(mountPoint) is not writable (it must hold the -wal "
                        + "and -shm files): Read-only file system (EROFS)")
            #expect(new?.kind == .notWritable)
            #expect(new?.description.hasPrefix(mountPoint + "/new.db: ") == true)
            let unchanged = readWholeFile(path) == before
            #expect(unchanged)
            #expect(!fileExists(mountPoint + "/new.db"))
        }
    }

    // MARK: - Full disk

    struct FullDiskOutcome {
        var setupError: String?
        var acknowledged: [SessionID] = []
        var failure: StoreError?
        var loadedAfterFailure: [SessionID]?
        var newDatabaseFailure: StoreError?
        var reopened: [SessionID]?
        var reopenedEvents: [UInt64]?
        var retryError: String?
        var afterRetry: [SessionID]?
    }

    /// A real ENOSPC: a 384 KiB tmpfs in a private mount namespace. Commits fail cleanly with
    /// diskFull, everything acknowledged before is kept (in memory and on disk), and once there is
    /// room again the failed batch goes through.
    @Test(.enabled(if: canMountPrivately, "needs CAP_SYS_ADMIN for a private mount namespace"))
    func fullDiskLosesNothingAcknowledged() throws {
        try withTemporaryDirectory { dir in
            let mountPoint = dir.file("small")
            mkdir(mountPoint, 0o755)
            let path = mountPoint + "/scened.db"
            let outcome = inPrivateMountNamespace { () -> FullDiskOutcome in
                var o = FullDiskOutcome()
                guard mountTmpfs(mountPoint, kilobytes: 384) else {
                    o.setupError = "tmpfs mount failed: errno \(errno)"
                    return o
                }
                var failedBatch: StoreBatch?
                do {
                    let store = try SceneStore(path: path, durability: .full)
                    try store.commit(StoreBatch(apps: [AppRecord(id: mail)]))
                    var next: UInt64 = 1
                    for _ in 0..<1000 {
                        let ids = (next..<next + 20).map { $0 }
                        let batch = StoreBatch(sessions: ids.map(self.session), events: ids.map(self.event))
                        do throws(StoreError) {
                            try store.commit(batch)
                            o.acknowledged += ids.map(SessionID.init)
                            next += 20
                        } catch {
                            o.failure = error
                            failedBatch = batch
                            break
                        }
                    }
                    o.loadedAfterFailure = try? store.load().sessions.map(\.id)
                    do throws(StoreError) { _ = try SceneStore(path: mountPoint + "/new.db", durability: .full) } catch {
                        o.newDatabaseFailure = error
                    }
                    store.close()
                } catch {
                    o.setupError = "\(error)"
                    return o
                }
                guard remountTmpfs(mountPoint, kilobytes: 8192) else {
                    o.setupError = "tmpfs remount failed: errno \(errno)"
                    return o
                }
                do {
                    let store = try SceneStore(path: path, durability: .full)
                    o.reopened = try store.load().sessions.map(\.id)
                    o.reopenedEvents = try store.events(after: 0, limit: 100_000).map(\.seq)
                    if let failedBatch { try store.commit(failedBatch) }
                    o.afterRetry = try store.load().sessions.map(\.id)
                    store.close()
                } catch {
                    o.retryError = "\(error)"
                }
                return o
            }
            let o = try #require(outcome)
            #expect(o.setupError == nil)
            #expect(o.acknowledged.count >= 20, "some batches fit before the disk filled")
            let failure = try #require(o.failure)
            #expect(failure.kind == .diskFull)
            #expect(failure.description.hasPrefix(path + ": "))
            #expect(failure.description.contains("SQLITE_FULL"))
            #expect(o.loadedAfterFailure == o.acknowledged, "the store is still usable and holds every commit")
            #expect(o.newDatabaseFailure?.kind == .diskFull)
            #expect(o.newDatabaseFailure?.description.hasPrefix(mountPoint + "/new.db: ") == true)
            #expect(o.retryError == nil)
            #expect(o.reopened == o.acknowledged, "every acknowledged change survived")
            #expect(o.reopenedEvents == o.acknowledged.map(\.rawValue))
            #expect(o.afterRetry?.count == o.acknowledged.count + 20)
        }
    }
}
