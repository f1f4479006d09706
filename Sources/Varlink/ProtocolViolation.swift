/// A message that breaks the Varlink wire protocol. The server answers it with
/// `errorReply(errorName:)` and closes the connection.
public struct ProtocolViolation: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        case messageTooLarge
        case invalidUTF8
        case invalidJSON
        case notAnObject
        case missingMethod
        case invalidMethod
        /// `parameters` is present but neither an object nor null.
        case invalidParameters
        /// `oneway`, `more` or `upgrade` is present but neither a boolean nor null.
        case invalidFlag
    }

    public let reason: Reason
    /// Human-readable detail, e.g. the JSON error and its byte offset.
    public let message: String

    /// The call field at fault (for `VarlinkCall.init(from:)`'s InvalidParameter), or empty.
    let field: String

    public init(reason: Reason, message: String) {
        self.init(reason: reason, message: message, field: "")
    }

    init(reason: Reason, message: String, field: String) {
        self.reason = reason
        self.message = message
        self.field = field
    }

    public var description: String { "\(reason.rawValue): \(message)" }

    /// The NUL-terminated error message to send before closing. The error name belongs to the
    /// service's own interface (there is no standard one), so the caller supplies it.
    public func errorReply(errorName: String) -> [UInt8] {
        VarlinkError(name: errorName, parameters: ["reason": .string(reason.rawValue), "message": .string(message)]).encoded()
    }
}
