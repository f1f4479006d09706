import Glibc
import Testing
import SceneCore
@testable import SceneStore
import ScenedTestSupport

/// Durability=full with SQLite at synchronous=NORMAL and the store's own fdatasync of the log
/// after each commit: what the daemon's written/durable split rests on.
@Suite struct SyncLogTests {
    func batch(_ n: UInt64) -> StoreBatch {
        let e = LifecycleEvent(seq: n, time: at(Double(n)), name: .didEnterBackground, app: mail, session: SessionID(1),
                               sceneInstance: 1, state: .scene(.background), appState: .background, cause: .request,
                               detail: .none)
        return StoreBatch(apps: [AppRecord(id: mail, process: .running)], events: [e],
                          counters: EngineCounters(clock: at(Double(n)), nextSequence: n + 1, nextSessionNumber: 1, nextTaskNumber: 1))
    }

    @Test("every durability runs SQLite at NORMAL or OFF; only full asks for the store's own sync")
    func pragmas() throws {
        for (durability, expected) in [(Durability.full, Int64(1)), (.normal, 1), (.off, 0)] {
            try withTemporaryDirectory { dir in
                let store = try SceneStore(path: dir.file("scened.db"), durability: durability)
                let (db, _) = try store.openConnection()
                #expect(try db.integer("PRAGMA synchronous", "reading synchronous") == expected, "\(durability)")
                #expect(durability.syncsAfterCommit == (durability == .full))
            }
        }
    }

    @Test("a commit written to the log is there for a second connection before its sync, and after it")
    func writtenThenSynced() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .full)
            try store.commitToLog(batch(1))
            // What a crash of the process would leave: the log as written, read by another connection.
            let other = try SQLiteConnection(path: path)
            #expect(try other.integer("SELECT count(*) FROM events", "counting events") == 1)
            other.close()
            try store.syncLog()
            try store.commit(batch(2))
            store.close()
            let reopened = try SceneStore(path: path, durability: .full)
            #expect(try reopened.events(after: 0, limit: 10).map(\.seq) == [1, 2])
        }
    }

    @Test("a log that cannot be synced is a clear error naming it; under normal nothing is synced")
    func syncFailureNamesTheLog() throws {
        for durability in [Durability.full, .normal] {
            try withTemporaryDirectory { dir in
                let path = dir.file("scened.db")
                let store = try SceneStore(path: path, durability: durability)
                try store.commitToLog(batch(1))
                // The log moved away (as if its directory entry were lost): the sync cannot find it.
                #expect(rename(path + "-wal", path + "-moved") == 0)
                defer { _ = rename(path + "-moved", path + "-wal") }
                if durability == .full {
                    let error = try #require(throws: StoreError.self) { try store.syncLog() }
                    #expect(error.path == path + "-wal")
                    #expect(error.description.contains("opening the log to sync it"), "\(error)")
                } else {
                    try store.syncLog()
                }
            }
        }
    }

    @Test("the store's WAL hook records the log's length after each commit and checkpoints where SQLite's autocheckpoint did: checkpointNear before it, the log restarted after it; unknown (near) on a reopened store until a commit")
    func logLengthAndCheckpoint() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .normal)
            try store.commit(batch(1))
            let log = try #require(try store.openConnection().0.log)
            #expect(log.frames > 0 && !store.checkpointNear, "\(log.frames) frames")
            // A new session with 200 KB of restoration data each time: about 50 frames a commit.
            let payload = RestorationData.bytes([UInt8](repeating: 7, count: 200_000))
            var near = 0, longest: Int32 = 0, n: UInt64 = 1
            while n < 1000 {
                n += 1
                var b = batch(n)
                b.sessions = [SceneSession(id: SessionID(n), app: mail, role: .windowApplication,
                                           configurationName: "Default Configuration", userInfo: .empty,
                                           restoration: payload, footprint: n, condition: .live,
                                           sceneState: .background, sceneInstance: 1, createdAt: at(1),
                                           lastActiveAt: at(1), backgroundSince: at(1), activations: 0, restores: 0,
                                           restoreCostMs: 0, isProtected: false)]
                b.counters.nextSessionNumber = n + 1
                let before = log.frames
                try store.commit(b)
                longest = max(longest, log.frames)
                if store.checkpointNear { near += 1 }
                // The log restarted from its beginning: the checkpoint ran and finished.
                if log.frames < before { break }
            }
            #expect(near > 0, "never reported near the checkpoint (longest log \(longest) frames)")
            #expect(longest >= Tuning.walAutocheckpointPages - 64, "restarted at \(longest) frames, before the checkpoint length")
            #expect(log.frames < 1000 && !store.checkpointNear, "\(log.frames) frames after \(n) commits")
            // What the checkpoint copied is in the database file itself.
            #expect((fileSize(path) ?? 0) > 200_000)
            store.close()
            // Reopened, the store knows the log's length only once something commits.
            let reopened = try SceneStore(path: path, durability: .normal)
            let before = try #require(try reopened.openConnection().0.log)
            #expect(before.frames == before.checkpointAt && reopened.checkpointNear, "\(before.frames) frames")
            try reopened.commit(batch(n + 1))
            #expect(!reopened.checkpointNear)
        }
    }
}
