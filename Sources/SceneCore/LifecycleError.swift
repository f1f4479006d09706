/// Why a command was refused. A refused command changes nothing.
public enum LifecycleError: Error, Sendable, Equatable, CustomStringConvertible {
    case noSuchApp(AppID)
    case noSuchSession(SessionID)
    /// The session existed and was discarded; it can never come back (R15).
    case sessionDiscarded(SessionID)
    case noSuchTask(TaskToken)
    /// The command does not apply in the current state.
    case invalidTransition(InvalidTransition)
    case invalidArgument(name: String, reason: String)
    /// The session's saved data is in the store and could not be had: not read first (a
    /// reconnection must hand on the restoration data, never nothing), or found damaged.
    case savedDataUnavailable(SessionID, reason: String)
    /// No scheduled task with this identifier, or no open wake item to answer.
    case noSuchScheduledTask(AppID, identifier: String)
    case notAwaitingWake(AppID, item: String)
    /// A bound of the engine (tasks or notifications per app): `limit` is the setting's name.
    case limitExceeded(limit: String, maximum: Int, reason: String)

    public var description: String {
        switch self {
        case .noSuchApp(let a): "no such app: \(a)"
        case .noSuchSession(let s): "no such session: \(s)"
        case .sessionDiscarded(let s): "session \(s) was discarded"
        case .noSuchTask(let t): "no such background task: \(t)"
        case .invalidTransition(let t): t.description
        case .invalidArgument(let name, let reason): "invalid \(name): \(reason)"
        case .savedDataUnavailable(let s, let reason): "the saved data of session \(s) is unavailable: \(reason)"
        case .noSuchScheduledTask(let a, let id): "\(a) has no scheduled task \(id)"
        case .notAwaitingWake(let a, let item): "\(a) has no open background work \(item) to answer"
        case .limitExceeded(let limit, let maximum, let reason): "\(reason) (\(limit)=\(maximum))"
        }
    }
}

public struct InvalidTransition: Sendable, Equatable, CustomStringConvertible {
    public var command: String
    public var app: AppID
    public var session: SessionID?
    /// The state that forbids it: a scene state, a session condition or a process state.
    public var state: String
    public var reason: String

    public init(command: String, app: AppID, session: SessionID?, state: String, reason: String) {
        self.command = command
        self.app = app
        self.session = session
        self.state = state
        self.reason = reason
    }

    public var description: String {
        let subject = session.map { "session \($0)" } ?? "app \(app)"
        return "cannot \(command) \(subject) (\(state)): \(reason)"
    }
}
