import Testing
@testable import SceneCore
@testable import SceneReplay

/// Each rung of the ladder (reclaim-policy.md §3.3 and the order), one at a time.
@Suite struct LadderTests {
    // MARK: Rung 1: one warning per episode, to running apps only

    @Test func warningOncePerEpisodeToRunningAppsOnly() throws {
        var w = World()
        try w.open("fg", 300 * MB, active: true)
        try w.open("idle", 300 * MB)
        w.advance(30)  // "idle" is suspended after its 5 s delay
        _ = try w.run(.tick)
        #expect(w.engine.apps[app("idle")]?.process == .suspended)
        try w.open("bg", 200 * MB)  // running, in the background
        w.budgetFor(fraction: 0.92)

        let first = w.decide(.warning)
        #expect(first.warnings == [[app("bg"), app("fg")]], "suspended apps run no code (R25)")
        try w.execute(first)
        let warned = w.events.filter { $0.name == .didReceiveMemoryWarning }.map(\.app)
        #expect(warned == [app("bg"), app("fg")])

        w.advance(2)
        #expect(w.decide(.warning).warnings.isEmpty, "once per episode")
        w.advance(2)
        #expect(w.decide(.critical).warnings.isEmpty, "rising to critical is the same episode")
        w.advance(2)
        _ = w.decide(.normal)
        #expect(w.policy.episode == nil)
        w.advance(2)
        #expect(w.decide(.warning).warnings.count == 1, "a new episode warns again")
    }

    // MARK: Rung 2: early suspension

