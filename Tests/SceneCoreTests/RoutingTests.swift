import Testing
@testable import SceneCore

// Routing in the engine: which scene an Open reaches, in which order its events come, what a
// not-running app keeps for its launch, and activation conditions' life.

func url(_ text: String) -> OpenPayload { OpenPayload(urlContexts: [URLContext(url: text)]) }
func activity(_ type: String, target: String? = nil) -> OpenPayload {
    OpenPayload(userActivities: [UserActivity(activityType: type, targetContentIdentifier: target)])
}
func opened(_ s: SessionID, _ state: SceneActivationState) -> Step { S(.openURLContexts, s, state) }
func continued(_ s: SessionID, _ state: SceneActivationState) -> Step { S(.continueUserActivity, s, state) }

extension Harness {
    /// Runs an Open that must succeed; returns its result and steps.
    mutating func open(_ app: AppID, _ payload: OpenPayload, session: SessionID? = nil, activate: Bool = true,
                       sourceLocation: SourceLocation = #_sourceLocation) -> (CommandResult?, [Step]) {
        let request = OpenRequest(app: app, session: session, payload: payload, activate: activate)
        var effects: [Effect] = []
        do {
            let result = try engine.handle(.open(request), now: now, effects: &effects)
            lastEffects = effects
            let new = events(effects)
            log += new
            let violations = checker.check(new) + checker.disagreements(with: engine)
                + ConformanceChecker.consistencyViolations(of: engine)
            #expect(violations.isEmpty, "open: \(violations)", sourceLocation: sourceLocation)
            return (result, new.map(Step.init))
        } catch {
            Issue.record("open failed: \(error)", sourceLocation: sourceLocation)
            return (nil, [])
        }
    }

    mutating func conditions(_ s: SessionID, can: [String]? = nil, prefers: [String] = [],
                             sourceLocation: SourceLocation = #_sourceLocation) {
        steps(.setActivationConditions(s, ActivationConditions(canActivateFor: can, prefersToActivateFor: prefers)),
              sourceLocation: sourceLocation)
    }
}

@Suite("Scene selection")
struct SceneSelectionTests {
    @Test func patterns() {
        let cases: [(String, String, Bool)] = [
            ("*", "", true), ("*", "anything", true), ("?", "", false), ("?", "a", true), ("?", "ab", false),
            ("notes:*", "notes:1", true), ("notes:*", "maps:1", false), ("notes:?", "notes:12", false),
            ("a*b*c", "aXbYc", true), ("a*b*c", "aXbY", false), ("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaa", false),
            ("exact", "exact", true), ("exact", "exactly", false), ("", "", true), ("x*", "x", true),
            ("*.pdf", "doc.pdf", true), ("é?", "éü", true),
        ]
        for (p, t, expected) in cases {
            #expect(SceneSelection.matches(p, t) == expected, "\(p) ~ \(t)")
        }
    }

