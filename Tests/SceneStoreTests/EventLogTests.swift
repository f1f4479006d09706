import Testing
import SceneCore
@testable import SceneStore

@Suite struct EventLogTests {
    func events(_ range: ClosedRange<UInt64>) -> [LifecycleEvent] {
        range.map { seq in
            LifecycleEvent(seq: seq, time: at(Double(seq)), name: .didBecomeActive, app: mail, session: SessionID(seq),
                           sceneInstance: 1, state: .scene(.foregroundActive), appState: .active, cause: .request,
                           detail: .none)
        }
    }

    func rowCount(_ store: SceneStore) throws -> Int64 {
        try #require(store.connection).integer("SELECT count(*) FROM events", "test") ?? -1
    }

    @Test func logIsBoundedAndTrimmedInRuns() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let capacity = 100
            let slack = Tuning.trimSlack(capacity: capacity)
            let store = try SceneStore(path: path, durability: .normal, eventLogCapacity: capacity)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)]))
            var maxRows: Int64 = 0
            var trims = 0
            var previousRows: Int64 = 0
            for i in 0..<100 {
                let first = UInt64(i * 7 + 1)
                try store.commit(StoreBatch(events: events(first...first + 6)))
                let rows = try rowCount(store)
                maxRows = max(maxRows, rows)
                if rows < previousRows { trims += 1 }
                previousRows = rows
                // What is reported is exactly the last `capacity` sequence numbers.
                let newest = first + 6
                let oldest = try #require(store.oldestLoggedSequence)
                #expect(oldest == (newest >= UInt64(capacity) ? newest - UInt64(capacity) + 1 : 1))
                let visible = try store.events(after: 0, limit: 1000)
                #expect(visible.first?.seq == oldest && visible.last?.seq == newest)
                #expect(visible.count == Int(newest - oldest + 1))
            }
            // Bounded, and trimmed in a few range deletes rather than at every commit.
            #expect(maxRows <= Int64(capacity + slack + 7))
            #expect(trims > 0 && trims < 20)

            store.close()
            let reopened = try SceneStore(path: path, durability: .normal, eventLogCapacity: capacity)
            #expect(reopened.oldestLoggedSequence == 601)
            #expect(reopened.newestLoggedSequence == 700)
            #expect(try reopened.events(after: 0, limit: 1000) == events(601...700))
            #expect(try reopened.load().nextSequence == 701)
        }
    }

    /// A trim never removes rows of the batch that logs them: each sequence number a commit
    /// hands out is a row when it ends (what bounds what a damaged log can have lost).
    @Test func aBatchLargerThanTheLogKeepsItsOwnRowsUntilTheNextCommit() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal, eventLogCapacity: 100)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], events: events(1...50)))
            try store.commit(StoreBatch(events: events(51...400)))
            #expect(try rowCount(store) == 350, "the batch's rows are all there; only older ones went")
            #expect(store.oldestLoggedSequence == 301)
            #expect(try store.events(after: 0, limit: 1000) == events(301...400))
            try store.commit(StoreBatch(events: events(401...401)))
            #expect(try rowCount(store) == 100)
            #expect(try store.events(after: 0, limit: 1000) == events(302...401))
        }
    }

    @Test func eventsAfterPagesThroughTheLog() throws {
        try withTemporaryDirectory { dir in
            let store = try SceneStore(path: dir.file("scened.db"), durability: .normal)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], events: events(1...50)))
            #expect(try store.events(after: 0, limit: 10) == events(1...10))
            #expect(try store.events(after: 10, limit: 10) == events(11...20))
            #expect(try store.events(after: 45, limit: 10) == events(46...50))
            #expect(try store.events(after: 50, limit: 10).isEmpty)
            #expect(try store.events(after: 0, limit: 0).isEmpty)
            #expect(try store.events(after: UInt64.max, limit: 10).isEmpty)
            #expect(try store.events(after: UInt64(Int64.max) + 5, limit: 10).isEmpty)
            // Paging from the start returns every event exactly once.
            var seen: [LifecycleEvent] = []
            var cursor: UInt64 = 0
            while case let page = try store.events(after: cursor, limit: 7), !page.isEmpty {
                seen += page
                cursor = page.last!.seq
            }
            #expect(seen == events(1...50))
        }
    }

    @Test func aSequenceNumberIsNeverAcceptedTwiceEvenAfterTrimming() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .normal, eventLogCapacity: 2)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], events: events(1...200)))
            try store.commit(StoreBatch(events: events(201...201)))
            #expect(try rowCount(store) < 200, "trimmed")
            for reused in [UInt64(3), 201] {
                let error = try #require(throws: StoreError.self) { try store.commit(StoreBatch(events: events(reused...reused))) }
                #expect(error.kind == .constraint)
                #expect(error.description == "\(path): event #\(reused) reuses a sequence number (the next free one is #202)")
            }
            // Out of order within one batch is refused too.
            #expect(throws: StoreError.self) {
                try store.commit(StoreBatch(events: events(205...205) + events(203...203)))
            }
            store.close()
            let reopened = try SceneStore(path: path, durability: .normal, eventLogCapacity: 2)
            #expect(throws: StoreError.self) { try reopened.commit(StoreBatch(events: events(150...150))) }
            try reopened.commit(StoreBatch(events: events(202...202)))
            #expect(try reopened.events(after: 0, limit: 10).map(\.seq) == [201, 202])
        }
    }

    @Test func zeroCapacityLogsNothingButKeepsTheSequence() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            let store = try SceneStore(path: path, durability: .normal, eventLogCapacity: 0)
            try store.commit(StoreBatch(apps: [AppRecord(id: mail)], events: events(1...5)))
            #expect(store.oldestLoggedSequence == nil)
            #expect(try store.events(after: 0, limit: 10).isEmpty)
            #expect(try rowCount(store) == 0)
            #expect(try store.load().nextSequence == 6)
            let error = try #require(throws: StoreError.self) {
                try SceneStore(path: dir.file("other.db"), durability: .normal, eventLogCapacity: -1)
            }
            #expect(error.kind == .misuse)
        }
    }

    @Test func sequenceContinuesAcrossRestartsWithoutReuse() throws {
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            var seen: Set<UInt64> = []
            for round in 0..<3 {
                let store = try SceneStore(path: path, durability: .full)
                var driver = Driver(engine: try LifecycleEngine(restoring: try store.load()), store: store)
                let id = try driver.connect(ConnectRequest(app: mail), at: at(Double(round * 100 + 1)))
                try driver.run(.background(id), at: at(Double(round * 100 + 2)))
                try driver.run(.tick, at: at(Double(round * 100 + 60)))
                for e in driver.events { #expect(seen.insert(e.seq).inserted, "sequence \(e.seq) reused") }
                #expect(try store.events(after: 0, limit: 1000).map(\.seq) == seen.sorted())
                store.close()
            }
            #expect(seen.count > 10)
        }
    }
}
