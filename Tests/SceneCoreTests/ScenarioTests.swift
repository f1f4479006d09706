import Testing
@testable import SceneCore

/// Every scenario of uikit-lifecycle.md §2 (and checklist §5), as the exact list of events the
/// engine emits: (name, session, state left behind).
@Suite struct ScenarioTests {
    let s1 = SessionID(1), s2 = SessionID(2), s3 = SessionID(3)

    // MARK: §2.1 Cold launch

    @Test func coldLaunchNewSession() throws {
        var h = Harness()
        let new = try h.run(.connect(ConnectRequest(app: mail)), at: at(1))
        #expect(new.map(Step.init) == [launched, configure(s1), connectTo(s1), enterForeground(s1), becomeActive(s1)])
        #expect(new.map(\.appState) == [.background, .background, .background, .inactive, .active])
        #expect(new.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(new.allSatisfy { $0.time == at(1) && $0.app == mail && $0.cause == .request })
        #expect(new[at: 2]?.detail == .connect(restoration: nil, reconnect: false))
        #expect(new[at: 1]?.sceneInstance == 1 && new[at: 4]?.sceneInstance == 1)
        // §5.1: configurationForConnecting exactly once.
        #expect(h.log.filter { $0.name == .configurationForConnecting }.count == 1)
        #expect(h.process(mail) == .running)
        #expect(h.appState(mail) == .active)
        #expect(h.state(s1) == .foregroundActive)
    }

    @Test func connectReturnsTheNewSession() throws {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        let result = try engine.handle(.connect(ConnectRequest(app: mail)), now: .zero, effects: &effects)
        #expect(result == .session(s1))
        let again = try engine.handle(.connect(ConnectRequest(app: mail)), now: .zero, effects: &effects)
        #expect(again == .session(s2))
    }

    @Test func relaunchWithArchivedSessionsAfterAKill() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(mail)
        h.steps(.saveState(s1, .json("{\"tab\":1}")))
        h.steps(.saveState(s2, .bytes([1, 2, 3])))
        h.steps(.background(s1))
        h.steps(.background(s2))
        #expect(h.tick(at: at(5)) == [suspendedStep])
        // Jetsam kills the suspended process: no callback of any kind (§2.6, R21).
        let kill = try h.run(.terminate(mail, cause: .reclaim(ReclaimNote(level: "critical", usageBefore: 0, usageAfter: 0,
                                                                             budget: 0, score: nil, reason: "test"))))
        #expect(kill.map(Step.init) == [terminatedStep])
        #expect(kill[at: 0]?.detail == .terminated(reason: .memoryPressure, archived: [s1, s2]))
        #expect(h.condition(s1) == .archived && h.condition(s2) == .archived)

