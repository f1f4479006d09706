import Testing
@testable import SceneCore

/// R28–R33: what the system does to scenes (interruptions, locks, sleep, a stop) and what
/// comes back when it ends.
@Suite struct HoldTests {
    static func all(_ level: HoldLevel, _ cause: EventCause) -> Command { .setHolds(HoldPolicy(system: Hold(level, cause: cause))) }
    static let lifted = Command.setHolds(HoldPolicy())

    @Test func interruptionResignsActiveScenesOnlyAndBringsThemBackWithDidBecomeActive() {
        var h = Harness()
        let s1 = h.connect(mail), s2 = h.connect(mail), s3 = h.connect(maps, background: true)
        h.steps(.deactivate(s2))
        #expect(h.steps(Self.all(.inactive, .interruption)) == [resignActive(s1)])
        #expect(h.log.last?.cause == .interruption)
        // R28: no scene becomes active while held; an activation stops at foregroundInactive.
        #expect(h.steps(.activate(s2)) == [])
        #expect(h.steps(.activate(s3)) == [enterForeground(s3)])
        let s4 = h.connect(notes)
        #expect(h.engine.sessions[s4]?.sceneState == .foregroundInactive)
        // R4: back with didBecomeActive only, and exactly the scenes that were or asked to be active.
        #expect(h.steps(Self.lifted) == [becomeActive(s1), becomeActive(s2), becomeActive(s3), becomeActive(s4)])
        #expect(h.log.suffix(4).allSatisfy { $0.cause == .interruption })
    }

    @Test func aSceneDeactivatedOrBackgroundedDuringAHoldStaysWhereItWasSent() {
        var h = Harness()
        let s1 = h.connect(mail), s2 = h.connect(mail)
        h.steps(Self.all(.inactive, .interruption))
        h.steps(.deactivate(s1))
        h.steps(.background(s2))
        #expect(h.steps(Self.lifted) == [])
        #expect(h.engine.sessions[s1]?.sceneState == .foregroundInactive)
        #expect(h.engine.heldScenes.isEmpty)
    }

    @Test func lockSendsForegroundScenesToTheBackgroundAndUnlockBringsExactlyThoseBack() {
        var h = Harness()
        let s1 = h.connect(mail), s2 = h.connect(mail), s3 = h.connect(mail, background: true)
        h.steps(.deactivate(s2))
        let lock = Command.setHolds(HoldPolicy(standard: Hold(.background, cause: .lock)))
        #expect(h.steps(lock) == [resignActive(s1), enterBackground(s1), enterBackground(s2)])
        // R29: while locked an activation leaves the scene foregroundInactive.
        #expect(h.steps(.activate(s3)) == [enterForeground(s3)])
        #expect(h.steps(Self.lifted) == [enterForeground(s1), becomeActive(s1), enterForeground(s2), becomeActive(s3)])
        #expect(h.engine.sessions[s2]?.sceneState == .foregroundInactive)
        #expect(h.log.suffix(4).allSatisfy { $0.cause == .lock })
    }

    @Test func unlockAfterTheSuspensionDelayResumesTheAppFirst() {
        var h = Harness()
        let s1 = h.connect(mail)
        h.steps(.setHolds(HoldPolicy(apps: [mail: Hold(.background, cause: .session)])))
        #expect(h.tick(at: at(60)) == [suspendedStep])
        #expect(h.steps(Self.lifted, at: at(61)) == [resumedStep, enterForeground(s1), becomeActive(s1)])
    }

    @Test func perAppHoldsTouchOnlyTheirApps() {
        var h = Harness()
        let m = h.connect(mail), n = h.connect(notes)
        h.steps(.setHolds(HoldPolicy(apps: [notes: Hold(.background, cause: .lock)])))
        #expect(h.engine.sessions[m]?.sceneState == .foregroundActive)
        #expect(h.engine.sessions[n]?.sceneState == .background)
        // Unlock while an interruption is held: back to the foreground, not yet active.
        let both = HoldPolicy(system: Hold(.inactive, cause: .interruption))
        #expect(h.steps(.setHolds(both)) == [resignActive(m), enterForeground(n)])
        #expect(h.steps(Self.lifted) == [becomeActive(m), becomeActive(n)])
    }