    @Test func longPatternsStayCheap() {
        let text = String(repeating: "a", count: 4000)
        let pattern = String(repeating: "*a", count: 500) + "b"
        let clock = ContinuousClock()
        let elapsed = clock.measure { #expect(!SceneSelection.matches(pattern, text)) }
        print("matching a 1001-character pattern of 500 stars against 4000 characters: \(elapsed)")
        #expect(elapsed < .seconds(2), "took \(elapsed)")
    }

    /// The engine's part of an Open to a connected scene, among 64 scenes with conditions:
    /// measured per command, bounded generously for a debug build on a shared machine.
    @Test func openAmongManyScenesIsCheap() throws {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        for i in 0..<64 {
            let r = try engine.handle(.connect(ConnectRequest(app: notes, background: i % 2 == 0)), now: .zero, effects: &effects)
            guard case .session(let id) = r else { return }
            try engine.handle(.setActivationConditions(id, ActivationConditions(canActivateFor: ["notes:\(i)/*"],
                                                                                prefersToActivateFor: ["notes:\(i)/x*"])),
                              now: .zero, effects: &effects)
        }
        let clock = ContinuousClock()
        var times: [Duration] = []
        for n in 0..<2_000 {
            effects.removeAll(keepingCapacity: true)
            let request = OpenRequest(app: notes, payload: url("notes:\(n % 64)/x\(n)"), activate: n % 3 == 0)
            times.append(try clock.measure { _ = try engine.handle(.open(request), now: .zero, effects: &effects) })
        }
        times.sort()
        let p50 = times[times.count / 2], p99 = times[times.count * 99 / 100]
        print("open among 64 scenes with conditions: p50 \(p50), p99 \(p99) (debug build)")
        #expect(p99 < .milliseconds(20))
        #expect(ConformanceChecker.consistencyViolations(of: engine).isEmpty)
    }

    @Test func orderPrefersThenCanThenForegroundThenRecent() {
        typealias C = SceneSelection.Candidate
        let a = C(id: SessionID(1), state: .background, lastActiveAt: at(5))
        let b = C(id: SessionID(2), state: .foregroundActive, lastActiveAt: at(1))
        let c = C(id: SessionID(3), state: .background, lastActiveAt: at(9))
        #expect(SceneSelection.choose([a, b, c], target: "x") == SessionID(2))
        #expect(SceneSelection.choose([a, c], target: "x") == SessionID(3))
        let d = C(id: SessionID(4), state: .background, lastActiveAt: at(0),
                  conditions: ActivationConditions(prefersToActivateFor: ["x*"]))
        #expect(SceneSelection.choose([a, b, c, d], target: "xy") == SessionID(4))
        #expect(SceneSelection.choose([a, b, c, d], target: "y") == SessionID(2))
        let only = C(id: SessionID(5), state: .foregroundActive, lastActiveAt: at(9),
                     conditions: ActivationConditions(canActivateFor: ["z"]))
        #expect(SceneSelection.choose([only], target: "y") == nil)
        #expect(SceneSelection.choose([only], target: "z") == SessionID(5))
        // No identifier: only "any" takes it, and a prefers pattern never matches it.
        let star = C(id: SessionID(6), state: .foregroundActive, lastActiveAt: at(9),
                     conditions: ActivationConditions(canActivateFor: ["*"], prefersToActivateFor: ["*"]))
        #expect(SceneSelection.choose([star], target: nil) == nil)
        #expect(SceneSelection.choose([star, a], target: nil) == SessionID(1))
        let tie1 = C(id: SessionID(8), state: .background, lastActiveAt: at(3))
        let tie2 = C(id: SessionID(7), state: .background, lastActiveAt: at(3))
        #expect(SceneSelection.choose([tie1, tie2], target: "x") == SessionID(7))
        let gone = C(id: SessionID(9), state: .unattached, lastActiveAt: at(99))
        #expect(SceneSelection.choose([gone], target: "x") == nil)
    }
}

@Suite("Routing")
struct RoutingTests {
    @Test func givenSessionInEachStateWithActivate() {
        var h = Harness()
        let s = h.connect(notes)
        h.steps(.background(s))
        var (result, steps) = h.open(notes, url("notes:1"), session: s)
        #expect(result == .session(s))
        #expect(steps == [enterForeground(s), opened(s, .foregroundInactive), becomeActive(s)])
        h.steps(.deactivate(s))
        (_, steps) = h.open(notes, url("notes:2"), session: s)
        #expect(steps == [opened(s, .foregroundInactive), becomeActive(s)])
        (_, steps) = h.open(notes, url("notes:3"), session: s)
        #expect(steps == [opened(s, .foregroundActive)])
    }

    @Test func withoutActivateTheEventAloneInItsState() {
        var h = Harness()
        let s = h.connect(notes, background: true)
        let (_, steps) = h.open(notes, url("notes:1"), session: s, activate: false)
        #expect(steps == [opened(s, .background)])
        #expect(h.state(s) == .background)
    }

    @Test func urlsBeforeActivities() {
        var h = Harness()
        let s = h.connect(notes)
        var both = url("notes:1")
        both.userActivities = activity("com.example.edit").userActivities
        let (_, steps) = h.open(notes, both, session: s)
        #expect(steps == [opened(s, .foregroundActive), continued(s, .foregroundActive)])
        guard case .event(let e) = h.lastEffects.first(where: { if case .event = $0 { true } else { false } }),
              case .open(let payload) = e.detail else {
            Issue.record("no open event")
            return
        }
        #expect(payload.urlContexts.map(\.url) == ["notes:1"] && payload.userActivities.isEmpty)
    }

