import Glibc

/// Where no cgroup can be had: the app's process group (its leader's setsid made one), frozen
/// with SIGSTOP and ended with signals. Weaker than a cgroup: a member that leaves the group
/// (setsid, setpgid) escapes, and a stopped process can be seen stopping (SIGCHLD to its parent).
public struct ProcessGroup: Sendable, Hashable {
    public let pgid: pid_t

    public init(pgid: pid_t) { self.pgid = pgid }
    public init(_ pgid: pid_t) { self.pgid = pgid }

    public func freeze() throws(ProcessKitError) { try send(SIGSTOP) }
    public func thaw() throws(ProcessKitError) { try send(SIGCONT) }
    public func kill() throws(ProcessKitError) { try send(SIGKILL) }

    /// Asks every member to end (SIGTERM unless told otherwise).
    public func terminate(_ signal: Int32 = SIGTERM) throws(ProcessKitError) { try send(signal) }

    /// killpg: `signal` to every member.
    private func send(_ signal: Int32) throws(ProcessKitError) {
        guard killpg(pgid, signal) == 0 else {
            throw ProcessKitError("signal \(signal) to process group", String(pgid), code: errno)
        }
    }

    /// The members, found by scanning /proc/*/stat (zombies included until reaped).
    public func pids() -> [pid_t] {
        SystemFiles.processIDs().filter { ProcessStat(pid: $0)?.processGroup == pgid }.sorted()
    }

    /// True when the group has members and every one that still runs is stopped (state 'T';
    /// zombies are ignored).
    public var isStopped: Bool {
        let states = pids().compactMap { ProcessStat(pid: $0)?.state }.filter { $0 != "Z" && $0 != "X" }
        return !states.isEmpty && states.allSatisfy { $0 == "T" }
    }
}
