import Testing
import SceneCore
@testable import SceneDaemon

/// The in-memory backlog is bounded by what its events carry, not only by their count: a
/// reconnection's willConnectTo holds the session's restoration data.
@Suite struct RecentEventsTests {
    static let app = AppID("com.example.recent")!

    func event(_ n: Int, restorationBytes: Int = 0) -> LifecycleEvent {
        let seq = UInt64(n)
        let detail: EventDetail = restorationBytes > 0
            ? .connect(restoration: .bytes([UInt8](repeating: 7, count: restorationBytes)), reconnect: true) : .none
        return LifecycleEvent(seq: seq, time: Timestamp(microseconds: Int64(seq)), name: .willConnectTo, app: Self.app,
                              session: SessionID(1), sceneInstance: 1, state: .scene(.unattached), appState: .background,
                              cause: .request, detail: detail)
    }

    @Test func countBoundAlone() {
        var recent = RecentEvents(capacity: 4)
        for seq in 1...10 { recent.append(event(seq)) }
        #expect(recent.count == 4 && recent.oldestSequence == 7)
        #expect(recent.events(from: 1, limit: 10).map(\.seq) == [7, 8, 9, 10])
    }

    @Test func payloadBudgetDropsTheOldest() {
        var recent = RecentEvents(capacity: 100, payloadBudget: 50_000)
        for seq in 1...5 { recent.append(event(seq)) }
        for seq in 6...10 { recent.append(event(seq, restorationBytes: 16_384)) }
        // Three payloads fit (49,152 bytes); the fourth pushed out the oldest events up to it.
        #expect(recent.payloadBytes <= 50_000)
        #expect(recent.oldestSequence == 8 && recent.count == 3, "\(recent.count) kept from \(recent.oldestSequence ?? 0)")
        #expect(recent.events(from: 1, limit: 100).map(\.seq) == [8, 9, 10])
        // Plain events after them are kept as the count allows; the payloads go as they age out.
        for seq in 11...20 { recent.append(event(seq)) }
        #expect(recent.count == 13 && recent.payloadBytes == 3 * 16_384)
    }

    @Test func theNewestEventStaysWhateverItCarries() {
        var recent = RecentEvents(capacity: 10, payloadBudget: 1_000)
        recent.append(event(1))
        recent.append(event(2, restorationBytes: 5_000))
        #expect(recent.count == 1 && recent.oldestSequence == 2)
        // The next one pushes it out: only the newest is exempt.
        recent.append(event(3))
        #expect(recent.count == 1 && recent.oldestSequence == 3 && recent.payloadBytes == 0)
    }
}
