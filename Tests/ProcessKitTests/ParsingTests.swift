import Glibc
@testable import ProcessKit
import Testing

/// Parsing without the machine: mountinfo lines and paths.
@Suite struct ParsingTests {
    @Test func cgroup2MountPointIsFoundAndUnescaped() {
        let hybrid = """
            25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
            35 31 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
            """
        #expect(Cgroup.hierarchy(mountinfo: hybrid) == "/sys/fs/cgroup/unified")
        let escaped = "41 31 0:38 / /mnt/my\\040cgroups rw - cgroup2 none rw\n"
        #expect(Cgroup.hierarchy(mountinfo: escaped) == "/mnt/my cgroups")
        #expect(Cgroup.hierarchy(mountinfo: "35 31 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n") == nil)
    }

    @Test func cgroupPathsLoseTrailingSlashes() {
        #expect(Cgroup(path: "/sys/fs/cgroup/a//").path == "/sys/fs/cgroup/a")
        #expect(Cgroup(path: "/sys/fs/cgroup").child("b").file("cgroup.procs") == "/sys/fs/cgroup/b/cgroup.procs")
    }

    @Test func exitStatusDescriptions() {
        #expect(ExitStatus.exited(1).description == "exited with status 1")
        #expect(ExitStatus.killed(signal: SIGKILL, coreDumped: false).description == "killed by signal 9 (SIGKILL)")
        #expect(ExitStatus.killed(signal: SIGSEGV, coreDumped: true).description == "killed by signal 11 (SIGSEGV) (core dumped)")
    }
}
