import Testing
@testable import SceneCore

/// `init(restoring:)` from tables (the store's start-up path: the session table adopted and
/// fixed up in place) and from a snapshot (an array) give back the engine that was saved, and
/// sessions share their details as the engine intends.
@Suite struct RestoreTablesTests {
    static func tables(_ s: EngineSnapshot) -> EngineTables {
        EngineTables(apps: s.apps, sessions: try! SessionTable(s.sessions),
                     tasks: s.tasks, clock: s.clock, nextSequence: s.nextSequence,
                     nextSessionNumber: s.nextSessionNumber, nextTaskNumber: s.nextTaskNumber)
    }

    /// Everything a restore recomputes, compared with the engine the snapshot came from.
    static func expectSame(_ restored: LifecycleEngine, _ original: LifecycleEngine, seed: UInt64, step: Int) {
        let context = Comment(rawValue: "seed \(seed), step \(step)")
        #expect(restored.snapshot == original.snapshot, context)
        #expect(restored.apps.mapValues(Replica.persisted) == original.apps.mapValues(Replica.persisted), context)
        #expect(restored.residentBytes == original.residentBytes, context)
        #expect(restored.sessions.count == original.sessions.count, context)
        for (id, s) in restored.sessions {
            // The slot is the engine's own (apps are re-slotted on restore): it must name the app.
            #expect(s.id == id && restored.apps.records[Int(s.appSlot)].id == s.app, context)
            #expect(restored.apps.records[Int(s.appSlot)].sessions.contains(id), context)
        }
        #expect(ConformanceChecker.consistencyViolations(of: restored).isEmpty, context)
    }

    static func outcome(_ e: inout LifecycleEngine, _ c: Command, _ t: Timestamp, _ fx: inout [Effect]) -> String {
        do { return "\(try e.handle(c, now: t, effects: &fx))" } catch { return "\(error)" }
    }

    /// The restore finds each session's app by the address of the id's storage when the store
    /// shares it: an id with storage of its own (a copy), or none (a small string), is found
    /// by value all the same, and never taken for another app.
    @Test func appSlotsAreFoundWhateverStorageTheIdsHave() throws {
        let long = (0..<40).map { AppID("com.example.an-app-with-a-long-name\($0)")! }
        let short = (0..<40).map { AppID("a.b\($0)")! }
        let records = (long + short).map { AppRecord(id: $0) }
        var table = AppTable()
        for r in records { _ = table.insert(r) }
        var cache = AppSlotCache(table.records)
        for (slot, id) in (long + short).enumerated() {
            let copy = AppID(String(decoding: Array(id.rawValue.utf8), as: UTF8.self))!
            #expect(cache.slot(of: table.records[slot].id, in: table) == slot)
            #expect(cache.slot(of: copy, in: table) == slot)
        }
        #expect(cache.slot(of: AppID("com.example.unknown")!, in: table) == nil)
        #expect(cache.slot(of: AppID("x.y")!, in: table) == nil)

        // A whole restore with every session's app id a copy is the restore with shared ones.
        var generator = CommandGenerator(seed: 9, appCount: 6)
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        for _ in 1...600 {
            let (command, time) = generator.next(engine)
            _ = try? engine.handle(command, now: time, effects: &effects)
        }
        var snapshot = engine.snapshot
        let shared = try LifecycleEngine(restoring: Self.tables(snapshot))
        for i in snapshot.sessions.indices {
            snapshot.sessions[i].app = AppID(String(decoding: Array(snapshot.sessions[i].app.rawValue.utf8), as: UTF8.self))!
        }
        let copied = try LifecycleEngine(restoring: Self.tables(snapshot))
        Self.expectSame(copied, engine, seed: 9, step: 600)
        #expect(copied.snapshot == shared.snapshot)
        #expect(copied.candidates == shared.candidates)
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func randomEnginesRestoreTheSameByBothPaths(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed, appCount: 6)
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        for step in 1...1_500 {
            let (command, time) = generator.next(engine)
            _ = try? engine.handle(command, now: time, effects: &effects)
            effects.removeAll(keepingCapacity: true)
            guard step % 250 == 0 else { continue }
            let snapshot = engine.snapshot
            let fromArray = try LifecycleEngine(restoring: snapshot)
            let fromTables = try LifecycleEngine(restoring: Self.tables(snapshot))
            Self.expectSame(fromArray, engine, seed: seed, step: step)
            Self.expectSame(fromTables, engine, seed: seed, step: step)
            #expect(fromTables.snapshot == fromArray.snapshot)
            // Not compared with the original's: its queue may hold stale (early) wake-ups.
            #expect(fromTables.nextDeadline == fromArray.nextDeadline)
            // What follows a restore is what would have followed in the original.
            var a = engine, b = fromTables
            var fa: [Effect] = [], fb: [Effect] = []
            for _ in 0..<50 {
                let (command, time) = generator.next(a)
                let ra = Self.outcome(&a, command, time, &fa), rb = Self.outcome(&b, command, time, &fb)
                #expect(ra == rb && fa == fb, "seed \(seed), step \(step): \(command)")
            }
        }
    }

