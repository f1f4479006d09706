import Glibc

/// A failed socket operation; every case names the path involved.
public enum SocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another process is accepting connections on the path.
    case addressInUse(path: String)
    /// The path does not fit `sockaddr_un.sun_path` (at most 107 bytes plus the NUL).
    case pathTooLong(path: String, byteCount: Int)
    /// Something other than a socket exists at the path; it is left alone.
    case notASocket(path: String)
    /// A system call failed.
    case system(operation: String, path: String, errno: Int32)

    public var errno: Int32 {
        switch self {
        case .addressInUse: return EADDRINUSE
        case .pathTooLong: return ENAMETOOLONG
        case .notASocket: return EEXIST
        case .system(_, _, let code): return code
        }
    }

    public var message: String {
        switch self {
        case .addressInUse(let path):
            return "\(path): another process is already serving on this socket"
        case .pathTooLong(let path, let count):
            return "\(path): socket path is \(count) bytes, the limit is \(UnixSocket.maxPathBytes)"
        case .notASocket(let path):
            return "\(path): exists and is not a socket"
        case .system(let operation, let path, let code):
            return "\(path): \(operation) failed: \(String(cString: strerror(code)))"
        }
    }

    public var description: String { message }
}
