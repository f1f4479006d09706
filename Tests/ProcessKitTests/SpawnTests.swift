import Glibc
import ProcessKit
import ScenedTestSupport
import Testing

/// ProcessSpawner with real children: what they start with, how failures before exec are
/// reported, and reaping through the pidfd.
@Suite struct SpawnTests {
    let directory = TemporaryDirectory(prefix: "processkit-test")

    @Test func environmentIsExactlyTheGivenOne() throws {
        let out = try OutputFile(directory, "env")
        let child = try Launched(LaunchSpec(executable: "/usr/bin/env", arguments: ["env"],
                                            environment: ["A=1", "B=two words"], stdoutFD: out.fd))
        #expect(child.waitForExit() == .exited(0))
        #expect(out.text == "A=1\nB=two words\n")
    }

    /// Spawned from a thread that blocks SIGUSR1 in a process that ignores SIGPIPE: the
    /// program still starts with nothing blocked and nothing ignored.
    @Test func signalsStartUnblockedWithDefaultDispositions() throws {
        _ = ignoreSIGPIPE
        var block = sigset_t(), old = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGUSR1)
        pthread_sigmask(SIG_BLOCK, &block, &old)
        let out = try OutputFile(directory, "status")
        let spawned = Result { try Launched(LaunchSpec(executable: "/bin/cat", arguments: ["cat", "/proc/self/status"], stdoutFD: out.fd)) }
        pthread_sigmask(SIG_SETMASK, &old, nil)
        let child = try spawned.get()
        #expect(child.waitForExit() == .exited(0))
        let lines = out.text.split(separator: "\n")
        let blocked = lines.first { $0.hasPrefix("SigBlk:") }
        let ignored = lines.first { $0.hasPrefix("SigIgn:") }
        #expect(blocked == "SigBlk:\t0000000000000000")
        #expect(ignored == "SigIgn:\t0000000000000000")
    }

    @Test func leadsItsOwnSessionAndProcessGroup() throws {
        let child = try Launched(LaunchSpec(executable: "/bin/sleep", arguments: ["sleep", "30"]))
        #expect(getsid(child.pid) == child.pid)
        #expect(getpgid(child.pid) == child.pid)
        #expect(ProcessStat(pid: child.pid)?.session == child.pid)
        #expect(child.reap() == nil)
        ProcessSpawner.signal(SIGKILL, pidfd: child.process.pidfd)
        #expect(child.waitForExit() == .killed(signal: SIGKILL, coreDumped: false))
    }

    /// An extra descriptor without close-on-exec is open here while the child starts; the
    /// child has 0, 1 and 2 only. (Open only around the spawn: other suites' children started
    /// meanwhile would inherit it. A leaked descriptor never goes away, so waiting for exactly
    /// three cannot pass wrongly.)
    @Test func onlyStandardDescriptorsAreOpen() throws {
        let out = try OutputFile(directory, "fds")
        let extra = open("/dev/null", O_RDONLY)
        #expect(extra > 2)
        let spawned = Result { try Launched(LaunchSpec(executable: "/bin/sleep", arguments: ["sleep", "30"], stdoutFD: out.fd, stderrFD: out.fd)) }
        close(extra)
        let child = try spawned.get()
        let exact = waitUntil(seconds: 5) { openDescriptors(child.pid) == [0, 1, 2] }
        #expect(exact, "open in the child: \(openDescriptors(child.pid))")
        #expect([0, 1, 2].map { descriptorTarget(child.pid, $0) } == ["/dev/null", out.path, out.path])
        child.killGroup()
        #expect(child.waitForExit() != nil)
    }

    @Test func scriptReportsWhatItWasGiven() throws {
        let out = try OutputFile(directory, "script")
        let script = #"echo "sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$"; echo "cwd=$(pwd -P)"; echo "env=$(env | sort | tr '\n' ' ')""#
        let child = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", script],
                                            environment: ["PATH=/usr/bin:/bin", "ONLY=this"],
                                            workingDirectory: directory.path, stdoutFD: out.fd))
        #expect(child.waitForExit() == .exited(0))
        let lines = out.text.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first == "sid=\(child.pid) pid=\(child.pid)")
        var real = [CChar](repeating: 0, count: Int(PATH_MAX))
        #expect(realpath(directory.path, &real) != nil)
        #expect(lines.dropFirst().first == "cwd=" + text(real))
        // dash adds PWD (and OLDPWD?) of its own; nothing from the test runner gets through.
        let names = Set((lines.last ?? "").dropFirst(4).split(separator: " ").map { String($0.prefix { $0 != "=" }) })
        #expect(names.isSubset(of: ["PATH", "ONLY", "PWD", "OLDPWD"]) && names.contains("ONLY"), "\(names)")
    }

    @Test func stdoutAndStderrGoWhereTheyAreSent() throws {
        let out = try OutputFile(directory, "out"), err = try OutputFile(directory, "err")
        let both = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "echo out; echo err >&2"],
                                           stdoutFD: out.fd, stderrFD: err.fd))
        #expect(both.waitForExit() == .exited(0))
        #expect(out.text == "out\n" && err.text == "err\n")
        // Unset: /dev/null, like stdin.
        let none = try Launched(LaunchSpec(executable: "/bin/sleep", arguments: ["sleep", "30"]))
        #expect([0, 1, 2].map { descriptorTarget(none.pid, $0) } == ["/dev/null", "/dev/null", "/dev/null"])
        none.killGroup()
        #expect(none.waitForExit() != nil)
    }

    @Test func workingDirectoryDefaultsToRoot() throws {
        let out = try OutputFile(directory, "pwd")
        let child = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "pwd -P"], stdoutFD: out.fd))
        #expect(child.waitForExit() == .exited(0))
        #expect(out.text == "/\n")
    }

    @Test(.enabled(if: isRoot, "changing uid and gid needs root"))
    func switchesToTheGivenUserAndItsOnlyGroup() throws {
        let out = try OutputFile(directory, "id")
        let child = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "id -u; id -g; id -G"],
                                            environment: ["PATH=/usr/bin:/bin"], uid: 65534, gid: 65534, stdoutFD: out.fd))
        #expect(child.waitForExit() == .exited(0))
        #expect(out.text == "65534\n65534\n65534\n")
    }

    @Test func execFailureIsReportedAndLeavesNoZombie() {
        let spec = LaunchSpec(executable: "/bin/nope", arguments: ["nope"])
        #expect {
            _ = try ProcessSpawner.spawn(spec)
        } throws: { error in
            guard let error = error as? SpawnError else { return false }
            return error.stage == .exec && error.code == ENOENT
                && error.description == "exec /bin/nope: No such file or directory"
                && error.pid.map(isNotOurZombie) == true
        }
    }

    @Test func chdirFailureIsReportedAndLeavesNoZombie() {
        let spec = LaunchSpec(executable: "/bin/true", arguments: ["true"], workingDirectory: "/nope")
        #expect {
            _ = try ProcessSpawner.spawn(spec)
        } throws: { error in
            guard let error = error as? SpawnError else { return false }
            return error.stage == .directory && error.description == "chdir /nope: No such file or directory"
                && error.pid.map(isNotOurZombie) == true
        }
    }

    @Test func missingCgroupIsReported() throws {
        let root = try #require(Cgroup.hierarchy())
        let missing = root + "/processkit-missing-\(getpid())"
        let spec = LaunchSpec(executable: "/bin/true", arguments: ["true"], cgroup: missing)
        #expect {
            _ = try ProcessSpawner.spawn(spec)
        } throws: { error in
            (error as? SpawnError)?.description == "cgroup \(missing): No such file or directory"
        }
    }

    @Test func relativeExecutableIsRefused() {
        #expect(throws: SpawnError.self) { _ = try ProcessSpawner.spawn(LaunchSpec(executable: "true", arguments: ["true"])) }
        #expect(throws: SpawnError.self) { _ = try ProcessSpawner.spawn(LaunchSpec(executable: "/bin/true", arguments: [])) }
        #expect(throws: SpawnError.self) { _ = try ProcessSpawner.spawn(LaunchSpec(executable: "/bin/true", arguments: ["true"], cgroup: "relative")) }
    }

    @Test func reapReportsExitCodeAndSignal() throws {
        let exits = try Launched(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "exit 3"]))
        let status = exits.waitForExit()
        #expect(status == .exited(3))
        #expect(status?.description == "exited with status 3")

        let sleeper = try Launched(LaunchSpec(executable: "/bin/sleep", arguments: ["sleep", "30"]))
        #expect(sleeper.reap() == nil)
        #expect(ProcessSpawner.signal(SIGKILL, pidfd: sleeper.process.pidfd))
        let killed = sleeper.waitForExit()
        #expect(killed == .killed(signal: 9, coreDumped: false))
        #expect(killed?.description == "killed by signal 9 (SIGKILL)")
    }

    /// Readable pidfd = exited: what the daemon's epoll watches.
    @Test func pidfdBecomesReadableAtExit() throws {
        let child = try Launched(LaunchSpec(executable: "/bin/sleep", arguments: ["sleep", "30"]))
        var p = pollfd(fd: child.process.pidfd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&p, 1, 0) == 0)
        child.killGroup()
        #expect(poll(&p, 1, 5_000) == 1)
        #expect(child.reap() == .killed(signal: SIGKILL, coreDumped: false))
    }

    @Test func statParsingSurvivesParenthesesAndSpacesInTheCommand() throws {
        let line = "42 (a) (b c) S 1 42 42 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 100 1000 10\n"
        let stat = try #require(ProcessStat(pid: 42, statLine: line))
        #expect(stat.command == "a) (b c")
        #expect(stat.state == "S")
        #expect(stat.parentPID == 1 && stat.processGroup == 42 && stat.session == 42)
        #expect(stat.userTicks == 7 && stat.systemTicks == 5)
        #expect(CPUTime.of(pid: getpid()) != nil)
    }
}
