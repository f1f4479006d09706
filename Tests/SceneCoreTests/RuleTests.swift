import Testing
@testable import SceneCore

/// Rules R1–R27 (uikit-lifecycle.md §3). For each applicable rule: the engine keeps it in a
/// scenario aimed at it (every Harness command also runs the whole checker), and the
/// conformance checker reports it, under its rule id, when a real event log is altered to
/// break it. Not applicable: R20, R23 (see ConformanceChecker.swift).
@Suite struct RuleTests {
    let s1 = SessionID(1), s2 = SessionID(2), s3 = SessionID(3)

    // MARK: Tools

    /// The rules a fresh checker reports for these events (renumbered 1, 2, 3…).
    static func rules(_ events: [LifecycleEvent], strict: Bool = true, timing: EngineConfiguration? = .standard,
                      saved: [SessionID: RestorationData?] = [:]) -> Set<ConformanceRule> {
        var checker = ConformanceChecker(options: .init(timing: timing, strict: strict, consecutiveSequence: true))
        for (id, data) in saved { checker.noteRestorationSaved(data, for: id) }
        return Set(checker.check(renumbered(events)).map(\.rule))
    }

    static func renumbered(_ events: [LifecycleEvent]) -> [LifecycleEvent] {
        events.enumerated().map { i, e in
            var e = e
            e.seq = UInt64(i + 1)
            return e
        }
    }

    /// The index of the first event matching (recorded as an issue, not a crash, when missing:
    /// a regression must not take the other tests down with it).
    static func index(_ log: [LifecycleEvent], _ name: EventName, _ session: SessionID? = nil, after: Int = -1,
                      sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        if let i = log.indices.first(where: { $0 > after && log[$0].name == name && (session == nil || log[$0].session == session) }) {
            return i
        }
        Issue.record("no \(name) after \(after) in \(log)", sourceLocation: sourceLocation)
        return max(0, min(after + 1, log.count - 1))
    }

    static func lastIndex(_ log: [LifecycleEvent], _ name: EventName, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        if let i = log.lastIndex(where: { $0.name == name }) { return i }
        Issue.record("no \(name) in \(log)", sourceLocation: sourceLocation)
        return 0
    }

    static func removing(_ log: [LifecycleEvent], _ i: Int) -> [LifecycleEvent] {
        var out = log
        out.remove(at: i)
        return out
    }

    @Test func theUnalteredLogsAreClean() {
        for log in [homeAndBack().log, reclaimAndReconnect().log, discards().log, tasks().log] {
            #expect(Self.rules(log).isEmpty)
        }
    }

    // Scenario logs to alter.

    /// s1 launched active, home, suspended, back (resumed).
    func homeAndBack() -> Harness {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        h.tick(at: at(5))
        h.steps(.activate(s1), at: at(6))
        return h
    }

    /// s1 in the background, reclaimed, reconnected; then the app killed and s1 restored.
    func reclaimAndReconnect() -> Harness {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.steps(.saveState(s1, .json("{\"r\":1}")))
        h.steps(.disconnect(s1, cause: .reclaim(note)))
        h.steps(.activate(s1))
        h.steps(.terminate(mail))
        h.steps(.activate(s1), at: at(10))
        return h
    }

    /// s1, s2, s3 of mail: s3 discarded while running; the app killed, s1 and s2 discarded while
    /// not running, delivered at the next launch with a new session s4.
    func discards() -> Harness {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(mail)
        _ = h.connect(mail)
        h.steps(.discard(s3))
        h.steps(.terminate(mail))
        h.steps(.discard(s1))
        h.steps(.discard(s2))
        _ = h.connect(mail)
        return h
    }

    /// A task expires and kills mail; maps suspended; a memory warning.
    func tasks() -> Harness {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.beginTask(session: s1)
        h.steps(.background(s1))
        _ = h.connect(maps, background: true)
        h.tick(at: at(40))
        h.steps(.memoryWarning(apps: nil))
        return h
    }

    // MARK: Scene instance rules

    @Test func r1FirstCallbackIsWillConnectTo() {
        let log = homeAndBack().log
        #expect(log[Self.index(log, .willConnectTo)].sceneInstance == 1)
        #expect(log.first { $0.name.isSceneCallback }?.name == .willConnectTo)
        // Dropping willConnectTo: willEnterForeground comes first for the instance.
        #expect(Self.rules(Self.removing(log, Self.index(log, .willConnectTo))).contains(.R1))
    }

    @Test func r2DisconnectEndsTheInstanceAndReconnectionIsANewOne() {
        let log = reclaimAndReconnect().log
        let instances = log.filter { $0.name == .willConnectTo }.map(\.sceneInstance)
        #expect(instances == [1, 2, 3])
        // A callback for the old instance after its didDisconnect.
        var late = log
        var stale = log[Self.index(log, .didEnterBackground, s1)]
        stale.time = late.last!.time
        late.append(stale)
        #expect(Self.rules(late).contains(.R2))
        // A reconnection that reuses the old instance number.
        var reused = log
        let i = Self.index(log, .willConnectTo, s1, after: Self.index(log, .didDisconnect))
        for j in i..<(i + 3) { reused[j].sceneInstance = 1 }
        #expect(Self.rules(reused).contains(.R2))
    }

