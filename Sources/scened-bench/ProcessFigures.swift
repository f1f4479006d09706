import Glibc
import ProcessKit

/// ProcessKit's costs: starting a process (against posix_spawn and Foundation's Process),
/// freezing and thawing a cgroup, and stopping a process group with SIGSTOP for comparison.
func processFigures() throws {
    let rounds = option("--rounds", 200)
    say("\n== processes: \(rounds) rounds each; load average \(loadAverage()) at the start ==")
    say("spawn→exit: start /bin/true (empty environment, stdio /dev/null) and reap it; wall time per round, the three")
    say("  interleaved round by round so that the machine's drift touches them alike")
    var spawner: [Double] = [], posix: [Double] = [], foundation: [Double] = []
    try spawnerRound(); try posixSpawnRound(); try foundationProcessRound()  // warm-up: page cache, first-use costs
    for _ in 0..<rounds {
        spawner.append(try timed(spawnerRound))
        posix.append(try timed(posixSpawnRound))
        foundation.append(try timed(foundationProcessRound))
    }
    say("  ProcessSpawner (vfork, pidfd):            \(spread(spawner))")
    say("  posix_spawn (vfork-like) + waitpid:       \(spread(posix))")
    say("  Foundation Process run+waitUntilExit:     \(spread(foundation)) (waitUntilExit runs its run loop in 50 ms slices)")

    guard let parent = [Cgroup.own(), Cgroup.hierarchy()].compactMap({ $0 }).first(where: { Cgroup(path: $0).isWritable }) else {
        say("cgroup freeze: skipped (no writable cgroup v2 here; run as root)")
        try stopFigures(rounds)
        return
    }
    say("cgroup freeze: write 1 to cgroup.freeze → cgroup.events says frozen 1 (read in a loop); thaw: write 0 → frozen 0")
    say("  (cgroups under \(parent); busy processes are `while :; do :; done` shells, \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs)")
    for busy in [1, 10] {
        let cgroup = try Cgroup.create(parent + "/scened-bench-\(getpid())-\(busy)")
        defer { retire(cgroup) }
        let started = try (0..<busy).map { _ in try ProcessSpawner.spawn(busyLoop(cgroup: cgroup.path)) }
        defer { started.forEach { close($0.pidfd) } }
        var freezes: [Double] = [], thaws: [Double] = []
        for _ in 0..<rounds {
            let t0 = now()
            try cgroup.freeze()
            while try !cgroup.events().frozen {}
            let t1 = now()
            try cgroup.thaw()
            while try cgroup.events().frozen {}
            let t2 = now()
            freezes.append(t1 - t0)
            thaws.append(t2 - t1)
            usleep(2_000)  // let them run between rounds, as apps do between freezes
        }
        say("  \(busy) busy process\(busy == 1 ? "  " : "es"): freeze \(spread(freezes)); thaw \(spread(thaws))")
        try cgroup.kill()
        for process in started { while ProcessSpawner.reap(pidfd: process.pidfd) == nil { usleep(1_000) } }
    }
    try stopFigures(rounds)
}

/// SIGSTOP to a process group → every member in state T; SIGCONT → none.
private func stopFigures(_ rounds: Int) throws {
    say("process group stop (the fallback): SIGSTOP to the group → every member's /proc state T; SIGCONT → none T")
    for busy in [1, 10] {
        let forks = String(repeating: "sh -c 'while :; do :; done' & ", count: busy - 1)
        let leader = try ProcessSpawner.spawn(LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", forks + "while :; do :; done"],
                                                         environment: ["PATH=/usr/bin:/bin"]))
        let group = ProcessGroup(pgid: leader.pid)
        defer {
            try? group.kill()
            while ProcessSpawner.reap(pidfd: leader.pidfd) == nil { usleep(1_000) }
            close(leader.pidfd)
        }
        var members: [pid_t] = []
        let deadline = now() + 5
        while members.count < busy && now() < deadline { members = group.pids(); usleep(1_000) }
        guard members.count == busy else { throw BenchError("process group: \(members.count) of \(busy) members started") }
        var stops: [Double] = [], continues: [Double] = []
        for _ in 0..<rounds {
            let t0 = now()
            try group.freeze()
            while !members.allSatisfy({ ProcessStat(pid: $0)?.state == "T" }) {}
            let t1 = now()
            try group.thaw()
            while members.contains(where: { ProcessStat(pid: $0)?.state == "T" }) {}
            let t2 = now()
            stops.append(t1 - t0)
            continues.append(t2 - t1)
            usleep(2_000)
        }
        say("  \(busy) busy process\(busy == 1 ? "  " : "es"): stop \(spread(stops)); continue \(spread(continues))")
    }
}

private func busyLoop(cgroup: String) -> LaunchSpec {
    LaunchSpec(executable: "/bin/sh", arguments: ["sh", "-c", "while :; do :; done"], cgroup: cgroup)
}

/// Kills what is left in the cgroup, waits for it to empty, removes it.
private func retire(_ cgroup: Cgroup) {
    try? cgroup.thaw()
    try? cgroup.kill()
    let deadline = now() + 10
    while (try? cgroup.events().populated) == true && now() < deadline { usleep(1_000) }
    try? cgroup.remove()
}

private func spawnerRound() throws {
    let process = try ProcessSpawner.spawn(LaunchSpec(executable: "/bin/true", arguments: ["true"]))
    defer { close(process.pidfd) }
    var p = pollfd(fd: process.pidfd, events: Int16(POLLIN), revents: 0)
    while ProcessSpawner.reap(pidfd: process.pidfd) == nil { _ = poll(&p, 1, 1_000) }
}

private func posixSpawnRound() throws {
    let pid = try spawn(["/bin/true"], env: [], stdoutPath: "/dev/null", stderrPath: "/dev/null")
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
}

private func timed(_ body: () throws -> Void) throws -> Double {
    let t = now()
    try body()
    return now() - t
}

/// "p50 412 µs, p99 1.3 ms".
private func spread(_ samples: [Double]) -> String {
    let sorted = samples.sorted()
    let show = { (s: Double) in s < 0.001 ? us(s) : ms(s) }
    return "p50 \(show(percentile(sorted, 0.5) ?? 0)), p99 \(show(percentile(sorted, 0.99) ?? 0))"
}

private func loadAverage() -> String {
    (try? readFile("/proc/loadavg"))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}
