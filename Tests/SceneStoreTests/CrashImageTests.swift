import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// What a crash (kill -9, or power loss after an fsync) leaves is the files as they are on disk
/// while the store is still open: no checkpoint, no clean close, the -wal holding the commits.
/// A copy of them taken at that moment must load to exactly what was acknowledged.
@Suite struct CrashImageTests {
    func copyFiles(from source: String, to target: String, withSharedMemory: Bool) {
        for suffix in ["", "-wal"] + (withSharedMemory ? ["-shm"] : []) {
            if let bytes = readWholeFile(source + suffix) { writeBytes(target + suffix, bytes) }
        }
    }

    @Test(arguments: [Durability.full, .normal], [false, true])
    func crashImageHoldsEveryAcknowledgedCommit(durability: Durability, withSharedMemory: Bool) throws {
        try withTemporaryDirectory { dir in
            let live = dir.file("live.db")
            let image = dir.file("image.db")
            let store = try SceneStore(path: live, durability: durability)
            var driver = Driver(store: store)
            try driveEverything(&driver)
            #expect((readWholeFile(live + "-wal")?.count ?? 0) > 0, "the commits are still in the WAL, not checkpointed")
            copyFiles(from: live, to: image, withSharedMemory: withSharedMemory)

            let recovered = try SceneStore(path: image, durability: durability)
            expectStoredState(try recovered.load(), equals: driver.engine.snapshot)
            #expect(try recovered.events(after: 0, limit: 10_000) == driver.events)
            #expect(try recovered.integrityCheck() == ["ok"])
            _ = try LifecycleEngine(restoring: try recovered.load())
            store.close()
        }
    }

    /// A batch that failed leaves nothing in the crash image either.
    @Test func failedBatchIsAbsentFromACrashImage() throws {
        try withTemporaryDirectory { dir in
            let live = dir.file("live.db")
            let store = try SceneStore(path: live, durability: .full)
            var driver = Driver(store: store)
            try driveEverything(&driver)
            let acknowledged = driver.engine.snapshot
            // Bigger than the page cache, so SQLite spills pages of it into the WAL before it fails:
            // frames without a commit record, which recovery must ignore.
            let walBefore = readWholeFile(live + "-wal")?.count ?? 0
            let big = (1_000...90_000).map { n in
                SceneSession(id: SessionID(UInt64(n)), app: mail, role: .windowApplication, configurationName: "Spill",
                             userInfo: UserInfo(json: #"{"pad":"\#(String(repeating: "p", count: 200))"}"#),
                             restoration: nil, footprint: 0, condition: n == 90_000 ? .discarded : .live,
                             sceneState: .background, sceneInstance: 1, createdAt: at(0), lastActiveAt: at(0),
                             backgroundSince: at(0), activations: 0, restores: 0, restoreCostMs: 0, isProtected: false)
            }
            #expect(throws: StoreError.self) { try store.commit(StoreBatch(sessions: big)) }
            #expect((readWholeFile(live + "-wal")?.count ?? 0) > walBefore + (1 << 20), "uncommitted frames reached the WAL")
            copyFiles(from: live, to: dir.file("image.db"), withSharedMemory: false)
            let recovered = try SceneStore(path: dir.file("image.db"), durability: .full)
            expectStoredState(try recovered.load(), equals: acknowledged)
            store.close()
        }
    }
}
