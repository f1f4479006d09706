import Glibc

/// A started child: its pid and a close-on-exec pidfd (readable once it has exited; watch it
/// with epoll, then `ProcessSpawner.reap`). The owner closes the pidfd after reaping.
public struct SpawnedProcess: Sendable, Equatable {
    public let pid: pid_t
    public let pidfd: Int32

    public init(pid: pid_t, pidfd: Int32) {
        self.pid = pid
        self.pidfd = pidfd
    }
}
