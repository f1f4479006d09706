import Glibc

/// Why a process could not be started: the step that failed (in the parent or in the child
/// before exec) and its errno. `description` reads like "exec /bin/nope: No such file or
/// directory".
public struct SpawnError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Stage: String, Sendable {
        case arguments, pipe, fork, pidfd, signals, session = "setsid", cgroup
        case groups = "setgroups", gid = "setgid", uid = "setuid", directory = "chdir"
        case stdio, descriptors = "close descriptors", exec
    }

    public let stage: Stage
    /// errno at that step (0 for `arguments`).
    public let code: Int32
    /// The child that failed before exec (already reaped), if one was forked.
    public let pid: pid_t?
    public let description: String

    public init(stage: Stage, code: Int32, pid: pid_t?, subject: String?) {
        self.stage = stage
        self.code = code
        self.pid = pid
        let reason = code == 0 ? "not allowed (absolute paths and a non-empty argv are needed)" : String(cString: strerror(code))
        description = stage.rawValue + (subject.map { " " + $0 } ?? "") + ": " + reason
    }
}