    @Test func archivedSessionReconnectsWithThePayload() throws {
        var h = Harness()
        let s = h.connect(notes)
        h.steps(.saveState(s, .json("1")))
        h.steps(.disconnect(s))
        var (result, steps) = h.open(notes, url("notes:1"), session: s)
        #expect(result == .session(s))
        #expect(steps == [connectTo(s), enterForeground(s), becomeActive(s)])
        let connect = try #require(h.lastEffects.compactMap { if case .event(let e) = $0, e.name == .willConnectTo { e } else { nil } }.first)
        #expect(connect.detail == .connect(restoration: .json("1"), reconnect: true, open: url("notes:1")))
        h.steps(.disconnect(s))
        (_, steps) = h.open(notes, url("notes:2"), session: s, activate: false)
        #expect(steps == [connectTo(s), enterBackground(s)])
    }

    @Test func conditionsChooseAmongSeveral() {
        var h = Harness()
        let a = h.connect(notes)
        let b = h.connect(notes, background: true)
        h.now = at(1)
        let c = h.connect(notes, background: true)
        h.conditions(a, can: ["notes:list*"])
        h.conditions(b, prefers: ["notes:doc/*"])
        // Prefers beats a more foreground scene.
        var (result, _) = h.open(notes, url("notes:doc/7"), activate: false)
        #expect(result == .session(b))
        // Can: a takes its own; c (default, any) takes the rest, a not accepting it.
        (result, _) = h.open(notes, url("notes:list/1"), activate: false)
        #expect(result == .session(a))
        (result, _) = h.open(notes, url("notes:other"), activate: false)
        // b and c both accept it (defaults): the most recent, c (connected later), takes it.
        #expect(result == .session(c))
    }

    @Test func nilTargetMatchesOnlyAny() {
        var h = Harness()
        let a = h.connect(notes)
        h.conditions(a, can: ["*"], prefers: ["*"])
        var (result, steps) = h.open(notes, activity("com.example.edit"), activate: false)
        let fresh = SessionID(2)
        #expect(result == .session(fresh))
        #expect(steps == [configure(fresh), connectTo(fresh), enterBackground(fresh)])
        (result, _) = h.open(notes, activity("com.example.edit", target: "doc"), activate: false)
        #expect(result == .session(a))
    }

    @Test func newSceneWhenNoneAccepts() throws {
        var h = Harness()
        let a = h.connect(notes)
        h.conditions(a, can: ["notes:mine"])
        let (result, steps) = h.open(notes, url("notes:yours"))
        let fresh = SessionID(2)
        #expect(result == .session(fresh))
        #expect(steps == [configure(fresh), connectTo(fresh), enterForeground(fresh), becomeActive(fresh)])
        let connect = try #require(events(h.lastEffects).first { $0.name == .willConnectTo })
        #expect(connect.detail == .connect(restoration: nil, reconnect: false, open: url("notes:yours")))
    }

    @Test func heldSceneDoesNotBecomeActive() {
        var h = Harness()
        let s = h.connect(notes, background: true)
        h.steps(.setHolds(HoldPolicy(system: Hold(.inactive, cause: .interruption))))
        let (_, steps) = h.open(notes, url("notes:1"), session: s)
        #expect(steps == [enterForeground(s), opened(s, .foregroundInactive)])
        #expect(h.steps(.setHolds(HoldPolicy())) == [becomeActive(s)])
    }

    @Test func suspendedAppIsResumedFirst() {
        var h = Harness()
        let s = h.connect(notes, background: true)
        h.tick(at: at(60))
        #expect(h.process(notes) == .suspended)
        let (_, steps) = h.open(notes, url("notes:1"), session: s, activate: false)
        #expect(steps == [resumedStep, opened(s, .background)])
        #expect(h.process(notes) == .running)
    }

