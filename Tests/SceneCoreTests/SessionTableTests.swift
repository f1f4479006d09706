import Testing
@testable import SceneCore

/// SessionTable against a dictionary of the same operations: lookups, counts, iteration and
/// equality agree after every step, for ids dense, on page boundaries and far beyond any page;
/// and positions' pages are freed once their sessions are gone.
@Suite struct SessionTableTests {
    static let app = AppID("com.example.table")!

    static func session(_ n: UInt64, footprint: UInt64 = 0) -> SceneSession {
        SceneSession(id: SessionID(n), app: app, role: .windowApplication, configurationName: "Default Configuration",
                     userInfo: .empty, restoration: nil, footprint: footprint, condition: .archived,
                     sceneState: .unattached, sceneInstance: 0, createdAt: .zero, lastActiveAt: .zero,
                     backgroundSince: .zero, activations: 0, restores: 0, restoreCostMs: 0, isProtected: false)
    }

    /// xorshift64*: the test's own, so that a failure names a seed that repeats it.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
        mutating func below(_ n: UInt64) -> UInt64 { next() % n }
    }

    static func expectAgree(_ table: SessionTable, _ model: [SessionID: SceneSession], _ probes: [UInt64],
                            _ context: Comment) {
        #expect(table.count == model.count, context)
        #expect(table.isEmpty == model.isEmpty, context)
        for n in probes { #expect(table[SessionID(n)] == model[SessionID(n)], context) }
        var seen: [SessionID: SceneSession] = [:]
        for (id, s) in table {
            #expect(s.id == id, context)
            #expect(seen.updateValue(s, forKey: id) == nil, context)
        }
        #expect(seen == model, context)
        #expect(Set(table.keys) == Set(model.keys), context)
        for (i, s) in table.values.enumerated() { #expect(table.index(forKey: s.id) == i, context) }
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func agreesWithADictionary(seed: UInt64) {
        var random = Random(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        var table = SessionTable()
        var model: [SessionID: SceneSession] = [:]
        let page = UInt64(SessionPositions.pageSize)
        // Dense ids, ids around page edges, and ids far past any page (the dictionary's).
        var probes: [UInt64] = (1...300).map { $0 }
        probes += [page - 1, page, page + 1, 3 * page - 1, 3 * page, 40 * page + 7]
        probes += [1 << 40, (1 << 40) + 1, UInt64(Int64.max) - 1, 5_000 * page]
        for step in 0..<3_000 {
            let n = probes[Int(random.below(UInt64(probes.count)))]
            let id = SessionID(n)
            switch random.below(4) {
            case 0, 1:
                let s = Self.session(n, footprint: random.below(1 << 20))
                #expect(table.updateValue(s, forKey: id) == model.updateValue(s, forKey: id), "seed \(seed), step \(step)")
            case 2:
                #expect(table.removeValue(forKey: id) == model.removeValue(forKey: id), "seed \(seed), step \(step)")
            default:
                // Through the optional subscript, as the engine writes.
                let s: SceneSession? = random.below(2) == 0 ? nil : Self.session(n, footprint: 7)
                table[id] = s
                model[id] = s
            }
            if step % 100 == 0 || step == 2_999 {
                Self.expectAgree(table, model, probes, "seed \(seed), step \(step)")
            }
        }
        // Equality is by content, whatever the order the sessions came in.
        let rebuilt = try? SessionTable(model.values.sorted { $0.id > $1.id })
        #expect(rebuilt == table, "seed \(seed)")
        var changed = table
        if let any = model.keys.first {
            changed[any] = Self.session(any.rawValue, footprint: 123_456_789)
            #expect(changed != table, "seed \(seed)")
        }
    }

    /// Adopting an array (the store's load: positions written a page-run at a time) gives the
    /// table that inserting the same sessions one by one gives: ids in order, shuffled, with
    /// gaps, on page edges and far past any page; a duplicate anywhere is refused by its id.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func adoptingAgreesWithInserting(seed: UInt64) throws {
        var random = Random(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        let page = UInt64(SessionPositions.pageSize)
        var ids = Array(Set((0..<4_000).map { _ in 1 + random.below(6 * page) }))
        ids += [page - 1, page, 40 * page + 7, 1 << 40, UInt64(Int64.max) - 1].filter { !ids.contains($0) }
        for order in ["ascending", "shuffled"] {
            if order == "ascending" { ids.sort() } else { ids.sort { ($0 &* 0x9E37_79B9) % 977 < ($1 &* 0x9E37_79B9) % 977 } }
            let sessions = ids.map { Self.session($0, footprint: $0 % 1_000) }
            let adopted = try SessionTable(adopting: sessions)
            var inserted = SessionTable()
            for s in sessions { inserted[s.id] = s }
            let model = Dictionary(uniqueKeysWithValues: sessions.map { ($0.id, $0) })
            let probes = ids + [0, 2 * page + 3, 1 << 41]
            Self.expectAgree(adopted, model, probes, "seed \(seed), \(order)")
            #expect(adopted.values == sessions, "adopted as given, seed \(seed), \(order)")
            #expect(adopted.pagesInUse == inserted.pagesInUse, "seed \(seed), \(order)")
            // Then used as any table: a removal and an insert keep it agreeing.
            var changed = adopted, expected = model
            changed[sessions[7].id] = nil
            expected[sessions[7].id] = nil
            changed[SessionID(3 * page + 1)] = Self.session(3 * page + 1)
            expected[SessionID(3 * page + 1)] = Self.session(3 * page + 1)
            Self.expectAgree(changed, expected, probes + [3 * page + 1], "seed \(seed), \(order), changed")
            for at in [0, sessions.count / 2, sessions.count - 1] {
                var twice = sessions
                twice.insert(sessions[at], at: min(at + 3, twice.count))
                #expect(throws: LifecycleError.invalidArgument(name: "sessions", reason: "session \(sessions[at].id) appears twice")) {
                    try SessionTable(adopting: twice)
                }
            }
        }
    }

    @Test func pagesGoWithTheirSessions() {
        var table = SessionTable()
        let page = SessionPositions.pageSize
        for n in 1...(5 * page) { table[SessionID(UInt64(n))] = Self.session(UInt64(n)) }
        #expect(table.pagesInUse == 6)  // numbers 1 ... 5 × page touch pages 0 to 5
        // A long-lived daemon: the first four pages' sessions discarded, one kept in page 0.
        for n in 2..<(4 * page) { table[SessionID(UInt64(n))] = nil }
        #expect(table.pagesInUse == 3, "page 0 (session 1), page 4 and page 5")
        #expect(table.count == 1 + page + 1)
        #expect(table[SessionID(1)] != nil && table[SessionID(UInt64(4 * page))] != nil)
        #expect(table[SessionID(UInt64(2 * page))] == nil)
    }

    @Test func duplicatesAreRefused() {
        #expect(throws: LifecycleError.self) { try SessionTable([Self.session(3), Self.session(3)]) }
    }

    /// Far ids (a counter raised past damage) cost a dictionary entry, not pages up to them,
    /// and move into pages once pages reach them.
    @Test func farIdsTakeNoPages() {
        var table = SessionTable()
        let far = UInt64(1) << 40
        table[SessionID(far)] = Self.session(far)
        table[SessionID(1)] = Self.session(1)
        #expect(table.pagesInUse == 1)
        #expect(table[SessionID(far)]?.id == SessionID(far))
        let page = UInt64(SessionPositions.pageSize), growth = UInt64(SessionPositions.maxGrowthPages)
        // One page so far: a number more than maxGrowthPages pages past it goes aside too.
        let aside = page * (growth + 1) + 5
        table[SessionID(aside)] = Self.session(aside)
        #expect(table[SessionID(aside)]?.id == SessionID(aside) && table.pagesInUse == 1)
        // Pages grow step by step (each within reach); once they reach it, it moves in.
        for step in [growth - 1, growth, growth + 1] {
            table[SessionID(page * step)] = Self.session(page * step)
        }
        #expect(table.pagesInUse == 4, "pages 0, growth - 1, growth, growth + 1 (which aside moved into)")
        #expect(table[SessionID(aside)]?.id == SessionID(aside))
        table[SessionID(aside)] = nil
        #expect(table[SessionID(aside)] == nil && table.pagesInUse == 4)
        table[SessionID(page * (growth + 1))] = nil
        #expect(table.pagesInUse == 3 && table.count == 4)
    }
}
