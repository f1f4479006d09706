import Glibc
import Testing
import SceneCore
@testable import SceneStore

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
}