    @Test func notRunningAppGetsItsOpensAtLaunchInOrder() {
        var h = Harness()
        var (result, steps) = h.open(notes, url("notes:1"))
        #expect(result == .open(OpenID(1)) && steps.isEmpty)
        (result, _) = h.open(notes, url("notes:2"), activate: false)
        #expect(result == .open(OpenID(2)))
        #expect(h.engine.pendingOpens(of: notes).map(\.id) == [OpenID(1), OpenID(2)])
        #expect(h.lastEffects.contains(.openChanged(OpenID(2))))
        let s = SessionID(1)
        let launch = h.steps(.launch(notes))
        #expect(launch == [launched, configure(s), connectTo(s), enterForeground(s), becomeActive(s), opened(s, .foregroundActive)])
        #expect(h.lastEffects.contains(.openRemoved(OpenID(1))) && h.lastEffects.contains(.openRemoved(OpenID(2))))
        #expect(h.engine.pendingOpens.isEmpty && h.engine.apps[notes]?.pendingOpens == [])
    }

    @Test func pendingDiscardsComeBeforeStoredOpens() {
        var h = Harness()
        let old = h.connect(notes)
        h.steps(.terminate(notes))
        h.steps(.discard(old))
        _ = h.open(notes, url("notes:1"))
        let s = SessionID(2)
        #expect(h.steps(.launch(notes)) == [launched, discardedStep(old), configure(s), connectTo(s),
                                             enterForeground(s), becomeActive(s)])
    }

    @Test func limitOfStoredOpens() {
        var h = Harness(configuration: EngineConfiguration(maxPendingOpens: 2))
        _ = h.open(notes, url("notes:1"))
        _ = h.open(notes, url("notes:2"))
        h.refuse(.open(OpenRequest(app: notes, payload: url("notes:3"))),
                 .limitExceeded(limit: "MaxPendingOpens", maximum: 2, reason: "com.example.notes already has 2 opens waiting for its launch"))
        // Another app is not affected.
        let (result, _) = h.open(maps, url("maps:1"))
        #expect(result == .open(OpenID(3)))
    }

    @Test func crashKeepsStoredOpensAcrossARestartOfScened() throws {
        var h = Harness()
        let s = h.connect(notes)
        h.steps(.processDied(notes, reason: .exited))
        _ = h.open(notes, url("notes:1"), session: s)
        _ = h.open(notes, url("notes:2"), session: s, activate: false)
        var restored = try Harness(restoring: h.engine.snapshot, checker: h.checker)
        #expect(restored.engine.pendingOpens(of: notes).count == 2)
        #expect(restored.engine.nextOpenNumber == 3)
        let steps = restored.steps(.launch(notes))
        #expect(steps == [launched, connectTo(s), enterForeground(s), becomeActive(s), opened(s, .foregroundActive)])
    }

    @Test func activatingTheSessionAStoredOpenNamesConnectsItOnce() {
        var h = Harness()
        let s = h.connect(notes)
        h.steps(.terminate(notes))
        _ = h.open(notes, url("notes:1"), session: s, activate: false)
        let steps = h.steps(.activate(s))
        #expect(steps == [launched, connectTo(s), enterBackground(s), enterForeground(s), becomeActive(s)])
    }

    @Test func conditionsGoWithTheScene() {
        var h = Harness()
        let a = h.connect(notes)
        let b = h.connect(notes)
        let c = h.connect(notes)
        for s in [a, b, c] { h.conditions(s, can: ["x"]) }
        #expect(h.engine.activationConditions.count == 3)
        h.steps(.disconnect(a))
        #expect(h.engine.activationConditions[a] == nil && h.lastEffects.contains(.conditionsChanged(a)))
        h.steps(.discard(b))
        #expect(h.engine.activationConditions[b] == nil)
        h.steps(.processDied(notes, reason: .exited))
        #expect(h.engine.activationConditions.isEmpty)
        h.refuseTransition(.setActivationConditions(c, ActivationConditions(canActivateFor: ["x"])))
    }

    @Test func defaultConditionsAreNotHeld() {
        var h = Harness()
        let a = h.connect(notes)
        h.conditions(a, can: ["x"])
        h.steps(.setActivationConditions(a, nil))
        #expect(h.engine.activationConditions.isEmpty && h.lastEffects.contains(.conditionsChanged(a)))
        #expect(h.steps(.setActivationConditions(a, .default)).isEmpty && h.lastEffects.isEmpty)
    }

    @Test func badRequestsAreRefusedAndChangeNothing() {
        var h = Harness()
        let s = h.connect(notes)
        let other = h.connect(maps)
        h.refuse(.open(OpenRequest(app: notes, payload: OpenPayload())),
                 .invalidArgument(name: "payload", reason: "an Open needs a URL or an activity"))
        h.refuse(.open(OpenRequest(app: notes, payload: url("no scheme"))),
                 .invalidArgument(name: "url", reason: "no scheme has no scheme (RFC 3986)"))
        h.refuse(.open(OpenRequest(app: notes, session: other, payload: url("notes:1"))),
                 .invalidArgument(name: "session", reason: "s2 belongs to com.example.maps, not com.example.notes"))
        h.steps(.discard(s))
        h.refuse(.open(OpenRequest(app: notes, session: s, payload: url("notes:1"))), .sessionDiscarded(s))
        h.refuse(.setActivationConditions(other, ActivationConditions(canActivateFor: [""])),
                 .invalidArgument(name: "canActivateFor", reason: "each pattern must be 1 to 1024 bytes"))
        let many = Array(repeating: "p", count: 33)
        h.refuse(.setActivationConditions(other, ActivationConditions(prefersToActivateFor: many)),
                 .invalidArgument(name: "prefersToActivateFor", reason: "at most 32 patterns"))
    }

    @Test func aStoredOpenWhoseSessionWasDiscardedGetsANewScene() {
        var h = Harness()
        let s = h.connect(notes)
        h.steps(.terminate(notes))
        _ = h.open(notes, url("notes:1"), session: s)
        h.steps(.discard(s))
        let fresh = SessionID(2)
        #expect(h.steps(.launch(notes)) == [launched, discardedStep(s), configure(fresh), connectTo(fresh),
                                             enterForeground(fresh), becomeActive(fresh)])
    }
}

