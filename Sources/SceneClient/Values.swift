import Foundation
@_exported import enum Varlink.JSONValue
@_exported import struct Varlink.JSONObject
import Varlink

/// UISceneSession.Role: what kind of scene a session makes.
public enum SessionRole: String, Sendable, Hashable, CaseIterable {
    case windowApplication
    case windowExternalDisplayNonInteractive
    case carTemplateApplication
    case volumetricApplication
    case immersiveSpaceApplication
}

/// UIScene.ActivationState.
public enum SceneActivationState: String, Sendable, Hashable {
    case unattached, foregroundInactive, foregroundActive, background
}

/// UIApplication.State.
public enum ApplicationState: String, Sendable, Hashable {
    case active, inactive, background
}

/// A scene's state-restoration data (what UIKit keeps as the session's
/// stateRestorationActivity): a JSON object or opaque bytes.
public enum RestorationData: Sendable, Equatable {
    case json(JSONObject)
    case bytes([UInt8])

    /// `value` encoded with JSONEncoder; it must encode as a JSON object.
    public init<T: Encodable>(encoding value: T) throws {
        let data = try JSONEncoder().encode(value)
        guard case .object(let object) = try JSONParser.parse([UInt8](data)) else {
            throw SceneClientError.invalidRestoration("\(T.self) does not encode as a JSON object")
        }
        self = .json(object)
    }

    /// The data decoded with JSONDecoder (the JSON object, or the bytes as JSON text).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch self {
        case .json(let object): return try JSONDecoder().decode(type, from: Data(JSONValue.object(object).serialized()))
        case .bytes(let bytes): return try JSONDecoder().decode(type, from: Data(bytes))
        }
    }

    /// io.scened.App's RestorationData.
    var wire: JSONValue {
        switch self {
        case .json(let object): return ["json": .object(object)]
        case .bytes(let bytes): return ["base64": .string(Data(bytes).base64EncodedString())]
        }
    }

    init?(wire: JSONValue?) {
        guard let wire, case .object = wire else { return nil }
        if let object = wire["json"]?.objectValue {
            self = .json(object)
        } else if let text = wire["base64"]?.stringValue, let data = Data(base64Encoded: text) {
            self = .bytes([UInt8](data))
        } else {
            return nil
        }
    }
}

/// UISceneSession: the persistent record of a scene, which outlives the scene's connections
/// and the app's process. Identified by its persistentIdentifier.
public struct SceneSession: Sendable, Hashable, CustomStringConvertible {
    /// The daemon's session id (s<number>), never reused.
    public let persistentIdentifier: String
    public var role: SessionRole
    /// The configuration name (UISceneConfiguration.name).
    public var configuration: String
    public var userInfo: JSONObject
    /// The state-restoration data the scene was connected with (willConnectTo), if any.
    public var stateRestorationActivity: RestorationData?

    public init(persistentIdentifier: String, role: SessionRole = .windowApplication, configuration: String = "Default Configuration",
                userInfo: JSONObject = [:], stateRestorationActivity: RestorationData? = nil) {
        self.persistentIdentifier = persistentIdentifier
        self.role = role
        self.configuration = configuration
        self.userInfo = userInfo
        self.stateRestorationActivity = stateRestorationActivity
    }

    public static func == (a: SceneSession, b: SceneSession) -> Bool { a.persistentIdentifier == b.persistentIdentifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(persistentIdentifier) }
    public var description: String { persistentIdentifier }
}

/// A session as the daemon lists it (UIApplication.openSessions), with its condition.
public struct SessionSummary: Sendable, Hashable {
    public var session: SceneSession
    /// live (connected to a scene) or archived (kept, no scene).
    public var isArchived: Bool
    public var state: SceneActivationState
}

/// UISceneConfiguration: what application(_:configurationForConnecting:options:) returns.
/// `delegateFactory` makes the scene's delegate (UIKit's delegateClass); nil: the factory given
/// to `SceneApplication.run`.
public struct SceneConfiguration: Sendable {
    public var name: String
    public var role: SessionRole
    public var delegateFactory: (@MainActor @Sendable (SceneSession) -> any SceneDelegate)?

