import Glibc
import Locking
import SceneCore
@testable import SceneDaemon
import SceneStore
import ScenedTestSupport
import SystemdKit
import Testing

/// `StoreWriter.writeHere`: a small batch written on the loop's thread when the commit thread
/// is idle, its sync left to that thread; and every case where it must not be (the store in
/// use, a test stall, a failing batch), in which nothing is lost and the end still comes
/// through the completion pipe.
@Suite struct StoreWriterTests {
    static let app = AppID("com.example.writer")!

    func batch(_ n: UInt64) -> StoreBatch {
        let e = LifecycleEvent(seq: n, time: Timestamp(microseconds: Int64(n) * 1_000_000), name: .didEnterBackground,
                               app: Self.app, session: SessionID(1), sceneInstance: 1, state: .scene(.background),
                               appState: .background, cause: .request, detail: .none)
        return StoreBatch(apps: [AppRecord(id: Self.app, process: .running)], events: [e],
                          counters: EngineCounters(clock: e.time, nextSequence: n + 1, nextSessionNumber: 1,
                                                   nextTaskNumber: 1))
    }

    /// The batch's end as the loop reads it, waiting up to 10 s for the pipe.
    func end(_ writer: StoreWriter) -> (written: UInt64?, finished: (number: UInt64, result: Result<Void, StoreError>)?) {
        var pfd = pollfd(fd: writer.completionFD, events: Int16(POLLIN), revents: 0)
        var seen: UInt64?
        for _ in 0..<100 {
            _ = poll(&pfd, 1, 100)
            let progress = writer.takeProgress()
            seen = seen ?? progress.written
            if let finished = progress.finished { return (seen, finished) }
        }
        return (seen, nil)
    }

    func withWriter(_ durability: Durability, _ body: (StoreWriter, SceneStore) throws -> Void) throws {
        let dir = TemporaryDirectory()
        let store = try SceneStore(path: dir.file("scened.db"), durability: durability)
        let writer = try StoreWriter(store: store)
        try writer.start()
        defer { writer.stop() }
        // The first commit through the thread, as any commit the loop does not write itself.
        writer.submit(batch(1), number: 1)
        let first = end(writer)
        #expect(first.written == 1)
        guard case .success = first.finished?.result else {
            Issue.record("the first commit did not succeed: \(String(describing: first.finished))")
            return
        }
        try body(writer, store)
    }

    @Test("idle writer, Durability=full: written on the caller's thread; the sync's end comes through the pipe, not a second written",
          arguments: [Durability.full, .normal, .off])
    func writtenHere(_ durability: Durability) throws {
        try withWriter(durability) { writer, store in
            #expect(writer.writeHere(batch(2), number: 2) == .written)
            // Written already: another connection sees it (what a crash of scened would leave).
            let end = end(writer)
            #expect(end.written == nil, "reported written twice")
            #expect(end.finished?.number == 2)
            if case .failure(let error)? = end.finished?.result { Issue.record("\(error)") }
            let logged = try writer.withStore { try $0.events(after: 0, limit: 10) }
            #expect(logged.map(\.seq) == [1, 2])
            _ = store
        }
    }

    @Test("declined while another thread uses the store (a Monitor's backlog read): the caller never waits for the lock")
    func declinedWhileTheStoreIsBusy() throws {
        try withWriter(.full) { writer, _ in
            let holding = Locked(false), release = Locked(false)
            let thread = try #require(try? OSThread.start {
                writer.withStore { _ in
                    holding.withLock { $0 = true }
                    while !release.withLock({ $0 }) { usleep(1_000) }
                }
            }.get())
            while !holding.withLock({ $0 }) { usleep(1_000) }
            let began = monotonicSeconds()
            #expect(writer.writeHere(batch(2), number: 2) == .declined)
            #expect(monotonicSeconds() - began < 0.05, "waited for the lock")
            release.withLock { $0 = true }
            pthread_join(thread, nil)
            // Declined means nothing was done: the thread commits it as before.
            writer.submit(batch(2), number: 2)
            let end = end(writer)
            #expect(end.written == 2 && end.finished?.number == 2)
        }
    }

    @Test("declined while a test stall is set, so the stall still holds the commit")
    func declinedUnderAStall() throws {
        try withWriter(.full) { writer, _ in
            writer.stallNextCommit(seconds: 1)
            #expect(writer.writeHere(batch(2), number: 2) == .declined)
            writer.submit(batch(2), number: 2)
            let began = monotonicSeconds()
            let end = end(writer)
            #expect(end.finished?.number == 2)
            #expect(monotonicSeconds() - began >= 0.9, "the stall was skipped")
        }
    }

    @Test("a failing batch written here: .failed, nothing stored, the failure through the pipe, and the next batch written")
    func failureHere() throws {
        try withWriter(.full) { writer, _ in
            // Sequence number 1 again: the event log refuses it.
            #expect(writer.writeHere(batch(1), number: 2) == .failed)
            let end = end(writer)
            #expect(end.written == nil)
            guard case .failure(let error)? = end.finished?.result else {
                Issue.record("no failure reported: \(String(describing: end.finished))")
                return
            }
            #expect(!error.description.isEmpty)
            #expect(writer.writeHere(batch(2), number: 3) == .written)
            #expect(self.end(writer).finished?.number == 3)
            let logged = try writer.withStore { try $0.events(after: 0, limit: 10) }
            #expect(logged.map(\.seq) == [1, 2])
        }
    }
}
