import SceneCore
import SceneStore
import Testing
@testable import SceneDaemon

/// What a batch is gathered in keeps its room between ordinary batches, and gives it back after
/// an outsized one (a million sessions changed at once must not stay allocated for good).
@Suite struct KeptCapacityTests {
    static func changes(_ n: Int) -> [Effect] {
        (1...n).map { .sessionChanged(SessionID(UInt64($0))) }
    }

    @Test func ordinaryRoomIsKept() {
        var pending = PendingChanges()
        pending.absorb(Self.changes(1_000))
        let room = pending.sessions.capacity
        pending.removeAll()
        #expect(pending.sessions.isEmpty && pending.sessions.capacity == room)
        var array = [Int](repeating: 1, count: 1_000)
        array.removeAllKeepingOrdinaryCapacity()
        #expect(array.isEmpty && array.capacity >= 1_000)
    }

    @Test func outsizedRoomIsGivenBack() {
        var pending = PendingChanges()
        pending.absorb(Self.changes(4 * KeptCapacity.elements))
        #expect(pending.sessions.capacity >= 4 * KeptCapacity.elements)
        pending.removeAll()
        #expect(pending.sessions.isEmpty && pending.sessions.capacity < KeptCapacity.elements)
        var array = [Int](repeating: 1, count: 2 * KeptCapacity.elements)
        array.removeAllKeepingOrdinaryCapacity()
        #expect(array.isEmpty && array.capacity == 0)
    }

    @Test func anOutsizedBatchIsNotKeptForTheNext() {
        var batch = StoreBatch()
        #expect(batch.isOrdinary)
        batch.events.reserveCapacity(KeptCapacity.elements + 1)
        #expect(!batch.isOrdinary)
    }
}