    @Test func terminateOfAForegroundAppRunsTheBackgroundChainFirst() {
        var h = Harness()
        let s1 = h.connect(mail), s2 = h.connect(mail)
        h.steps(.deactivate(s2))
        // R33: state is saved from didEnterBackground before willTerminate.
        #expect(h.steps(.terminate(mail)) == [resignActive(s1), enterBackground(s1), enterBackground(s2),
                                              willTerminateStep, terminatedStep])
    }

    @Test func aStopEndsAppsWithReasonShutdownAndTellsOnlyRunningOnes() {
        var h = Harness()
        let s1 = h.connect(mail)
        _ = h.connect(maps, background: true)
        h.tick(at: at(60))
        #expect(h.engine.apps[maps]?.process == .suspended)
        h.steps(Self.all(.background, .shutdown))
        #expect(h.engine.sessions[s1]?.sceneState == .background)
        #expect(h.steps(.terminate(mail, cause: .shutdown)) == [willTerminateStep, terminatedStep])
        // R21: a suspended app gets nothing.
        #expect(h.steps(.terminate(maps, cause: .shutdown)) == [terminatedStep])
        for e in h.log.suffix(3) {
            #expect(e.cause == .shutdown)
            if case .terminated(let reason, _) = e.detail { #expect(reason == .shutdown) }
        }
    }

    @Test func sleepSuspendsAppsHoldingTasksAndResumeGivesThemFreshTime() throws {
        var h = Harness()
        let s1 = h.connect(mail)
        _ = h.beginTask(session: s1)
        h.steps(Self.all(.background, .sleep))
        #expect(throws: LifecycleError.self) { try h.run(.suspend(mail, cause: .request)) }
        #expect(h.steps(.suspend(mail, cause: .sleep)) == [suspendedStep])
        // Asleep: nothing is due for a suspended app, however long, task or not.
        #expect(h.tick(at: at(3_600)) == [])
        #expect(h.steps(.resume(mail, cause: .sleep)) == [resumedStep])
        #expect(h.steps(Self.lifted) == [enterForeground(s1), becomeActive(s1)])
        #expect(throws: LifecycleError.self) { try h.run(.resume(mail, cause: .sleep)) }
    }

    /// Random runs with the system's commands mixed in: every invariant of the other random
    /// runs, the holds' oracle, and an event-built model of which scenes must come back.
    @Test(arguments: [UInt64(11), 12, 13])
    func randomRunsWithSystemEvents(seed: UInt64) {
        var run = RandomRun(configuration: .standard)
        var generator = CommandGenerator(seed: seed, appCount: 6)
        generator.systemEvents = true
        var model = ReturnModel()
        var holdChanges = 0, returned = 0
        for step in 0..<20_000 {
            let (command, time) = generator.next(run.engine)
            let before = run.engine
            if let problem = run.apply(command, at: time, fullCheck: step % 256 == 0) {
                Issue.record("seed \(seed) step \(step) \(command): \(problem)")
                return
            }
            if let problem = model.follow(command, before: before, after: run.engine, returned: &returned) {
                Issue.record("seed \(seed) step \(step) \(command): \(problem)")
                return
            }
            if case .setHolds = command { holdChanges += 1 }
        }
        #expect(holdChanges > 500 && returned > 100, "holds \(holdChanges), returns \(returned)")
    }
}

/// Which scenes a hold must bring back, built from the commands and the states they leave,
/// not from the engine's own `heldScenes`.
struct ReturnModel {
    var owed: [SessionID: SceneActivationState] = [:]

    mutating func follow(_ command: Command, before: LifecycleEngine, after: LifecycleEngine, returned: inout Int) -> String? {
        owed = owed.filter { after.sessions[$0.key]?.condition == .live }
        switch command {
        case .setHolds(let policy):
            for (id, s) in before.sessions where s.condition == .live {
                let level = policy.hold(for: s.app).level
                if level != .none && before.holds.hold(for: s.app).level < level {
                    if s.sceneState == .foregroundActive { owed[id] = .foregroundActive }
                    if s.sceneState == .foregroundInactive && level == .background && owed[id] == nil { owed[id] = .foregroundInactive }
                }
            }
            for (id, target) in owed {
                guard let s = after.sessions[id] else { continue }
                let level = policy.hold(for: s.app).level
                // An activation under an unchanged hold may have raised it to foregroundInactive.
                guard level != before.holds.hold(for: s.app).level else { continue }
                let want: SceneActivationState = level == .none ? target : level == .inactive ? .foregroundInactive : .background
                if s.sceneState != want { return "\(id) is \(s.sceneState) under \(level), owed \(target)" }
                if level == .none { owed[id] = nil; returned += 1 }
            }
        case .activate(let id):
            oweIfHeldInactive(id, after)
        case .connect:
            oweIfHeldInactive(SessionID(before.nextSessionNumber), after)
        case .deactivate(let id):
            // Refused for a scene a hold keeps in the background: it stays owed.
            if after.sessions[id]?.sceneState == .foregroundInactive { owed[id] = nil }
        case .background(let id):
            if after.sessions[id]?.condition == .live { owed[id] = nil }
        default:
            break
        }
        return nil
    }

    /// An activation a hold stopped at foregroundInactive is owed its activity (R28, R29).
    private mutating func oweIfHeldInactive(_ id: SessionID, _ after: LifecycleEngine) {
        guard let s = after.sessions[id], s.condition == .live, s.sceneState == .foregroundInactive,
              after.holds.hold(for: s.app).level != .none else { return }
        owed[id] = .foregroundActive
    }
}
