/// scenectl's exit statuses, documented in `scenectl --help`.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    /// The daemon refused or failed the request (InvalidTransition, InvalidArgument, ...).
    case failure = 1
    /// Bad verb, option or argument, including a malformed session id, app id or token.
    /// (`interrupt -- COMMAND` exits with COMMAND's status instead.)
    case usage = 2
    /// The daemon cannot be reached: no socket, connection refused, or it went away.
    case unreachable = 3
    /// No such session, app, task or interruption (NoSuchSession, SessionDiscarded, NoSuchApp,
    /// NoSuchTask, NoSuchInterruption).
    case notFound = 4
    /// The caller's credentials do not allow the request (PermissionDenied), or the socket is
    /// served by someone scenectl does not trust.
    case permissionDenied = 5

    /// `open` only, as `interrupt` has its command's: no app handles the URL's scheme or the
    /// activity's type (NoHandler), which a desktop's "open with" tells from other failures.
    public static let noHandler: Int32 = 6

    /// The lines of the "Exit status" section of the help.
    static let documentation = """
        0  success
        1  the daemon refused or failed the request
        2  usage error: bad command, option or argument (a malformed session id,
           app id or token is caught before connecting)
        3  the daemon cannot be reached (no socket, connection refused, timed out,
           or the daemon went away)
        4  no such session, app or task (including a discarded session), or no
           such interruption
        5  permission denied: the request is for the app's owner or administrators,
           or the socket is served by a process that is not scened's
        6  open: no app handles the URL's scheme or the activity's type
        interrupt -- COMMAND exits with COMMAND's own status once COMMAND ran.
      """
}

/// A failure that ends the command with `status`; `message` goes to stderr after "scenectl: ".
public struct ControlError: Error, Equatable, CustomStringConvertible {
    public var status: ExitStatus
    public var message: String

    public init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    static func usage(_ message: String) -> ControlError { ControlError(.usage, message) }

    public var description: String { message }
}

/// stdout was closed by the reader (EPIPE, e.g. `scenectl monitor | head`): stop quietly.
public struct OutputClosed: Error, Equatable {
    public init() {}
}
