import Glibc

/// A failed operation on a cgroup, a process group or a /proc file: what was done, to which
/// path or id, and strerror. "write /sys/fs/cgroup/x/cgroup.freeze: No such file or directory".
public struct ProcessKitError: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    /// The path or id the operation was about.
    public let subject: String
    public let code: Int32
    /// Said instead of strerror where errno alone would mislead (EBUSY on rmdir, …).
    public let explanation: String?

    public init(_ operation: String, _ subject: String, code: Int32, explanation: String? = nil) {
        self.operation = operation
        self.subject = subject
        self.code = code
        self.explanation = explanation
    }

    public var description: String {
        "\(operation) \(subject): " + (explanation ?? String(cString: strerror(code)))
    }
}