/// The checker on Opens' events: an Open's event between willEnterForeground and didBecomeActive
/// of its own scene is the order, anything else there breaks R5; each event carries its kind.
@Suite struct RoutingCheckerTests {
    /// A launched app whose background scene s1 an Open activates.
    static func openLog() -> [LifecycleEvent] {
        var h = Harness()
        let s = h.connect(notes, background: true)
        _ = h.connect(notes, background: true)
        var both = url("notes:1")
        both.userActivities = activity("com.example.edit").userActivities
        _ = h.open(notes, both, session: s)
        return h.log
    }

    @Test func theOrderOfAnActivatingOpenIsClean() {
        let log = Self.openLog()
        #expect(log.suffix(4).map(Step.init) == [enterForeground(SessionID(1)), opened(SessionID(1), .foregroundInactive),
                                                 continued(SessionID(1), .foregroundInactive), becomeActive(SessionID(1))])
        #expect(RuleTests.rules(log).isEmpty)
    }

    @Test func anOpenOfAnotherSceneInTheChainBreaksR5() {
        var log = Self.openLog()
        let i = RuleTests.index(log, .openURLContexts)
        log[i].session = SessionID(2)
        #expect(RuleTests.rules(log).contains(.R5))
    }

    @Test func anEventCarriesItsOwnKind() {
        var log = Self.openLog()
        let i = RuleTests.index(log, .openURLContexts)
        log[i].detail = .open(activity("com.example.edit"))
        #expect(RuleTests.rules(log) == [.stream])
        log[i].detail = .none
        #expect(RuleTests.rules(log) == [.stream])
    }

    @Test func anOpenToASceneNotConnectedBreaksR1() {
        var log = Self.openLog()
        let i = RuleTests.index(log, .openURLContexts)
        log[i].session = SessionID(9)
        #expect(RuleTests.rules(log).contains(.R1))
    }
}