        // §2.1(b) / §5.2: the next launch restores each session with willConnectTo and no
        // configurationForConnecting; the restoration data is what was last saved (R11, R26).
        let first = try h.run(.activate(s1), at: at(60))
        #expect(first.map(Step.init) == [launched, connectTo(s1), enterForeground(s1), becomeActive(s1)])
        #expect(first[at: 1]?.detail == .connect(restoration: .json("{\"tab\":1}"), reconnect: true))
        #expect(first[at: 1]?.sceneInstance == 2)
        let second = try h.run(.activate(s2))
        #expect(second.map(Step.init) == [connectTo(s2), enterForeground(s2), becomeActive(s2)])
        #expect(second[at: 0]?.detail == .connect(restoration: .bytes([1, 2, 3]), reconnect: true))
        #expect(h.log.filter { $0.name == .configurationForConnecting }.count == 2)
        #expect(h.log.filter { $0.name == .willConnectTo }.count == 4)
        #expect(h.engine.sessions[s1]?.restores == 1)
    }

    // MARK: §2.2 Home, §2.3 return

    @Test func homeThenSuspensionThenReturn() {
        var h = Harness()
        _ = h.connect(mail)
        #expect(h.steps(.background(s1), at: at(10)) == [resignActive(s1), enterBackground(s1)])
        #expect(h.appState(mail) == .background)
        #expect(h.tick(at: at(14)) == [])
        let suspension = h.tick(at: at(20))
        #expect(suspension == [suspendedStep])
        #expect(h.log.last?.time == at(15))
        // The scene stays connected (R9): it reports background while the process is suspended.
        #expect(h.condition(s1) == .live && h.state(s1) == .background)
        #expect(h.steps(.activate(s1), at: at(30)) == [resumedStep, enterForeground(s1), becomeActive(s1)])
        #expect(h.process(mail) == .running && h.appState(mail) == .active)
        #expect(!h.log.contains { $0.name == .didDisconnect })
    }

    @Test func returnBeforeSuspension() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1), at: at(1))
        #expect(h.steps(.activate(s1), at: at(3)) == [enterForeground(s1), becomeActive(s1)])
        #expect(h.tick(at: at(60)) == [])
        #expect(h.process(mail) == .running)
    }

    // MARK: §2.4 Second scene

    @Test func secondSceneWhileActive() throws {
        var h = Harness()
        _ = h.connect(mail)
        let second = try h.run(.connect(ConnectRequest(app: mail)))
        #expect(second.map(Step.init) == [configure(s2), connectTo(s2), enterForeground(s2), becomeActive(s2)])
        // Side by side: the first scene is untouched and the app stays active throughout (R18).
        #expect(second.allSatisfy { $0.appState == .active })
        #expect(h.state(s1) == .foregroundActive && h.state(s2) == .foregroundActive)
        #expect(h.engine.foregroundActiveSceneCount == 2)
        // A scene changes only through its own command.
        #expect(h.steps(.background(s1)) == [resignActive(s1), enterBackground(s1)])
        #expect(h.state(s2) == .foregroundActive)
        #expect(h.steps(.activate(s1)) == [enterForeground(s1), becomeActive(s1)])
        #expect(h.state(s2) == .foregroundActive)
    }

    @Test func scenesOfSeveralAppsActiveAtOnce() {
        var h = Harness()
        _ = h.connect(mail)
        #expect(h.steps(.connect(ConnectRequest(app: maps))) == [launched, configure(s2), connectTo(s2),
                                                               enterForeground(s2), becomeActive(s2)])
        #expect(h.state(s1) == .foregroundActive && h.appState(mail) == .active && h.appState(maps) == .active)
    }

    // MARK: §2.5 App switcher

    @Test func appSwitcherThenBack() {
        var h = Harness()
        _ = h.connect(mail)
        #expect(h.steps(.deactivate(s1)) == [resignActive(s1)])
        #expect(h.appState(mail) == .inactive)
        // R4: back from an interruption, didBecomeActive only.
        #expect(h.steps(.activate(s1)) == [becomeActive(s1)])
        #expect(h.appState(mail) == .active)
    }

    @Test func appSwitcherThenAnotherApp() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.deactivate(s1))
        #expect(h.steps(.background(s1)) == [enterBackground(s1)])
        #expect(h.tick(at: at(5)) == [suspendedStep])
    }

    @Test func appSwitcherThenSwipeAway() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.deactivate(s1))
        // The S10 shortcut is not reproduced: the scene goes through the background (R3, R13).
        #expect(h.steps(.discard(s1)) == [enterBackground(s1), disconnected(s1), discardedStep(s1)])
        #expect(h.condition(s1) == .discarded)
    }

    // MARK: §2.6 Reclaim disconnect, §2.7 reconnect

    @Test func reclaimDisconnectOfARunningBackgroundScene() throws {
        var h = Harness()
        _ = h.connect(mail, userInfo: UserInfo(json: "{\"a\":1}"))
        h.steps(.saveState(s1, .json("[1]")))
        h.steps(.background(s1))
        let d = try h.run(.disconnect(s1, cause: .reclaim(note)))
        #expect(d.map(Step.init) == [disconnected(s1)])
        #expect(d[at: 0]?.cause == .reclaim(note))
        // R12, R16: no discard; the session stays open, archived, with its data.
        #expect(!h.log.contains { $0.name == .didDiscardSceneSessions })
        #expect(h.condition(s1) == .archived && h.state(s1) == .unattached)
        #expect(h.engine.apps[mail]?.sessions == [s1])
        // §2.7: reconnecting gives a new scene instance of the same session, with its data.
        let r = try h.run(.activate(s1))
        #expect(r.map(Step.init) == [connectTo(s1), enterForeground(s1), becomeActive(s1)])
        #expect(r[at: 0]?.detail == .connect(restoration: .json("[1]"), reconnect: true))
        #expect(r.allSatisfy { $0.sceneInstance == 2 })
        #expect(h.engine.sessions[s1]?.userInfo == UserInfo(json: "{\"a\":1}"))
        #expect(h.engine.sessions[s1]?.configurationName == ConnectRequest.defaultConfigurationName)
    }

    @Test func reclaimDisconnectOfASuspendedScene() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        h.tick(at: at(5))
        #expect(h.process(mail) == .suspended)
        #expect(h.steps(.disconnect(s1, cause: .reclaim(note)), at: at(7)) == [resumedStep, disconnected(s1)])
        // Idle again, it is suspended again after the delay.
        #expect(h.tick(at: at(12)) == [suspendedStep])
        #expect(h.log.last?.time == at(12))
    }

    @Test func requestedDisconnectFromTheForegroundRunsTheChain() {
        var h = Harness()
        _ = h.connect(mail)
        #expect(h.steps(.disconnect(s1)) == [resignActive(s1), enterBackground(s1), disconnected(s1)])
        #expect(h.condition(s1) == .archived)
    }

    @Test func reconnectWithNoSavedDataHandsBackNil() throws {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.steps(.disconnect(s1))
        let r = try h.run(.activate(s1))
        #expect(r[at: 0]?.detail == .connect(restoration: nil, reconnect: true))
    }

    @Test func savedDataIsReplacedAndCleared() throws {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.steps(.saveState(s1, .json("1")))
        h.steps(.saveState(s1, .json("2")))
        h.steps(.disconnect(s1))
        #expect(try h.run(.activate(s1))[at: 0]?.detail == .connect(restoration: .json("2"), reconnect: true))
        h.steps(.saveState(s1, nil))
        h.steps(.disconnect(s1))
        #expect(try h.run(.activate(s1))[at: 0]?.detail == .connect(restoration: nil, reconnect: true))
        #expect(h.engine.sessions[s1]?.sceneInstance == 3)
    }

    // MARK: §2.8 Discard, §2.9 programmatic destruction

    @Test func discardWhileRunningOtherScenesRemain() {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(mail)
        // Case A, from foregroundActive (also §2.9 for an on-screen scene): the full chain, then
        // didDisconnect, then didDiscardSceneSessions (R13).
        #expect(h.steps(.discard(s2)) == [resignActive(s2), enterBackground(s2), disconnected(s2), discardedStep(s2)])
        #expect(h.state(s1) == .foregroundActive && h.process(mail) == .running)
        #expect(h.engine.apps[mail]?.sessions == [s1])
        if case .discarded(let ids) = h.log.last?.detail { #expect(ids == [s2]) } else { Issue.record("no discard set") }
    }

    @Test func discardOfABackgroundSceneAndOfAnArchivedSession() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        _ = h.connect(mail, background: true)
        #expect(h.steps(.discard(s1)) == [disconnected(s1), discardedStep(s1)])
        h.steps(.disconnect(s2))
        #expect(h.steps(.discard(s2)) == [discardedStep(s2)])
        #expect(h.engine.sessions.isEmpty)
        #expect(h.engine.wasDiscarded(s1) && h.engine.wasDiscarded(s2))
    }

    @Test func discardWhileSuspended() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.tick(at: at(5))
        #expect(h.process(mail) == .suspended)
        // Decision: the process is resumed to hear of it now (rather than killed, §2.8 case B).
        #expect(h.steps(.discard(s1)) == [resumedStep, disconnected(s1), discardedStep(s1)])
        #expect(h.tick(at: at(10)) == [suspendedStep])
    }

    @Test func discardWhileNotRunningThenNextLaunch() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(mail)
        _ = h.connect(mail)
        h.steps(.terminate(mail))
        // Case C: nothing can be told now (R14).
        #expect(h.steps(.discard(s2)) == [])
        #expect(h.steps(.discard(s1)) == [])
        #expect(h.condition(s1) == .discarded && h.condition(s2) == .discarded)
        #expect(h.engine.apps[mail]?.pendingDiscards == [s2, s1])
        // The next launch delivers the set right after didFinishLaunching (U4), then connects.
        let next = try h.run(.activate(s3), at: at(100))
        #expect(next.map(Step.init) == [launched, discardedStep(nil), connectTo(s3), enterForeground(s3), becomeActive(s3)])
        #expect(next[at: 1]?.detail == .discarded([s2, s1]))
        #expect(h.engine.apps[mail]?.pendingDiscards == [])
        // Delivered once only.
        h.steps(.terminate(mail))
        #expect(h.steps(.launch(mail)) == [launched])
    }

    @Test func pendingDiscardOfASingleSessionNamesIt() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.terminate(mail))
        h.steps(.discard(s1))
        let next = try h.run(.connect(ConnectRequest(app: mail)))
        #expect(next.map(Step.init) == [launched, discardedStep(s1), configure(s2), connectTo(s2),
                                        enterForeground(s2), becomeActive(s2)])
        #expect(next[at: 1]?.detail == .discarded([s1]))
    }

    // MARK: §2.10 Termination

    @Test func terminationRunningVersusSuspended() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(maps, background: true)
        h.tick(at: at(5))
        #expect(h.process(maps) == .suspended)
        // Running (here in the foreground): the background chain first (R33), willTerminate,
        // then death; the scenes are archived with no further callback (§4.3).
        let running = try h.run(.terminate(mail))
        #expect(running.map(Step.init) == [resignActive(s1), enterBackground(s1), willTerminateStep, terminatedStep])
        #expect(running[at: 3]?.detail == .terminated(reason: .requested, archived: [s1]))
        #expect(running[at: 0]?.appState == .inactive && running[at: 2]?.appState == .background)
        // Suspended: no callback (R21, R22).
        let suspended = try h.run(.terminate(maps))
        #expect(suspended.map(Step.init) == [terminatedStep])
        #expect(suspended[at: 0]?.detail == .terminated(reason: .requested, archived: [s2]))
        #expect(h.condition(s1) == .archived && h.condition(s2) == .archived)
    }

    @Test func terminationRunningInTheBackground() throws {
        var h = Harness()
        _ = h.connect(mail, background: true)
        let t = try h.run(.terminate(mail, cause: .reclaim(note)), at: at(2))
        #expect(t.map(Step.init) == [willTerminateStep, terminatedStep])
        #expect(t[at: 1]?.detail == .terminated(reason: .memoryPressure, archived: [s1]))
    }

    @Test func terminationOfALaunchedAppWithNoScene() throws {
        var h = Harness()
        #expect(h.steps(.launch(mail)) == [launched])
        let t = try h.run(.terminate(mail))
        #expect(t.map(Step.init) == [willTerminateStep, terminatedStep])
        #expect(t[at: 1]?.detail == .terminated(reason: .requested, archived: []))
    }

    // MARK: §2.11 Memory warning

    @Test func memoryWarningGoesToRunningAppsOnly() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(maps, background: true)
        _ = h.connect(notes)
        h.steps(.terminate(notes))
        h.tick(at: at(5))
        #expect(h.process(maps) == .suspended)
        let w = try h.run(.memoryWarning(apps: nil))
        #expect(w.map(Step.init) == [memoryWarningStep])
        #expect(w[at: 0]?.app == mail)
        // A named suspended or not running app gets nothing either.
        #expect(h.steps(.memoryWarning(apps: [maps, notes])) == [])
        // Several running apps: one warning each, in app order, once each.
        h.steps(.activate(s2))
        let two = try h.run(.memoryWarning(apps: [maps, mail, maps]))
        #expect(two.map(\.app) == [mail, maps])
    }

    // MARK: §2.12 Background task

    @Test func backgroundTaskEndingNormally() {
        var h = Harness()
        _ = h.connect(mail)
        let t = h.beginTask(session: s1)
        h.steps(.background(s1), at: at(1))
        #expect(h.tick(at: at(20)) == [])
        #expect(h.process(mail) == .running)
        #expect(h.steps(.endTask(t), at: at(21)) == [])
        #expect(h.tick(at: at(25)) == [])
        #expect(h.tick(at: at(26)) == [suspendedStep])
    }

    @Test func backgroundTaskExpiringThenEnded() throws {
        var h = Harness()
        _ = h.connect(mail)
        let t = h.beginTask(session: s1, name: "upload")
        h.steps(.background(s1), at: at(1))
        #expect(h.tick(at: atMs(30_999)) == [])
        let expiry = try h.run(.tick, at: at(31))
        #expect(expiry.map(Step.init) == [expireStep(s1)])
        #expect(expiry[at: 0]?.time == at(31) && expiry[at: 0]?.cause == .timer)
        #expect(expiry[at: 0]?.detail == .task(t, name: "upload"))
        // The handler ends the task within the grace: suspension follows the delay.
        #expect(h.steps(.endTask(t), at: at(32)) == [])
        #expect(h.tick(at: at(37)) == [suspendedStep])
        #expect(h.log.last?.time == at(37))
    }

    @Test func backgroundTaskLeakedIsKilledWithoutWillTerminate() throws {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.beginTask(app: mail)
        h.steps(.background(s1))
        let kill = try h.run(.tick, at: at(100))
        #expect(kill.map(Step.init) == [expireStep(nil), terminatedStep])
        #expect(kill.map(\.time) == [at(30), at(32)])
        #expect(kill[at: 1]?.detail == .terminated(reason: .backgroundTaskExpired, archived: [s1]))
        #expect(kill[at: 1]?.cause == .timer)
        #expect(!h.log.contains { $0.name == .willTerminate })
        #expect(h.engine.tasks.isEmpty && h.condition(s1) == .archived)
    }

    // MARK: §2.13 Background launch

    @Test func connectStraightToTheBackground() throws {
        var h = Harness()
        let c = try h.run(.connect(ConnectRequest(app: mail, background: true)))
        // U7 decision: willConnectTo, then didEnterBackground, no foreground callbacks.
        #expect(c.map(Step.init) == [launched, configure(s1), connectTo(s1), enterBackground(s1)])
        #expect(c.allSatisfy { $0.appState == .background })
        #expect(h.tick(at: at(5)) == [suspendedStep])
        #expect(h.steps(.activate(s1)) == [resumedStep, enterForeground(s1), becomeActive(s1)])
    }
}

let note = ReclaimNote(level: "critical", usageBefore: 2, usageAfter: 1, budget: 1, score: 0.5, reason: "test")
