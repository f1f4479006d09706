import Glibc
import ProcessKit
import ScenedTestSupport
import Testing

/// Cgroup v2 with real processes: spawning into one, freezing, thawing, killing, removing.
@Suite(.enabled(if: cgroupParent != nil, "needs root and a writable cgroup v2"))
struct CgroupTests {
    @Test func hierarchyAndOwnAreFound() throws {
        let root = try #require(Cgroup.hierarchy())
        let own = try #require(Cgroup.own())
        #expect(own.hasPrefix(root))
        let procs = readTextFile(Cgroup(path: own).file("cgroup.procs"))
        #expect(procs.split(separator: "\n").contains { $0 == "\(getpid())" })
    }

    @Test func freezeStopsBothProcessesThawResumesKillEndsThem() throws {
        let group = try TestCgroup("freeze")
        let shell = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", busyPair],
                                            environment: ["PATH=/usr/bin:/bin"], cgroup: group.path))
        var pids: [pid_t] = []
        let two = waitUntil(seconds: 5) {
            pids = (try? group.cgroup.pids()) ?? []
            return pids.count == 2
        }
        try #require(two, "pids in the cgroup: \(pids)")
        #expect(pids.contains(shell.pid))
        #expect(try group.cgroup.events() == (populated: true, frozen: false))

        try group.cgroup.freeze()
        #expect(waitUntil(seconds: 2) { (try? group.cgroup.events().frozen) == true })
        let frozenAt = cpuTicks(pids)
        sleepMilliseconds(300)
        #expect(cpuTicks(pids) == frozenAt, "CPU ticks advanced while frozen")

        try group.cgroup.thaw()
        #expect(waitUntil(seconds: 5) { (try? group.cgroup.events().frozen) == false })
        let thawedAt = cpuTicks(pids)
        let resumed = waitUntil(seconds: 5) { zip(cpuTicks(pids), thawedAt).allSatisfy { $0 > $1 } }
        #expect(resumed, "CPU ticks did not advance after the thaw")

        try group.cgroup.kill()
        #expect(shell.waitForExit() == .killed(signal: SIGKILL, coreDumped: false))
        #expect(waitUntil(seconds: 5) { (try? group.cgroup.events().populated) == false })
        #expect(try group.cgroup.pids().isEmpty)
        #expect(pids.allSatisfy { pid in ProcessStat(pid: pid).map { $0.state == "Z" } ?? true })
        try group.cgroup.remove()
        #expect(!SystemFilesForTests.exists(group.path))
    }

    @Test func removeWhilePopulatedSaysSo() throws {
        let group = try TestCgroup("busy")
        let sleeper = try Launched(LaunchSpec(executable: "/bin/sleep", arguments: ["sleep", "30"], cgroup: group.path))
        #expect(try group.cgroup.pids() == [sleeper.pid])
        #expect {
            try group.cgroup.remove()
        } throws: { error in
            guard let error = error as? ProcessKitError else { return false }
            return error.code == EBUSY && error.description == "rmdir \(group.path): still populated or has child cgroups (Device or resource busy)"
        }
    }

    @Test func createIsIdempotentAndMissingCgroupsFailClearly() throws {
        let group = try TestCgroup("create")
        let nested = try Cgroup.create(group.path + "/a/b")
        #expect(try Cgroup.create(nested.path) == nested)
        #expect(nested.isWritable)
        try nested.remove()
        try group.cgroup.child("a").remove()
        let gone = group.cgroup.child("a")
        #expect(throws: ProcessKitError("kill", gone.path, code: ENOENT)) { try gone.kill() }
        #expect(throws: ProcessKitError.self) { try gone.freeze() }
        #expect(throws: ProcessKitError.self) { _ = try gone.events() }
        #expect(gone.memoryCurrent() == nil)
        #expect(!Cgroup(path: "/tmp").isWritable)
    }

    /// memory.current where the controller is on, else the Pss of the members.
    @Test func memoryOfACgroupCountsWhatItsProcessTouched() throws {
        let group = try TestCgroup("memory")
        let directory = TemporaryDirectory(prefix: "processkit-test")
        let out = try OutputFile(directory, "ready")
        let child = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "exec python3 -c \"\(touch64MiB)\""],
                                            environment: inheritedEnvironment(), cgroup: group.path, stdoutFD: out.fd))
        try #require(waitUntil(seconds: 20) { out.text == "ready\n" || child.reap() != nil }, "python3 did not start")
        try #require(out.text == "ready\n", "python3: \(child.status?.description ?? "?")")
        let bytes = try MemoryReading.of(cgroup: group.cgroup)
        #expect(bytes >= 60 << 20, "\(bytes >> 20) MiB")
    }
}

/// Allocates 64 MiB, writes every page, says so, and waits.
let touch64MiB = "import sys, time; b = bytearray(b'x' * (64 << 20)); print('ready', flush=True); time.sleep(60)"

enum SystemFilesForTests {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }
}
