import CSystemd
import Glibc

/// A failed libsystemd (or libc) call: the positive errno and the function that reported it.
///
/// libsystemd returns errors as negative errno values instead of setting `errno`;
/// `init(returnCode:function:)` takes such a return value as it is.
public struct SystemdError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The positive errno value, e.g. `ENOENT`.
    public let errno: Int32
    /// The C function that failed, e.g. `"sd_event_add_io"`.
    public let function: String

    public init(errno: Int32, function: String) {
        self.errno = errno
        self.function = function
    }

    /// From a libsystemd return value, which carries the error negated.
    public init(returnCode: Int32, function: String) {
        self.init(errno: returnCode < 0 ? -returnCode : returnCode, function: function)
    }

    /// The symbolic name, e.g. `"ECONNREFUSED"`; `"E<n>"` for numbers glibc doesn't know.
    public var errnoName: String {
        guard let name = csd_errno_name(errno) else { return "E\(errno)" }
        return String(cString: name)
    }

    /// glibc's text for the error, e.g. `"Connection refused"`.
    public var strerror: String {
        // The XSI strerror_r is the one visible without _GNU_SOURCE; it fills the buffer.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard let base = buffer.baseAddress, strerror_r(errno, base, buffer.count) == 0 else {
                return "Unknown error \(errno)"
            }
            return String(cString: base)
        }
    }

    public var description: String { "\(function): \(errnoName) (\(strerror))" }
}

extension SystemdError {
    /// Throws when a libsystemd call returned a negative errno; passes other values through.
    @discardableResult
    static func check(_ returnCode: Int32, _ function: String) throws(SystemdError) -> Int32 {
        if returnCode < 0 { throw SystemdError(returnCode: returnCode, function: function) }
        return returnCode
    }

    /// For libc calls that return -1 and set the global errno.
    static func fromErrno(_ function: String) -> SystemdError {
        SystemdError(errno: Glibc.errno, function: function)
    }
}
