import Testing
@testable import SceneCore

@Suite struct SmokeTests {
    @Test func coldLaunch() throws {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        let result = try engine.handle(.connect(ConnectRequest(app: AppID("com.example.mail")!)), now: .zero, effects: &effects)
        let names = effects.compactMap { if case .event(let e) = $0 { e.name.name } else { nil } }
        #expect(names == ["didFinishLaunching", "configurationForConnecting", "willConnectTo", "willEnterForeground", "didBecomeActive"])
        #expect(result == .session(SessionID(1)))
    }
}
