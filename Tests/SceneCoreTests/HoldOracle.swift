@testable import SceneCore

/// What a change of holds must emit (R28–R31), stated from the rules: apps in the engine's
/// order, each app's connected scenes in id order. A scene moved down remembers where it was
/// (the engine's `heldScenes`, itself checked against an event-built model in HoldTests).
enum HoldOracle {
    typealias P = CommandOracle.Predicted

    static func predict(_ policy: HoldPolicy, in e: LifecycleEngine) -> [P] {
        var out: [P] = []
        for app in e.apps.records {
            let before = e.holds.hold(for: app.id).level, after = policy.hold(for: app.id).level
            guard before != after else { continue }
            var suspended = app.process == .suspended
            func wake() -> [P] {
                guard suspended else { return [] }
                suspended = false
                return [P(.resumed)]
            }
            let scenes = e.sessions.values.filter { $0.app == app.id && $0.condition == .live }.sorted { $0.id < $1.id }
            for s in scenes {
                out += moves(s, held: e.heldScenes[s.id], to: after, wake: wake)
            }
        }
        return out
    }

    private static func moves(_ s: SceneSession, held: SceneActivationState?, to level: HoldLevel,
                              wake: () -> [P]) -> [P] {
        switch (level, s.sceneState) {
        case (.background, .foregroundActive): return [P(.willResignActive, s.id), P(.didEnterBackground, s.id)]
        case (.background, .foregroundInactive): return [P(.didEnterBackground, s.id)]
        case (.inactive, .foregroundActive): return [P(.willResignActive, s.id)]
        case (.inactive, .background) where held != nil: return wake() + [P(.willEnterForeground, s.id)]
        case (.none, _):
            guard let held else { return [] }
            var out: [P] = []
            if s.sceneState == .background { out += wake() + [P(.willEnterForeground, s.id)] }
            if held == .foregroundActive && s.sceneState != .foregroundActive { out.append(P(.didBecomeActive, s.id)) }
            return out
        default: return []
        }
    }
}
