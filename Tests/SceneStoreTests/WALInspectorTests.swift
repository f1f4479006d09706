import Glibc
import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// The write-ahead log as the store reads it before SQLite does: what a crash leaves opens as
/// usual; committed transactions beyond a damaged frame are refused, copied aside, and
/// recovered only when asked, with every counter raised past them.
@Suite struct WALInspectorTests {
    func inspect(_ image: CrashImage) throws -> WALInspection {
        try WALInspector.inspect(walPath: image.wal, shmPath: image.shm)
    }

    func expectLoads(_ image: CrashImage, sessions expected: [SessionID], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try SceneStore(path: image.path, durability: .full)
        defer { store.close() }
        let loaded = try store.loadChecked()
        #expect(loaded.snapshot.sessions.map(\.id) == expected, sourceLocation: sourceLocation)
        #expect(loaded.quarantined.isEmpty, sourceLocation: sourceLocation)
        #expect(store.recovery == nil, sourceLocation: sourceLocation)
    }

    @Test func crashImageIsIntactAndOpens() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 12)
            let wal = try WALFileBytes(image.wal)
            let found = try inspect(image)
            #expect(found.condition == .intact, "\(found)")
            #expect(found.frames == wal.frameCount && found.replayedFrames == wal.frameCount)
            #expect(found.pageSize == wal.pageSize)
            try expectLoads(image, sessions: image.sessions)
        }
    }

    /// SQLite writes little-endian checksums on this host; a log written by a big-endian one
    /// (magic 0x377f0683) is read the same way, and SQLite agrees.
    @Test func bigEndianChecksumsAreReadToo() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 5)
            var wal = try WALFileBytes(image.wal)
            wal.rewriteChecksums(bigEndian: true)
            try wal.write(image.wal)
            #expect(try inspect(image).condition == .intact)
            #expect(try sessionsSQLiteReplays(image.path, in: dir) == [1, 2, 3, 4, 5], "SQLite reads the rewritten log")
            // And a wrong byte order is noticed, not trusted.
            wal.bytes[3] = 0x82
            try wal.write(image.wal)
            #expect(try inspect(image).condition == .damaged)
        }
    }

    // MARK: - Damage

    /// One flipped byte in a middle frame, with commits after it: SQLite alone would replay the
    /// prefix and lose the rest silently. The store refuses, copies the evidence, and recovers
    /// when asked.
    @Test func flippedByteInAMiddleFrameIsRefusedThenRecovered() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 20)
            var wal = try WALFileBytes(image.wal)
            let commits = wal.commitFrames
            let victim = commits[commits.count / 2] - 1   // a frame inside a middle transaction
            try #require(!wal.isCommit(victim))
            wal.bytes[wal.offset(victim) + 24 + wal.pageSize / 2] ^= 0x10
            try wal.write(image.wal)
            let damaged = [image.path, image.wal, image.shm].map { readWholeFile($0) }

            // The premise: SQLite replays it without a word and loses sessions.
            let replayed = try sessionsSQLiteReplays(image.path, in: dir)
            #expect(replayed.count < image.sessions.count && !replayed.isEmpty, "\(replayed)")

            let found = try inspect(image)
            #expect(found.condition == .damaged, "\(found)")
            #expect(found.firstFailingFrame == victim)
            #expect(found.commitsAfterFailure == commits.filter { $0 > victim }.count)
            #expect(found.replayedFrames == commits.last { $0 < victim })

            let error = try #require(throws: StoreError.self) { try SceneStore(path: image.path, durability: .full) }
            guard case .damagedLog(let evidence) = error.kind else {
                Issue.record("not a damaged log: \(error)")
                return
            }
            #expect(error.description.hasPrefix(image.path + ": the write-ahead log \(image.wal) is damaged: frame \(victim) "))
            #expect(error.description.contains("copied to \(evidence)"))
            #expect(evidence.hasPrefix(dir.path + "/damaged-") && evidence.hasSuffix("Z"))
            var st = stat()
            #expect(stat(evidence, &st) == 0 && st.st_mode & 0o777 == 0o700)
            // The copies are the damaged files, and the files are untouched.
            #expect(["image.db", "image.db-wal", "image.db-shm"].map { readWholeFile(evidence + "/" + $0) } == damaged)
            #expect([image.path, image.wal, image.shm].map { readWholeFile($0) } == damaged)

            // Refused again: the same copies serve, no new directory.
            let again = try #require(throws: StoreError.self) { try SceneStore(path: image.path, durability: .full) }
            #expect(again.kind == .damagedLog(evidence: evidence))
            #expect(directoryEntries(dir.path).filter { $0.hasPrefix("damaged-") }.count == 1)

            let store = try SceneStore(path: image.path, durability: .full, recover: true)
            let recovery = try #require(store.recovery)
            #expect(recovery.evidence == DamageEvidence(directory: evidence, reused: true))
            #expect(recovery.allowance == UInt64(found.unreplayedBytes) / Tuning.minimumRowBytes)
            #expect(recovery.taskAllowance == UInt64(found.unreplayedFrames) * Tuning.maxTaskTokensPerCommit)
            #expect(found.unreplayedBytes == found.unreplayedFrames * wal.frameSize)
            let loaded = try store.loadChecked()
            #expect(loaded.snapshot.sessions.map { Int64($0.id.rawValue) } == replayed)
            // Nothing any lost transaction handed out is handed out again: the counters are
            // past what was intact by the whole allowance.
            let lastSession = try #require(image.sessions.last).rawValue
            let intact = UInt64(try #require(replayed.last)) + 1
            #expect(loaded.snapshot.nextSessionNumber > lastSession)
            #expect(loaded.snapshot.nextSessionNumber == intact + recovery.allowance)
            #expect(recovery.after.nextSessionNumber == intact + recovery.allowance)
            #expect(loaded.snapshot.nextSequence > image.lastSequence)
            #expect(loaded.snapshot.nextSequence == intact + recovery.allowance)
            #expect(loaded.snapshot.nextTaskNumber == 1 + recovery.taskAllowance)
            #expect(recovery.notificationAllowance == UInt64(found.unreplayedFrames) * Tuning.maxNotificationsPerCommit)
            #expect(loaded.snapshot.nextNotificationNumber == 1 + recovery.notificationAllowance)
            // The log is folded in and emptied: the next start finds nothing to refuse.
            #expect(fileSize(image.wal) == 0)
            try store.commit(StoreBatch(sessions: [walSession(loaded.snapshot.nextSessionNumber)]))
            store.close()
            let reopened = try SceneStore(path: image.path, durability: .full)
            #expect(reopened.recovery == nil)
            #expect(try reopened.load().sessions.count == replayed.count + 1)
            #expect(try reopened.integrityCheck() == ["ok"])
        }
    }

    @Test func damagedHeaderWithFramesAfterItIsDamage() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 4)
            var wal = try WALFileBytes(image.wal)
            wal.bytes[13] ^= 0x01   // the checkpoint sequence: only the header checksum notices
            try wal.write(image.wal)
            let found = try inspect(image)
            #expect(found.condition == .damaged)
            #expect(found.replayedFrames == 0 && found.summary.contains("its header is damaged"))
            #expect(throws: StoreError.self) { try SceneStore(path: image.path, durability: .full) }
        }
    }

    // MARK: - What a crash leaves: not damage

    @Test func tornLastFrameOpensAsUsual() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 6)
            let wal = try WALFileBytes(image.wal)
            // Cut inside the last frame: the last commit never reached the disk whole.
            #expect(truncate(image.wal, off_t(wal.offset(wal.frameCount) + wal.frameSize / 2)) == 0)
            let found = try inspect(image)
            #expect(found.condition == .tornTail, "\(found)")
            try expectLoads(image, sessions: Array(image.sessions.dropLast()))
        }
    }

    @Test func lastFrameFailingItsChecksumIsATornTail() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 6)
            var wal = try WALFileBytes(image.wal)
            wal.bytes[wal.offset(wal.frameCount) + 100] ^= 0xFF
            try wal.write(image.wal)
            #expect(try inspect(image).condition == .tornTail)
            try expectLoads(image, sessions: Array(image.sessions.dropLast()))
        }
    }

    @Test func garbageAfterTheLastCommitOpensAsUsual() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 5)
            var wal = try WALFileBytes(image.wal)
            var rng = SplitMix64(seed: 42)
            wal.bytes += (0..<(3 * wal.frameSize + 100)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            try wal.write(image.wal)
            let found = try inspect(image)
            #expect(found.condition != .damaged && found.condition != .intact, "\(found)")
            #expect(found.replayedFrames == wal.frameCount - 3)
            try expectLoads(image, sessions: image.sessions)
        }
    }

    /// After a checkpoint SQLite restarts the log from its first frame with new salts; frames of
    /// the old generation stay behind the new ones.
    @Test func framesOfAnEarlierGenerationOpenAsUsual() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 14) { store, n in
                if n == 12 {
                    let result = try #require(store.connection).texts("PRAGMA wal_checkpoint(PASSIVE)", "test")
                    #expect(result.first == "0")
                }
            }
            let wal = try WALFileBytes(image.wal)
            let found = try inspect(image)
            #expect(found.condition == .staleFrames, "\(found)")
            #expect(found.replayedFrames > 0 && found.replayedFrames < wal.frameCount)
            try expectLoads(image, sessions: image.sessions)
        }
    }

    /// SQLite writes a transaction's commit frame and only then rewrites the checksums of the
    /// frames it overwrote in place; a writer stopped in between leaves a log that looks damaged
    /// within its last, unacknowledged transaction. The wal-index header, which the writer
    /// updates only once the commit is done, tells that case apart.
    @Test func unfinishedCommitIsNotDamageWhenTheWalIndexSaysSo() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 8, indexAfter: 7)
            var wal = try WALFileBytes(image.wal)
            let commits = wal.commitFrames
            let lastStart = commits[commits.count - 2] + 1
            try #require(lastStart < commits.last!, "the last transaction has more than its commit frame")
            wal.bytes[wal.offset(lastStart) + 24 + 10] ^= 0x01
            try wal.write(image.wal)
            // Without a wal-index to say so, it is damage.
            let index = try #require(readWholeFile(image.shm))
            unlink(image.shm)
            #expect(try inspect(image).condition == .damaged)
            writeBytes(image.shm, index)

            let found = try inspect(image)
            #expect(found.condition == .tornTail, "\(found)")
            #expect(found.summary.contains("had not finished"))
            try expectLoads(image, sessions: Array(image.sessions.dropLast()))
        }
    }

    @Test func brokenFrameBeforeTheWalIndexEndIsDamageWhateverTheIndex() throws {
        try withTemporaryDirectory { dir in
            let image = try CrashImage.make(dir, commits: 8)
            var wal = try WALFileBytes(image.wal)
            let commits = wal.commitFrames
            // Inside the last transaction, but the wal-index says it was committed.
            wal.bytes[wal.offset(commits[commits.count - 2] + 1) + 24 + 10] ^= 0x01
            try wal.write(image.wal)
            #expect(try inspect(image).condition == .damaged)
        }
    }

    @Test func noLogAndAnEmptyLogAreAbsent() throws {
        try withTemporaryDirectory { (dir: TemporaryDirectory) throws in
            let path = dir.file("x.db")
            #expect(try WALInspector.inspect(walPath: path + "-wal", shmPath: path + "-shm").condition == .absent)
            writeBytes(path + "-wal", [])
            #expect(try WALInspector.inspect(walPath: path + "-wal", shmPath: path + "-shm").condition == .absent)
            writeBytes(path + "-wal", [UInt8](repeating: 0, count: 32))
            #expect(try WALInspector.inspect(walPath: path + "-wal", shmPath: path + "-shm").condition == .absent)
        }
    }
}