    public init(name: String, role: SessionRole, delegateFactory: (@MainActor @Sendable (SceneSession) -> any SceneDelegate)? = nil) {
        self.name = name
        self.role = role
        self.delegateFactory = delegateFactory
    }
}

/// UIScene.ConnectionOptions.
public struct SceneConnectionOptions: Sendable {
    /// An existing (archived) session reconnects: no configurationForConnecting came before.
    public var isReconnect: Bool
    /// Why: request, timer, reclaim, cap or restore.
    public var cause: String
    /// The state-restoration data handed to the scene (also the session's stateRestorationActivity).
    public var restoration: RestorationData?
    /// What the scene is opened with (io.scened.Manager Open, or an app's request with a URL
    /// or activity): it comes here instead of in scene(_:openURLContexts:) / scene(_:continue:).
    public var urlContexts: Set<OpenURLContext> = []
    public var userActivities: Set<UserActivity> = []
}

/// Why scened sent an event (io.scened.App's `cause`). An open set: a cause newer than this
/// library arrives as its name, unequal to every constant here, and is never an error.
public struct EventCause: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    /// A client asked (the app itself, an operator, a shell).
    public static let request: EventCause = "request"
    /// A timer fired: suspension delay, task expiry.
    public static let timer: EventCause = "timer"
    /// Memory pressure: the reclaim policy acted.
    public static let reclaim: EventCause = "reclaim"
    /// Background work: a scheduled task, a notification (R34).
    public static let background: EventCause = "background"
    /// A session cap discarded it.
    public static let cap: EventCause = "cap"
    /// scened restored its state at start-up.
    public static let restore: EventCause = "restore"
    /// scened or the machine is stopping.
    public static let shutdown: EventCause = "shutdown"
    /// An interruption (an incoming call, the app switcher): scenes resign active and stay.
    public static let interruption: EventCause = "interruption"
    /// The screen locked (or unlocked).
    public static let lock: EventCause = "lock"
    /// The login session went inactive (a VT or user switch), or active again.
    public static let session: EventCause = "session"
    /// The login session went idle.
    public static let idle: EventCause = "idle"
    /// The machine is going to sleep (or woke up).
    public static let sleep: EventCause = "sleep"

    /// Whether the system drove it rather than an app or an operator.
    public var isSystem: Bool { [.shutdown, .interruption, .lock, .session, .idle, .sleep].contains(self) }
    public var description: String { rawValue }
}

/// UIApplication.LaunchOptionsKey's values, as far as scened has them.
public struct LaunchOptions: Sendable {
    public var cause: String
}

/// UIBackgroundTaskIdentifier.
public struct BackgroundTaskIdentifier: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public var description: String { rawValue }
}

/// A bounded callback whose handler returned after its deadline: the daemon refuses the late
/// answer (a didEnterBackground overrun gets the process terminated as hung, R23).
public struct DeadlineOverrun: Sendable, CustomStringConvertible {
    public var seq: UInt64
    /// didEnterBackground, willTerminate or didReceiveNotification.
    public var event: String
    public var session: String?
    /// By how much the handler overran, as far as this process can tell.
    public var overrun: Duration
    /// The daemon answered DeadlinePassed.
    public var refusedByDaemon: Bool

    public var description: String {
        "event \(seq) (\(event)\(session.map { " of \($0)" } ?? "")) overran its deadline by \(overrun)\(refusedByDaemon ? ", answer refused" : "")"
    }
}

/// How `SceneApplication.run` ended.
public enum SceneApplicationEnding: Sendable, Equatable {
    /// The app detached (detach(), or after willTerminate and terminated).
    case detached
    /// The daemon terminated the app: requested, shutdown (scened or the machine stopping),
    /// memoryPressure, backgroundTaskExpired or hung; a newer reason comes as its name.
    case terminated(reason: String)
}