    @Test func idleBackgroundAppsAreSuspendedEarly() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        try w.open("idle", 100 * MB)
        let busy = try w.open("busy", 100 * MB)
        try w.run(.beginTask(BeginTaskRequest(session: busy, name: "upload")))
        w.budgetFor(fraction: 0.91)
        let plan = w.decide(.warning)
        #expect(plan.suspensions == [app("idle")], "not the foreground app, not the one with a task")
        try w.execute(plan)
        #expect(w.engine.apps[app("idle")]?.process == .suspended)
        #expect(w.engine.apps[app("busy")]?.process == .running)
        #expect(w.engine.apps[app("fg")]?.process == .running)
    }

    // MARK: Rung 3: a batch to the byte target

    @Test func aBatchFreesDownToTheLowWatermarkAndNoFurther() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        var sizes: [SessionID: UInt64] = [:]
        for i in 0..<12 {
            let bytes = UInt64(50 + 25 * i) * MB
            sizes[try w.open("bg\(i)", bytes)] = bytes
        }
        w.advance(60)
        w.budgetFor(fraction: 0.93)
        let usage = w.usage
        let need = usage - w.policy.configuration.lowTarget
        let plan = w.decide(.warning)
        let freed = plan.disconnects.reduce(UInt64(0)) { $0 + sizes[$1]! }
        #expect(freed >= need)
        #expect(freed - sizes[plan.disconnects.last!]! < need, "no victim beyond the one that reaches the target")
        // Best first: the order of the plan is the policy's ranking.
        let ranked = w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now, nextUse: nil).victims
        #expect(plan.disconnects == ranked.prefix(plan.disconnects.count).map { SessionID($0.id) })
        try w.execute(plan)
        #expect(w.usage <= w.policy.configuration.lowTarget)
        #expect(w.usage + sizes[plan.disconnects.last!]! > w.policy.configuration.lowTarget)
    }

    @Test func theSettleTimeIsRespected() throws {
        var w = World { $0.maxVictimsPerBatch = 2; $0.settle = .seconds(2) }
        try w.open("fg", 100 * MB, active: true)
        for i in 0..<10 { try w.open("bg\(i)", 100 * MB) }
        w.advance(60)
        w.budgetFor(fraction: 0.99)
        let start = w.now
        let first = w.decide(.warning)
        #expect(first.disconnects.count == 2, "rate-limited batch")
        #expect(first.nextDecision == start + .seconds(2))
        try w.execute(first)
        w.advanceMs(1_999)
        let during = w.decide(.warning)
        #expect(during.disconnects.isEmpty && during.terminations.isEmpty, "nothing before the settle time ends")
        #expect(during.nextDecision == start + .seconds(2))
        w.advanceMs(1)
        let after = w.decide(.warning)
        #expect(!after.disconnects.isEmpty)
    }

    @Test func memoryYetToShowHoldsTheNextBatchUpToItsLimit() throws {
        var w = World { $0.maxVictimsPerBatch = 2; $0.settle = .seconds(1) }
        try w.open("fg", 100 * MB, active: true)
        for i in 0..<10 { try w.open("bg\(i)", 100 * MB) }
        w.advance(60)
        w.budgetFor(fraction: 0.99)
        let start = w.now
        let first = w.decide(.warning)
        #expect(first.disconnects.count == 2)
        try w.execute(first)
        // The settle time is over, but the freed memory has not shown where it is measured.
        w.policy.awaitingRelease = true
        w.advanceMs(1_500)
        let waiting = w.decide(.warning)
        #expect(waiting.disconnects.isEmpty && waiting.terminations.isEmpty, "waits for the release to show")
        #expect(waiting.nextDecision == w.now + .seconds(1))
        // Not for ever: five settle times after the batch it decides anyway.
        w.now = start + .seconds(ReclaimPolicy.releaseWaitLimit)
        #expect(!w.decide(.warning).disconnects.isEmpty)
        // And once it shows, at once.
        var v = World { $0.maxVictimsPerBatch = 2; $0.settle = .seconds(1) }
        try v.open("fg", 100 * MB, active: true)
        for i in 0..<10 { try v.open("bg\(i)", 100 * MB) }
        v.advance(60)
        v.budgetFor(fraction: 0.99)
        try v.execute(v.decide(.warning))
        v.policy.awaitingRelease = true
        v.advanceMs(1_200)
        #expect(v.decide(.warning).disconnects.isEmpty)
        v.policy.awaitingRelease = false
        #expect(!v.decide(.warning).disconnects.isEmpty)
    }

    // MARK: Rung 4: critical

    @Test func criticalReachesYoungScenesThatWarningWithholds() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        let young = try w.open("young", 400 * MB)
        w.advance(3)
        w.budgetFor(fraction: 0.95)
        let warning = w.decide(.warning)
        #expect(warning.disconnects.isEmpty)
        #expect(!warning.unrelievable, "young scenes will age into eligibility")
        #expect(warning.nextDecision == at(10), "decide again when the young scene has aged")
        w.advance(1)
        let critical = w.decide(.critical)
        #expect(critical.disconnects == [young] || critical.terminations == [app("young")])
    }

    @Test func criticalTerminatesSuspendedApps() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        // A suspended app whose two scenes are both chosen: one termination instead.
        let a1 = try w.open("pair", 200 * MB)
        let a2 = try w.open("pair", 200 * MB)
        // A suspended process with memory of its own and no scene left.
        let lone = try w.open("lone", 50 * MB)
        try w.run(.setAppFootprint(app("lone"), 300 * MB))
        w.advance(60)
        _ = try w.run(.tick)
        try w.run(.disconnect(lone))
        w.advance(60)
        _ = try w.run(.tick)
        #expect(w.engine.apps[app("pair")]?.process == .suspended)
        #expect(w.engine.apps[app("lone")]?.process == .suspended)
        // Far over: everything reclaimable is needed.
        w.budgetFor(fraction: 8)

        let warning = w.decide(.warning)
        #expect(warning.terminations.isEmpty, "termination is for critical only")
        #expect(Set(warning.disconnects) == [a1, a2])

        var w2 = w
        w2.policy = ReclaimPolicy(configuration: w.policy.configuration)
        let critical = w2.decide(.critical)
        #expect(critical.terminations.contains(app("lone")))
        #expect(critical.terminations.contains(app("pair")))
        #expect(critical.disconnects.isEmpty, "the pair's disconnects became one termination")
        try w2.execute(critical)
        #expect(w2.engine.apps[app("pair")]?.process == .notRunning)
        #expect(w2.engine.sessions[a1]?.condition == .archived && w2.engine.sessions[a2]?.condition == .archived)
        #expect(!w2.events.contains { $0.name == .willTerminate }, "a suspended app gets no callback")
        #expect(w2.events.filter { $0.name == .terminated }.allSatisfy {
            if case .terminated(let reason, _) = $0.detail { reason == .memoryPressure } else { false }
        })
    }

    /// A process candidate popped after one of its scenes: the termination replaces that
    /// scene's disconnect rather than following it.
    @Test func aTerminationAbsorbsDisconnectsAlreadyPlannedForItsApp() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        let cheap = try w.open("heavy", 300 * MB)     // little value per byte: chosen first
        let dear = try w.open("heavy", 10 * MB)       // much value per byte
        try w.run(.setAppFootprint(app("heavy"), 10 * MB))
        w.advance(60)
        _ = try w.run(.tick)
        #expect(w.engine.apps[app("heavy")]?.process == .suspended)
        w.budgetFor(fraction: 4)
        let ranked = w.policy.rankedVictims(engine: w.engine, level: .critical, now: w.now, nextUse: nil).victims
        #expect(ranked.first?.id == cheap.rawValue && ranked.dropFirst().first?.isProcess == true)
        let plan = w.decide(.critical)
        #expect(plan.terminations == [app("heavy")])
        #expect(plan.disconnects.isEmpty)
        try w.execute(plan)
        #expect(w.engine.sessions[cheap]?.condition == .archived && w.engine.sessions[dear]?.condition == .archived)
        #expect(!w.events.contains { $0.name == .resumed || $0.name == .willTerminate })
    }

    // MARK: Never foreground, never protected; unrelievable

    @Test func foregroundAndProtectedAreNeverTouched() throws {
        var w = World()
        let active = try w.open("active", 300 * MB, active: true)
        let inactive = try w.open("inactive", 300 * MB, active: true)
        try w.run(.deactivate(inactive))
        let guarded = try w.open("guarded", 300 * MB, protected: true)
        let plain = try w.open("plain", 100 * MB)
        w.advance(120)
        w.budgetFor(fraction: 1.2)
        let plan = w.decide(.critical)
        let touched = Set(plan.disconnects)
        #expect(!touched.contains(active) && !touched.contains(inactive) && !touched.contains(guarded))
        #expect(plan.terminations.allSatisfy { w.engine.apps[$0]?.hasForegroundScene == false })
        #expect(!plan.terminations.contains(app("guarded")))
        #expect(touched == [plain] || plan.terminations == [app("plain")])
        #expect(plan.unrelievable, "only foreground and protected scenes are left")
        try w.execute(plan)
        #expect(w.engine.sessions[active]?.sceneState == .foregroundActive)
        #expect(w.engine.sessions[inactive]?.sceneState == .foregroundInactive)
        #expect(w.engine.sessions[guarded]?.condition == .live)
    }

    @Test func unrelievableWhenOnlyForegroundAndProtectedRemain() throws {
        var w = World()
        try w.open("active", 600 * MB, active: true)
        try w.open("guarded", 400 * MB, protected: true)
        w.advance(120)
        w.budgetFor(fraction: 1.1)
        let plan = w.decide(.critical)
        #expect(plan.unrelievable)
        #expect(plan.disconnects.isEmpty && plan.terminations.isEmpty)
        #expect(w.policy.episode?.unrelievable == true)
    }

    // MARK: Aging, the previous scene, regrets

    @Test func aScenesAgesBeforeItCanBeReclaimedAtWarning() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        let s = try w.open("s", 300 * MB)
        w.budgetFor(fraction: 0.95)
        w.advanceMs(9_999)
        #expect(w.decide(.warning).disconnects.isEmpty)
        w.advanceMs(1)
        #expect(w.decide(.warning).disconnects == [s])
    }

    @Test func thePreviousSceneAgesTwiceAsLong() throws {
        var w = World()
        let older = try w.open("older", 300 * MB, active: true)
        let previous = try w.open("previous", 300 * MB, active: true)
        try w.open("fg", 100 * MB)
        w.advance(1)
        try w.run(.background(older))      // backgrounded first: not the previous scene
        w.advance(5)
        try w.run(.background(previous))   // the most recent foreground scene to leave
        try w.run(.activate(SessionID(3)))
        #expect(w.policy.previousScene(w.engine) == previous)
        w.advance(12)                      // older: 17 s, previous: 12 s in the background
        w.budgetFor(fraction: 0.95)
        let plan = w.decide(.warning)
        #expect(plan.disconnects == [older], "previous needs 20 s")
        func eligible(_ w: World) -> Set<UInt64> {
            Set(w.policy.rankedVictims(engine: w.engine, level: .warning, now: w.now, nextUse: nil).victims.map(\.id))
        }
        #expect(!eligible(w).contains(previous.rawValue))
        w.advanceMs(7_999)                 // previous: 19.999 s
        #expect(!eligible(w).contains(previous.rawValue))
        w.advanceMs(1)                     // previous: 20 s
        #expect(eligible(w).contains(previous.rawValue))
    }

    @Test func eachRegretDoublesTheAgingUpToEightTimes() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        let s = try w.open("s", 300 * MB)
        try w.open("other", 50 * MB)
        // Used after s every time, so that s is never the previous scene (which ages ×2).
        let x = try w.open("x", 10 * MB)
        for expected in [1, 2, 3, 3] {
            w.advance(200)
            w.budgetFor(fraction: 0.95)
            let plan = w.decide(.warning)
            #expect(plan.disconnects.contains(s))
            try w.execute(plan)
            _ = w.decide(.normal)
            w.advance(30)                  // wanted back within the 60 s window: a regret
            try w.use(s)
            try w.use(x)
            #expect(w.policy.regretCount(s) == expected)
        }
        #expect(w.policy.previousScene(w.engine) == x)
        // Aging is now 10 s × 8: at 79 s the scene is still withheld, at 80 s it may go.
        w.advance(79)
        w.budgetFor(fraction: 0.95)
        #expect(!w.decide(.warning).disconnects.contains(s))
        _ = w.decide(.normal)
        w.advance(1)
        #expect(w.decide(.warning).disconnects.contains(s))
    }

    @Test func aComebackAfterTheRegretWindowIsNoRegret() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        let s = try w.open("s", 300 * MB)
        w.advance(60)
        w.budgetFor(fraction: 0.95)
        try w.execute(w.decide(.warning))
        #expect(w.engine.sessions[s]?.condition == .archived)
        w.advance(61)
        try w.use(s)
        #expect(w.policy.regretCount(s) == 0)
    }

    // MARK: External pressure

    @Test func externalPressureFreesATenthWhenTheAccountingIsUnderTarget() throws {
        var w = World()
        try w.open("fg", 100 * MB, active: true)
        for i in 0..<5 { try w.open("bg\(i)", 100 * MB) }
        w.advance(60)
        w.budgetFor(fraction: 0.5)
        let plan = w.decide(.warning, external: true)
        #expect(plan.disconnects.count == 1, "600 MB / 10 = 60 MB: one 100 MB scene")
    }
}