    @Test func r3NeverActiveStraightToBackground() {
        var h = Harness()
        _ = h.connect(mail)
        #expect(h.steps(.background(s1)) == [resignActive(s1), enterBackground(s1)])
        _ = h.connect(mail)
        #expect(h.steps(.disconnect(s2)) == [resignActive(s2), enterBackground(s2), disconnected(s2)])
        let log = h.log
        #expect(Self.rules(Self.removing(log, Self.index(log, .willResignActive, s1))).contains(.R3))
        #expect(Self.rules(Self.removing(Self.removing(log, Self.index(log, .didEnterBackground, s2)),
                                         Self.index(log, .willResignActive, s2))).contains(.R3))
    }

    @Test func r4BecomeActiveFromBackgroundNeedsWillEnterForeground() {
        var h = homeAndBack()
        h.steps(.deactivate(s1))
        #expect(h.steps(.activate(s1)) == [becomeActive(s1)])  // from an interruption: no willEnterForeground
        let log = h.log
        let back = Self.index(log, .willEnterForeground, s1, after: Self.index(log, .resumed))
        #expect(Self.rules(Self.removing(log, back)).contains(.R4))
    }

    @Test func r5WillEnterForegroundIsFollowedByDidBecomeActive() {
        let log = homeAndBack().log
        for i in log.indices where log[i].name == .willEnterForeground {
            #expect(log[i + 1].name == .didBecomeActive && log[i + 1].session == log[i].session)
        }
        var broken = log
        let i = Self.index(log, .willEnterForeground)
        broken.insert(log[i], at: i + 1)
        #expect(Self.rules(broken).contains(.R5))
        #expect(!Self.rules(broken, strict: false).contains(.R5))  // tolerated by clients
    }

    @Test func r6ReclaimOnlyDisconnectsBackgroundScenes() {
        var h = Harness()
        _ = h.connect(mail)
        h.refuseTransition(.disconnect(s1, cause: .reclaim(note)))
        h.steps(.deactivate(s1))
        h.refuseTransition(.disconnect(s1, cause: .reclaim(note)))
        h.refuseTransition(.terminate(mail, cause: .reclaim(note)))
        h.steps(.background(s1))
        #expect(h.steps(.disconnect(s1, cause: .reclaim(note))) == [disconnected(s1)])
        // A requested disconnect from the foreground, relabelled as reclaim.
        var r = Harness()
        _ = r.connect(mail)
        r.steps(.disconnect(s1))
        let relabelled = r.log.map { e -> LifecycleEvent in
            var e = e
            if e.name.isSceneCallback && e.name != .willConnectTo { e.cause = .reclaim(note) }
            return e
        }
        #expect(Self.rules(relabelled).contains(.R6))
        var onlyDisconnect = r.log
        onlyDisconnect.removeAll { $0.name == .willResignActive || $0.name == .didEnterBackground }
        onlyDisconnect[onlyDisconnect.count - 1].cause = .reclaim(note)
        #expect(Self.rules(onlyDisconnect).contains(.R6))
    }

    @Test func r7EnterAndLeaveAlternate() {
        let log = homeAndBack().log
        var twice = log
        let i = Self.index(log, .didBecomeActive)
        twice.insert(log[i], at: i + 1)
        #expect(Self.rules(twice).contains(.R7))
        var twiceBackground = log
        let j = Self.index(log, .didEnterBackground)
        twiceBackground.insert(log[j], at: j + 1)
        #expect(Self.rules(twiceBackground).contains(.R7))
    }

    @Test func r8TheStateAnEventNamesIsTheStateItLeaves() {
        let log = homeAndBack().log
        for e in log where e.name.isSceneCallback {
            #expect(e.state == .scene(ConformanceChecker.stateAfter(e.name)))
        }
        var wrong = log
        wrong[Self.index(log, .didBecomeActive)].state = .scene(.foregroundInactive)
        #expect(Self.rules(wrong).contains(.R8))
        var wrongProcess = log
        wrongProcess[Self.index(log, .suspended)].state = .process(.running)
        #expect(Self.rules(wrongProcess).contains(.R8))
    }

    @Test func r9NoDisconnectWithoutADecision() {
        // Hours in the background, suspended: still connected.
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        h.tick(at: at(86_400))
        #expect(h.condition(s1) == .live && !h.log.contains { $0.name == .didDisconnect })
        var log = reclaimAndReconnect().log
        log[Self.index(log, .didDisconnect)].cause = .timer
        #expect(Self.rules(log).contains(.R9))
    }

    // MARK: Session rules

    @Test func r10ConfigurationOnlyForNewSessions() {
        let log = reclaimAndReconnect().log
        #expect(log.filter { $0.name == .configurationForConnecting }.count == 1)
        // configurationForConnecting before a reconnection.
        var extra = log
        let i = Self.index(log, .willConnectTo, s1, after: Self.index(log, .didDisconnect))
        var config = log[0 + 1]
        config.time = log[i].time
        extra.insert(config, at: i)
        #expect(Self.rules(extra).contains(.R10))
        // A new session without it.
        #expect(Self.rules(Self.removing(log, Self.index(log, .configurationForConnecting))).contains(.R10))
    }

    @Test func r11ReconnectionHandsBackWhatWasSaved() throws {
        let h = reclaimAndReconnect()
        let reconnections = h.log.filter { $0.name == .willConnectTo && $0.sceneInstance > 1 }
        #expect(reconnections.map(\.detail) == Array(repeating: .connect(restoration: .json("{\"r\":1}"), reconnect: true), count: 2))
        #expect(Self.rules(h.log, saved: [s1: .json("{\"r\":1}")]).isEmpty)
        #expect(Self.rules(h.log, saved: [s1: .json("{\"r\":2}")]).contains(.R11))
        #expect(Self.rules(h.log, saved: [s1: nil]).contains(.R11))
        var unmarked = h.log
        let i = Self.index(h.log, .willConnectTo, s1, after: Self.index(h.log, .didDisconnect))
        unmarked[i].detail = .connect(restoration: .json("{\"r\":1}"), reconnect: false)
        #expect(Self.rules(unmarked).contains(.R11))
    }

    @Test func r12NoDiscardUnderReclaim() {
        var h = Harness()
        _ = h.connect(mail, background: true)
        h.refuseTransition(.discard(s1, cause: .reclaim(note)))
        h.steps(.disconnect(s1, cause: .reclaim(note)))
        h.refuseTransition(.discard(s1, cause: .reclaim(note)))
        #expect(h.condition(s1) == .archived)
        var log = discards().log
        log[Self.index(log, .didDiscardSceneSessions)].cause = .reclaim(note)
        #expect(Self.rules(log).contains(.R12))
    }

    @Test func r13DisconnectBeforeDiscard() {
        let log = discards().log
        #expect(Self.index(log, .didDisconnect, s3) < Self.index(log, .didDiscardSceneSessions, s3))
        #expect(Self.rules(Self.removing(log, Self.index(log, .didDisconnect, s3))).contains(.R13))
    }

    @Test func r14DiscardsWhileNotRunningComeAfterTheNextLaunch() {
        let log = discards().log
        let launch = Self.lastIndex(log, .didFinishLaunching)
        #expect(log[launch + 1].name == .didDiscardSceneSessions)
        #expect(log[launch + 1].detail == .discarded([s1, s2]))
        // The set delivered elsewhere than right after didFinishLaunching.
        var moved = log
        let set = moved.remove(at: launch + 1)
        moved.append(set)
        #expect(Self.rules(moved).contains(.R14))
    }

    @Test func r15ADiscardedSessionNeverReappears() {
        let log = discards().log
        #expect(Self.rules(log).isEmpty)
        var h = discards()
        h.refuse(.activate(s3), .sessionDiscarded(s3))
        #expect(h.engine.nextSessionNumber == 5 && h.engine.sessions[SessionID(4)] != nil)
        // An event naming a discarded session, and a discarded identifier reused for a new one.
        var mentioned = log
        var e = log[Self.index(log, .didBecomeActive, s3)]
        e.time = log.last!.time
        mentioned.append(e)
        #expect(Self.rules(mentioned).contains(.R15))
        var reused = log
        let first = Self.index(log, .configurationForConnecting, SessionID(4))
        for j in first..<(first + 4) { reused[j].session = s3 }
        #expect(Self.rules(reused).contains(.R15))
    }

    @Test func r16DeathArchivesEverySessionAndKeepsIt() throws {
        let h = discards()
        let death = h.log[Self.index(h.log, .terminated)]
        #expect(death.detail == .terminated(reason: .requested, archived: [s1, s2]))
        var log = h.log
        log[Self.index(log, .terminated)].detail = .terminated(reason: .requested, archived: [s1])
        #expect(Self.rules(log).contains(.R16))
        // The engine losing an archived session (R16) or a live one (a silent change).
        var r = reclaimAndReconnect()
        r.engine.sessions[s1] = nil
        #expect(r.checker.disagreements(with: r.engine).map(\.rule) == [.agreement])
        var a = Harness()
        _ = a.connect(mail, background: true)
        a.steps(.disconnect(s1))
        a.engine.sessions[s1] = nil
        #expect(a.checker.disagreements(with: a.engine).map(\.rule).contains(.R16))
    }

    @Test func r17OneSceneAtATime() {
        var h = Harness()
        _ = h.connect(mail)
        // Activating a connected session does not connect a second scene.
        h.steps(.activate(s1))
        h.steps(.background(s1))
        #expect(h.steps(.activate(s1)) == [enterForeground(s1), becomeActive(s1)])
        #expect(h.log.filter { $0.name == .willConnectTo }.count == 1)
        var log = h.log
        var again = log[Self.index(log, .willConnectTo)]
        again.sceneInstance = 2
        log.append(again)
        #expect(Self.rules(log).contains(.R17))
    }
}
