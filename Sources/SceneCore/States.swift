/// `UIScene.ActivationState`. There is no suspended scene state: suspension belongs to the
/// process, and a suspended app's scenes report `background` (uikit-lifecycle.md §1.1).
public enum SceneActivationState: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case unattached
    case foregroundInactive
    case foregroundActive
    case background

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .unattached: "unattached"
        case .foregroundInactive: "foregroundInactive"
        case .foregroundActive: "foregroundActive"
        case .background: "background"
        }
    }
    public var name: String { staticName.description }
    public init?(name: String) {
        guard let s = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = s
    }
    public var description: String { name }
    public var isForeground: Bool { self == .foregroundActive || self == .foregroundInactive }
}

/// `UIApplication.State`, derived from the app's connected scenes by rule R18.
public enum ApplicationState: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case active
    case inactive
    case background

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .active: "active"
        case .inactive: "inactive"
        case .background: "background"
        }
    }
    public var name: String { staticName.description }
    public init?(name: String) {
        guard let s = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = s
    }
    public var description: String { name }

    /// R18: the most active connected scene wins; `background` when no scene is connected.
    public static func derive<S: Sequence>(from scenes: S) -> ApplicationState
    where S.Element == SceneActivationState {
        var state = ApplicationState.background
        for scene in scenes {
            switch scene {
            case .foregroundActive: return .active
            case .foregroundInactive: state = .inactive
            case .background, .unattached: break
            }
        }
        return state
    }
}

/// The app's process state (uikit-lifecycle.md §1.2).
public enum ProcessState: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case notRunning
    case running
    case suspended

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .notRunning: "notRunning"
        case .running: "running"
        case .suspended: "suspended"
        }
    }
    public var name: String { staticName.description }
    public init?(name: String) {
        guard let s = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = s
    }
    public var description: String { name }
}

/// Where a session is in its own life (uikit-lifecycle.md §1.5). Discarded sessions are removed
/// from the engine; their identifiers stay allocated, so they can still be recognised as discarded.
public enum SessionCondition: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// A scene is connected.
    case live
    /// The scene was disconnected; the session and its data are kept.
    case archived
    /// Gone for ever (R15). Only reported, never stored.
    case discarded

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .live: "live"
        case .archived: "archived"
        case .discarded: "discarded"
        }
    }
    public var name: String { staticName.description }
    public init?(name: String) {
        guard let s = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = s
    }
    public var description: String { name }
}

/// `UISceneSession.Role`, with short names.
public enum SessionRole: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case windowApplication
    case windowExternalDisplayNonInteractive
    case carTemplateApplication
    case volumetricApplication
    case immersiveSpaceApplication

    /// The name as static bytes (no String is built: replies and logs use it on hot paths).
    public var staticName: StaticString {
        switch self {
        case .windowApplication: "windowApplication"
        case .windowExternalDisplayNonInteractive: "windowExternalDisplayNonInteractive"
        case .carTemplateApplication: "carTemplateApplication"
        case .volumetricApplication: "volumetricApplication"
        case .immersiveSpaceApplication: "immersiveSpaceApplication"
        }
    }
    public var name: String { staticName.description }
    public init?(name: String) {
        guard let s = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = s
    }
    public var description: String { name }
}
