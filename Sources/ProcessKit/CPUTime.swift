import Glibc

/// CPU time a process has used: shows whether a frozen or stopped process really runs no more.
public enum CPUTime {
    /// utime + stime in clock ticks; nil when the process does not exist.
    public static func of(pid: pid_t) -> UInt64? {
        ProcessStat(pid: pid).map { $0.userTicks + $0.systemTicks }
    }

    /// Clock ticks a second (sysconf(_SC_CLK_TCK), 100 on Linux).
    public static var ticksPerSecond: Int { sysconf(Int32(_SC_CLK_TCK)) }
}
