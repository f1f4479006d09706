import Glibc
import ProcessKit
import ScenedTestSupport
import Testing

/// Pss from smaps_rollup against a process that touched a known amount of memory.
@Suite struct MemoryTests {
    @Test func pssCountsTouchedPages() throws {
        let directory = TemporaryDirectory(prefix: "processkit-test")
        let out = try OutputFile(directory, "ready")
        // Through the shell: python3 may be a pyenv shim that needs PATH and HOME.
        let child = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "exec python3 -c \"\(touch64MiB)\""],
                                            environment: inheritedEnvironment(), stdoutFD: out.fd))
        try #require(waitUntil(seconds: 20) { out.text == "ready\n" || child.reap() != nil }, "python3 did not start")
        try #require(out.text == "ready\n", "python3: \(child.status?.description ?? "?")")
        let pids = ProcessGroup(pgid: child.pid).pids()
        let bytes = MemoryReading.pss(pids: pids)
        #expect(bytes >= 60 << 20, "\(bytes >> 20) MiB over \(pids)")
        #expect(bytes < 1 << 30)
    }

    @Test func vanishedAndMissingProcessesCountNothing() throws {
        let child = try Launched(LaunchSpec(executable: "/bin/true", arguments: ["true"]))
        #expect(child.waitForExit() == .exited(0))
        #expect(MemoryReading.pss(pids: [child.pid]) == 0)
        #expect(MemoryReading.pss(pid: child.pid) == nil)
        #expect((MemoryReading.pss(pid: getpid()) ?? 0) > 0)
    }
}