/// One io.scened.App event as it came, for logging (`SceneApplication.Options.onEvent`).
public struct AppEvent: Sendable, CustomStringConvertible {
    public var seq: UInt64
    public var name: String
    public var session: String?
    public var scene: Int64?
    public var state: String
    public var cause: String
    /// Microseconds since the Unix epoch, for bounded callbacks.
    public var deadline: Int64?
    /// The whole event object.
    public var fields: JSONObject

    init?(_ object: JSONObject) {
        guard let seq = object["seq"]?.intValue, seq >= 0, let name = object["event"]?.stringValue else { return nil }
        self.seq = UInt64(seq)
        self.name = name
        session = object["session"]?.stringValue
        scene = object["scene"]?.intValue
        state = object["state"]?.stringValue ?? ""
        cause = object["cause"]?.stringValue ?? ""
        deadline = object["deadline"]?.intValue
        fields = object
    }

    /// `cause` as a value.
    public var eventCause: EventCause { EventCause(rawValue: cause) }

    public var description: String {
        "#\(seq) \(name)\(session.map { " \($0)" } ?? "")\(scene.map { "/\($0)" } ?? "") → \(state) (\(cause))"
            + (deadline != nil ? " [answer due]" : "")
    }
}

/// Failures of SceneClient itself (daemon errors come as Varlink's `VarlinkError`).
public enum SceneClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidRestoration(String)
    /// Attach was refused: another process is attached as the app.
    case alreadyAttached(app: String, pid: Int64)
    /// The daemon could not be reached in time.
    case unreachable(path: String, detail: String)
    /// The daemon ended the Attach with an error.
    case attachFailed(String)
    /// run() was called twice.
    case alreadyRunning
    /// A request was made while the client has no connection (reattaching, or not running).
    case notConnected(String)
    /// A background task request SceneClient refuses before sending it (BackgroundTaskScheduler.submit).
    case invalidTaskRequest(String)

    public var description: String {
        switch self {
        case .invalidRestoration(let detail): return "invalid restoration data: \(detail)"
        case .alreadyAttached(let app, let pid): return "\(app) already has a process attached (pid \(pid))"
        case .unreachable(let path, let detail): return "cannot reach scened at \(path): \(detail)"
        case .attachFailed(let detail): return "Attach failed: \(detail)"
        case .alreadyRunning: return "the application is already running"
        case .notConnected(let detail): return "not connected to scened: \(detail)"
        case .invalidTaskRequest(let detail): return "invalid background task request: \(detail)"
        }
    }
}

/// The socket, in the order scenectl looks for it (SceneControl's SocketLocation): an explicit
/// path, `$SCENED_SOCKET`, the caller's own daemon (`$XDG_RUNTIME_DIR/scened`), the system's
/// (/run/scened), the per-user fallback (/tmp/scened-UID) of a non-root daemon.
public enum SceneSocket {
    public static let socketName = "io.scened.Manager"

    public static func resolve(explicit: String? = nil,
                               environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit { return explicit }
        if let named = environment["SCENED_SOCKET"], !named.isEmpty { return named }
        let uid = getuid()
        var candidates: [String] = []
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { candidates.append("\(runtime)/scened/\(socketName)") }
        candidates.append("/run/scened/\(socketName)")
        if uid != 0 { candidates.append("/tmp/scened-\(uid)/\(socketName)") }
        return candidates.first(where: { access($0, F_OK) == 0 }) ?? candidates[0]
    }
}

/// Memory pressure is about to disconnect one of the app's scenes (reclaim-policy.md §3.5): the
/// app saves its state and answers before `deadline`, or defers once per pressure episode.
public struct ReclaimNotice: Sendable, Equatable {
    public var id: Int64
    public var session: String
    /// warning or critical.
    public var level: String
    /// Microseconds since the Unix epoch.
    public var deadline: Int64
    public var reason: String

    init?(_ object: JSONObject) {
        guard let id = object["id"]?.intValue, let session = object["session"]?.stringValue else { return nil }
        self.id = id
        self.session = session
        level = object["level"]?.stringValue ?? ""
        deadline = object["deadline"]?.intValue ?? 0
        reason = object["reason"]?.stringValue ?? ""
    }
}