    @Test func aSessionIDTwiceInASnapshotIsRefused() throws {
        var h = Harness()
        _ = h.connect(mail)
        var snapshot = h.engine.snapshot
        snapshot.sessions.append(snapshot.sessions[0])
        #expect(throws: LifecycleError.invalidArgument(name: "snapshot", reason: "session s1 appears twice")) {
            try LifecycleEngine(restoring: snapshot)
        }
    }

    /// A million default sessions hold one details object; plain ones share one per
    /// configuration; userInfo or restoration data make a session's own.
    @Test func detailsAreSharedWhereTheyAreEqualAndPlain() throws {
        var h = Harness()
        func connect(_ request: ConnectRequest) -> SessionID {
            let id = SessionID(h.engine.nextSessionNumber)
            h.steps(.connect(request))
            return id
        }
        let a = h.connect(mail), b = h.connect(maps)
        let c = connect(ConnectRequest(app: mail, configurationName: "Editor"))
        let d = connect(ConnectRequest(app: maps, configurationName: "Editor"))
        let e = h.connect(maps, userInfo: UserInfo(json: #"{"k":1}"#))
        for engine in [h.engine, try LifecycleEngine(restoring: h.engine.snapshot),
                       try LifecycleEngine(restoring: Self.tables(h.engine.snapshot))] {
            let s = { (id: SessionID) in engine.sessions[id]!.details }
            #expect(s(a) === SessionDetails.standard && s(b) === SessionDetails.standard)
            #expect(s(c) === s(d) && s(c).configurationName == "Editor")
            #expect(s(e) !== SessionDetails.standard && s(e).userInfo == .held(UserInfo(json: #"{"k":1}"#)))
        }
        // A change makes new details for that session only; undone, it is the default again.
        h.steps(.saveState(a, .json(#"{"r":1}"#)))
        #expect(h.engine.sessions[a]!.restoration == .json(#"{"r":1}"#))
        #expect(h.engine.sessions[b]!.details === SessionDetails.standard)
        h.steps(.saveState(a, nil))
        #expect(h.engine.sessions[a]!.details === SessionDetails.standard)
    }

    /// Equality is by value, whether or not the details are one object.
    @Test func equalityIgnoresSharing() {
        func session(_ name: String) -> SceneSession {
            SceneSession(id: SessionID(1), app: mail, role: .windowApplication, configurationName: name,
                         userInfo: UserInfo(json: #"{"a":1}"#), restoration: .bytes([1, 2]), footprint: 1,
                         condition: .live, sceneState: .background, sceneInstance: 1, createdAt: .zero,
                         lastActiveAt: .zero, backgroundSince: .zero, activations: 0, restores: 0,
                         restoreCostMs: 0, isProtected: false)
        }
        let x = session("Default Configuration"), y = session(String("Default Configuration".reversed().reversed()))
        #expect(x.details !== y.details && x == y)
        var z = y
        z.userInfo = .empty
        #expect(z != x && z.userInfo == .empty && z.restoration == .bytes([1, 2]))
    }

    @Test func theSessionRecordPacksIntoNinetySixBytes() {
        // What a million sessions cost: the dictionary holds about two buckets of this per session.
        #expect(MemoryLayout<SceneSession>.stride <= 96)
    }
}
