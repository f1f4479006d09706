import Glibc

/// A transport or protocol failure seen by `VarlinkClient` (error *replies* are `VarlinkError`).
public enum VarlinkClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Connecting failed.
    case socket(SocketError)
    /// send/recv failed with this errno.
    case io(operation: String, errno: Int32)
    /// No reply within the configured timeout.
    case timedOut
    /// The server closed the connection, or the client was closed (e.g. after stopping a stream).
    case connectionClosed
    /// A reply exceeded the client's message limit.
    case messageTooLarge(limit: Int)
    /// The server sent something that is not a valid Varlink reply.
    case invalidReply(String)

    public var description: String {
        switch self {
        case .socket(let error): return error.message
        case .io(let operation, let code): return "\(operation) failed: \(String(cString: strerror(code)))"
        case .timedOut: return "timed out waiting for the server"
        case .connectionClosed: return "connection closed"
        case .messageTooLarge(let limit): return "reply exceeds \(limit) bytes"
        case .invalidReply(let detail): return "invalid reply: \(detail)"
        }
    }
}
