import Testing
@testable import SceneCore

/// R18: the app's state is its most active connected scene; `background` with none. Checked
/// for 0, 1, 2 and 3 scenes in every combination of the four scene states, through
/// `ApplicationState.derive` and through the engine (built in two different orders, so that a
/// scene reaching its state never moves another).
@Suite struct AppStateDerivationTests {
    static let combinations: [[SceneActivationState]] = {
        var all: [[SceneActivationState]] = [[]]
        var layer: [[SceneActivationState]] = [[]]
        for _ in 1...3 {
            layer = layer.flatMap { prefix in SceneActivationState.allCases.map { prefix + [$0] } }
            all += layer
        }
        return all
    }()

    /// The rule, stated independently of the implementation.
    static func expected(_ states: [SceneActivationState]) -> ApplicationState {
        if states.contains(.foregroundActive) { return .active }
        if states.contains(.foregroundInactive) { return .inactive }
        return .background
    }

    @Test func thereAreEightyFiveCombinations() {
        #expect(Self.combinations.count == 1 + 4 + 16 + 64)
        #expect(Set(Self.combinations.map { $0.map(\.name).joined(separator: ",") }).count == 85)
    }

    @Test(arguments: combinations)
    func deriveFollowsTheRule(_ states: [SceneActivationState]) {
        #expect(ApplicationState.derive(from: states) == Self.expected(states))
        #expect(ApplicationState.derive(from: states.reversed()) == Self.expected(states))
        var record = AppRecord(id: mail, process: .running)
        for s in states {
            switch s {
            case .foregroundActive: record.activeScenes += 1
            case .foregroundInactive: record.inactiveScenes += 1
            case .background: record.backgroundScenes += 1
            case .unattached: break
            }
        }
        #expect(record.applicationState == Self.expected(states))
        #expect(record.hasForegroundScene == states.contains { $0.isForeground })
        #expect(Int(record.connectedScenes) == states.filter { $0 != .unattached }.count)
    }

    /// Builds each scene straight into its state, one after the other.
    @Test(arguments: combinations)
    func engineDerivesTheStateBuiltForward(_ states: [SceneActivationState]) {
        var h = Harness()
        h.steps(.launch(mail))
        var ids: [SessionID] = []
        for state in states {
            let id = h.connect(mail, background: state == .background || state == .unattached)
            switch state {
            case .foregroundInactive: h.steps(.deactivate(id))
            case .unattached: h.steps(.disconnect(id))
            case .foregroundActive, .background: break
            }
            ids.append(id)
        }
        check(h, ids, states)
    }

    /// Builds every scene active first, then moves each to its state, last one first.
    @Test(arguments: combinations)
    func engineDerivesTheStateBuiltBackward(_ states: [SceneActivationState]) {
        var h = Harness()
        h.steps(.launch(mail))
        let ids = states.map { _ in h.connect(mail) }
        for (id, state) in zip(ids, states).reversed() {
            switch state {
            case .foregroundActive: break
            case .foregroundInactive: h.steps(.deactivate(id))
            case .background: h.steps(.background(id))
            case .unattached: h.steps(.disconnect(id))
            }
            #expect(h.log.last.map { $0.appState == h.appState(mail) } ?? true)
        }
        check(h, ids, states)
    }

    func check(_ h: Harness, _ ids: [SessionID], _ states: [SceneActivationState],
               sourceLocation: SourceLocation = #_sourceLocation) {
        let actual = ids.map { h.engine.sessions[$0]?.sceneState ?? .unattached }
        #expect(actual == states, sourceLocation: sourceLocation)
        let want = Self.expected(states)
        #expect(h.appState(mail) == want, sourceLocation: sourceLocation)
        #expect(ApplicationState.derive(from: actual) == want, sourceLocation: sourceLocation)
        // The last event carries the state the app was left in (R18).
        #expect(h.log.last?.appState == want, sourceLocation: sourceLocation)
        let app = h.engine.apps[mail] ?? AppRecord(id: mail)
        #expect(Int(app.activeScenes) == states.count { $0 == .foregroundActive }, sourceLocation: sourceLocation)
        #expect(Int(app.inactiveScenes) == states.count { $0 == .foregroundInactive }, sourceLocation: sourceLocation)
        #expect(Int(app.backgroundScenes) == states.count { $0 == .background }, sourceLocation: sourceLocation)
        #expect(h.engine.foregroundActiveSceneCount == states.count { $0 == .foregroundActive }, sourceLocation: sourceLocation)
    }

    /// The derivation is per app: one app's scenes never lend their state to another.
    @Test func appsAreDerivedSeparately() {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(maps, background: true)
        let n = h.connect(notes)
        h.steps(.deactivate(n))
        #expect(h.appState(mail) == .active && h.appState(maps) == .background && h.appState(notes) == .inactive)
    }

    /// A process that is suspended or not running reads `background` (§1.2).
    @Test func suspendedAndNotRunningAppsReadBackground() {
        var h = Harness()
        let s = h.connect(mail, background: true)
        h.tick(at: at(5))
        #expect(h.process(mail) == .suspended && h.appState(mail) == .background)
        h.steps(.activate(s))
        h.steps(.terminate(mail))
        #expect(h.process(mail) == .notRunning && h.appState(mail) == .background)
        #expect(AppRecord(id: maps).applicationState == .background)
    }
}
