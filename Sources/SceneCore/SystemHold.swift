/// How far the system holds an app's scenes below the state they were asked for (R28–R32).
///
/// `inactive`: foreground scenes may not be active (an interruption, the first moment of a
/// lock). `background`: the scenes the hold found in the foreground were sent to the
/// background; an activation still brings a scene to foregroundInactive (R29), never further.
public enum HoldLevel: UInt8, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case none
    case inactive
    case background

    public static func < (a: HoldLevel, b: HoldLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .none: "none"
        case .inactive: "inactive"
        case .background: "background"
        }
    }
}

/// One hold: how far, and the cause its events carry.
public struct Hold: Sendable, Equatable {
    public var level: HoldLevel
    public var cause: EventCause

    public init(_ level: HoldLevel, cause: EventCause) {
        self.level = level
        self.cause = cause
    }

    public static let none = Hold(.none, cause: .request)

    /// The stronger of two holds; on a tie, `self`'s cause.
    public func joined(with other: Hold) -> Hold { other.level > level ? other : self }
}

/// Every hold in force, as the shell derives it from the system's state: the holds on every
/// app (interruptions, sleep, a stop) and the lock state of the login sessions each app
/// follows (`standard` for apps not listed: those that follow scened's own user).
public struct HoldPolicy: Sendable, Equatable {
    public var system: Hold
    public var standard: Hold
    public var apps: [AppID: Hold]

    public init(system: Hold = .none, standard: Hold = .none, apps: [AppID: Hold] = [:]) {
        self.system = system
        self.standard = standard
        self.apps = apps
    }

    public func hold(for app: AppID) -> Hold {
        system.joined(with: apps[app] ?? standard)
    }

    /// Whether any app may be held: lets the engine skip the lookup on every activation.
    public var holdsAny: Bool {
        system.level != .none || standard.level != .none || apps.values.contains { $0.level != .none }
    }
}
