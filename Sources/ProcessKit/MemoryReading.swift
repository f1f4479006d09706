import Glibc

/// How much memory processes use: the cgroup's memory.current where the memory controller is
/// enabled, else the sum of their proportional set sizes (shared pages divided among sharers,
/// so that summing over processes does not count them twice).
public enum MemoryReading {
    /// The sum of `Pss:` in /proc/PID/smaps_rollup, in bytes. Processes that do not exist (or
    /// vanish meanwhile) count 0.
    public static func pss(pids: [pid_t]) -> UInt64 {
        pids.reduce(0) { $0 + (pss(pid: $1) ?? 0) }
    }

    /// One process's Pss in bytes, nil when it cannot be read.
    public static func pss(pid: pid_t) -> UInt64? {
        guard case .success(let text) = SystemFiles.read("/proc/\(pid)/smaps_rollup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Pss:") {
            // "Pss:               65536 kB"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kB = UInt64(fields[1]) else { return nil }
            return kB * 1024
        }
        return nil
    }

    /// memory.current if the cgroup has it, else the Pss of its processes.
    public static func of(cgroup: Cgroup) throws(ProcessKitError) -> UInt64 {
        if let current = cgroup.memoryCurrent() { return current }
        return pss(pids: try cgroup.pids())
    }
}
