import Glibc
import ProcessKit
import ScenedTestSupport
import Testing

/// The fallback without cgroups: the app's process group, stopped and continued with signals.
@Suite struct ProcessGroupTests {
    @Test func stopContinueAndKillAGroupOfTwo() throws {
        // The shell's background sleep and the sleep it then becomes: two members.
        let leader = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "sleep 60 & exec sleep 60"],
                                             environment: ["PATH=/usr/bin:/bin"]))
        let group = ProcessGroup(pgid: leader.pid)
        var members: [pid_t] = []
        try #require(waitUntil(seconds: 5) {
            members = group.pids()
            return members.count == 2
        }, "members: \(members)")
        #expect(members.contains(leader.pid))
        #expect(!group.isStopped)

        try group.freeze()
        #expect(waitUntil(seconds: 5) { group.isStopped })
        #expect(members.allSatisfy { ProcessStat(pid: $0)?.state == "T" })

        try group.thaw()
        #expect(waitUntil(seconds: 5) { members.allSatisfy { ProcessStat(pid: $0)?.state != "T" } })
        #expect(!group.isStopped)

        try group.kill()
        #expect(leader.waitForExit() == .killed(signal: SIGKILL, coreDumped: false))
        let gone = waitUntil(seconds: 5) { group.pids().allSatisfy { ProcessStat(pid: $0)?.state == "Z" } }
        #expect(gone, "left: \(group.pids())")
    }

    @Test func signallingAnEmptyGroupFails() throws {
        let child = try Launched(LaunchSpec(executable: "/bin/true", arguments: ["true"]))
        #expect(child.waitForExit() == .exited(0))
        #expect(throws: ProcessKitError("signal 15 to process group", String(child.pid), code: ESRCH)) {
            try ProcessGroup(pgid: child.pid).terminate()
        }
    }

    @Test func busyGroupUsesNoCPUWhileStopped() throws {
        let leader = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "while :; do :; done"]))
        let group = ProcessGroup(pgid: leader.pid)
        try group.freeze()
        #expect(waitUntil(seconds: 5) { group.isStopped })
        let stoppedAt = CPUTime.of(pid: leader.pid)
        sleepMilliseconds(300)
        #expect(CPUTime.of(pid: leader.pid) == stoppedAt)
        try group.terminate(SIGKILL)
        #expect(leader.waitForExit() == .killed(signal: SIGKILL, coreDumped: false))
    }
}
