import Testing
@testable import SceneCore

/// An app's sessions are a sorted array that must behave as the `Set` it replaced: checked
/// against a `Set` over seeded random operations, and through a restore whose snapshot lists
/// the sessions out of order.
@Suite struct SortedSessionIDsTests {
    @Test(arguments: [1, 2, 3] as [UInt64])
    func behavesAsASet(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var list = SortedSessionIDs()
        var model = Set<SessionID>()
        var next: UInt64 = 1
        for step in 0..<20_000 {
            let roll = rng.next() % 10
            if roll < 5 {
                // Mostly new, increasing ids (as the engine hands them out), sometimes an old one.
                let id = roll == 0 ? SessionID(1 + rng.next() % next) : SessionID(next)
                if id.rawValue == next { next += 1 + rng.next() % 3 }
                #expect(list.insert(id) == model.insert(id).inserted, "step \(step)")
            } else if roll < 8 {
                let id = SessionID(1 + rng.next() % next)
                #expect(list.remove(id) == model.remove(id), "step \(step)")
            } else {
                let id = SessionID(rng.next() % (next + 2))
                #expect(list.contains(id) == model.contains(id), "step \(step)")
            }
            if step % 997 == 0 {
                #expect(Array(list) == model.sorted(), "step \(step)")
            }
        }
        #expect(list.count == model.count)
        #expect(Array(list) == model.sorted())
    }

    @Test func keepsOrderAndDropsRepeatsWhateverItIsGiven() {
        let given: [SessionID] = [SessionID(9), SessionID(3), SessionID(9), SessionID(1), SessionID(3)]
        let list = SortedSessionIDs(given)
        #expect(Array(list) == [SessionID(1), SessionID(3), SessionID(9)])
        #expect(list == [SessionID(3), SessionID(1), SessionID(9)])
        #expect(list != [SessionID(1), SessionID(3)])
        #expect(SortedSessionIDs().isEmpty && SortedSessionIDs([]).count == 0)
        var grown = SortedSessionIDs()
        for id in [SessionID(9), SessionID(1), SessionID(3)] { grown.insert(id) }
        #expect(grown == list && grown.hashValue == list.hashValue)
    }

    @Test func restoreFromSessionsOutOfOrderGivesEachAppItsSortedSessions() throws {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        let apps = [AppID("com.example.a")!, AppID("com.example.b")!]
        for i in 0..<40 {
            try engine.handle(.connect(ConnectRequest(app: apps[i % 2], background: true)), now: .zero, effects: &effects)
        }
        var snapshot = engine.snapshot
        var rng = SplitMix64(seed: 7)
        snapshot.sessions.shuffle(using: &rng)
        let restored = try LifecycleEngine(restoring: snapshot)
        for app in apps {
            let expected = engine.sessions.values.filter { $0.app == app }.map(\.id).sorted()
            #expect(Array(restored.apps[app]!.sessions) == expected)
            #expect(restored.apps[app]!.sessions == engine.apps[app]!.sessions)
        }
    }
}
