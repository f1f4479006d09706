import Glibc
import ProcessKit
import ScenedTestSupport

/// Whether cgroup v2 tests can run: root, and a writable place for a child cgroup.
let cgroupParent: String? = {
    guard geteuid() == 0 else { return nil }
    for candidate in [Cgroup.own(), Cgroup.hierarchy()].compactMap({ $0 }) where Cgroup(path: candidate).isWritable {
        return candidate
    }
    return nil
}()

/// A cgroup of one test, named with the test process's pid and a label; when released (also
/// after a failure) everything in it is killed and the directory removed.
final class TestCgroup {
    let cgroup: Cgroup

    init(_ label: String) throws {
        guard let parent = cgroupParent else { throw TestFailure("no writable cgroup v2 parent") }
        cgroup = try Cgroup.create(parent + "/processkit-test-\(getpid())-\(label)")
    }

    var path: String { cgroup.path }

    deinit {
        try? cgroup.thaw()
        try? cgroup.kill()
        _ = waitUntil(seconds: 10) { (try? cgroup.events().populated) != true }
        try? cgroup.remove()
    }
}

/// Two busy loops: the shell and a child shell it forks.
let busyPair = "sh -c 'while :; do :; done' & while :; do :; done"

/// CPU ticks of each pid (0 when gone).
func cpuTicks(_ pids: [pid_t]) -> [UInt64] { pids.map { CPUTime.of(pid: $0) ?? 0 } }
