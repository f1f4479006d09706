import Foundation
import Glibc
import Testing

extension Run {
    // MARK: - Stage 7: figures

    mutating func measure() throws {
        // exec -> READY with the small store the earlier stages left.
        let idleSessions = (try status()["sessions"] as? [String: Any])?["total"] as? Int ?? -1
        let idle = try startupTimes(runs: 3)
        report("MEASURE exec->READY, idle store (\(idleSessions) sessions): \(idle.summary)")

        // Transitions/s: at the default LogLevel=info (one journal entry per change), then with
        // LogLevel=warning applied by reload (no entry per change).
        let benchApp = "com.example.bench"
        let c = try client()
        var ids: [String] = []
        for _ in 0..<100 {
            let reply = try c.call("\(manager).Connect", ["app": benchApp])
            ids.append((reply["session"] as? [String: Any])?["id"] as? String ?? "?")
        }
        let info = try transitions(ids, app: benchApp)
        let levelFile = SystemTests.configDropIns + "/70-loglevel.conf"
        try ns.writeFile(levelFile, "[Daemon]\nLogLevel=warning\n")
        let reload = ns.systemctl("reload", "scened.service")
        #expect(reload.succeeded, "reload to LogLevel=warning:\n\(reload)")
        let warning = try transitions(ids, app: benchApp)
        // And back to the default (also proves a reload can lower LogLevel= again).
        ns.removeFile(levelFile)
        let back = ns.systemctl("reload", "scened.service")
        #expect(back.succeeded, "reload back to the default LogLevel=:\n\(back)")
        let infoAgain = try transitions(ids, app: benchApp)
        #expect(info.entries == info.calls && infoAgain.entries == infoAgain.calls,
                "at LogLevel=info each change is one entry: \(info.entries), \(infoAgain.entries) entries for \(info.calls) changes")
        #expect(warning.entries == 0, "at LogLevel=warning scened still logged \(warning.entries) state changes")
        let infoRate = (info.rate + infoAgain.rate) / 2
        report("MEASURE transitions/s, LogLevel=info (default; one journal entry per change): \(format(info.rate, 0))/s and \(format(infoAgain.rate, 0))/s (\(info.calls), \(infoAgain.calls) changes, pipelined, window 200)")
        report("MEASURE transitions/s, LogLevel=warning (logging off): \(format(warning.rate, 0))/s (\(warning.calls) changes); logging costs \(format((1 - infoRate / warning.rate) * 100, 0))% of the throughput")
        try ns.writeFile(levelFile, "[Daemon]\nLogLevel=warning\n")
        #expect(ns.systemctl("reload", "scened.service").succeeded, "reload to LogLevel=warning for the bulk creation")

        // 100,000 sessions (still LogLevel=warning: the creation is not the point).
        let target = 100_000
        let existing = (try status()["sessions"] as? [String: Any])?["total"] as? Int ?? 0
        let count = max(0, target - existing)
        let calls = (0..<count).map { i in
            Array("{\"method\":\"io.scened.Manager.Connect\",\"oneway\":true,\"parameters\":{\"app\":\"com.example.bulk\(i % 100)\",\"background\":true}}".utf8) + [0]
        }
        let t0 = monotonicSeconds()
        let after = try client().onewayBulk(calls)
        let seconds = monotonicSeconds() - t0
        let created = ((after["sessions"] as? [String: Any])?["total"] as? Int ?? 0) - existing
        #expect(created == count, "bulk Connect (oneway): \(created) of \(count) sessions created")
        report("bulk: \(count) background sessions connected in \(format(seconds, 1)) s (\(format(Double(count) / seconds, 0))/s, oneway, LogLevel=warning)")
        let big = try startupTimes(runs: 2)
        let total = (try status()["sessions"] as? [String: Any])?["total"] as? Int ?? -1
        #expect(total >= target, "sessions after the restarts: \(total)")
        report("MEASURE exec->READY, \(total) sessions: \(big.summary)")
        ns.removeFile(levelFile)
    }

    struct StartupTimes {
        var forkToReady: [Double] = []
        var execToReady: [Double] = []
        var summary: String {
            "exec->READY median \(format(median(execToReady))) ms (runs \(execToReady.map { format($0) }.joined(separator: ", "))); "
                + "systemd's ExecMainStart->ActiveEnter (fork, sandbox set-up, exec, READY) median \(format(median(forkToReady))) ms"
        }
    }

    /// Restarts the service `runs` times: systemd's fork->READY (ExecMainStartTimestamp ->
    /// ActiveEnterTimestamp) and exec->READY (from the child's "Executing:" log line, stamped by
    /// journald on arrival, to ActiveEnterTimestamp).
    func startupTimes(runs: Int) throws -> StartupTimes {
        var times = StartupTimes()
        for _ in 0..<runs {
            let restart = ns.systemctl("restart", "scened.service", timeout: 120)
            try #require(restart.succeeded, "restart:\n\(restart)")
            let p = unit(["MainPID", "ExecMainStartTimestampMonotonic", "ActiveEnterTimestampMonotonic", "ActiveState"])
            let forked = Double(p["ExecMainStartTimestampMonotonic"] ?? "") ?? 0
            let active = Double(p["ActiveEnterTimestampMonotonic"] ?? "") ?? 0
            try #require(forked > 0 && active > forked && p["ActiveState"] == "active", "timestamps: \(p)")
            times.forkToReady.append((active - forked) / 1000)
            var executing: Double?
            waitUntil(seconds: 3, interval: 0.05) {
                let entries = ns.journalEntries(["_PID=\(p["MainPID"] ?? "?")"])
                executing = entries.first { ($0["MESSAGE"] as? String)?.contains("Executing:") == true }
                    .flatMap { Double($0["__MONOTONIC_TIMESTAMP"] as? String ?? "") }
                return executing != nil
            }
            if let executing { times.execToReady.append((active - executing) / 1000) }
        }
        return times
    }

    struct TransitionRun {
        var calls = 0
        var seconds = 0.0
        var entries = 0
        var rate: Double { Double(calls) / seconds }
    }

    /// Rounds over `ids` (foregroundActive), alternating Background and Activate (each call one
    /// scene state change), pipelined on one connection, in blocks of 10 rounds until at least
    /// `minSeconds` passed (at least 40, at most 120 rounds: under LogRateLimitBurst=50000 per
    /// 30 s even for two runs at LogLevel=info); counts the journal entries they made.
    func transitions(_ ids: [String], app: String, minSeconds: Double = 1.0) throws -> TransitionRun {
        let matches = ["SCENED_APP=\(app)", "MESSAGE_ID=\(ID.stateChanged)"]
        let before = ns.countEntries(matches)
        var block: [[UInt8]] = []
        for round in 0..<10 {
            let method = round % 2 == 0 ? "Background" : "Activate"
            for id in ids {
                block.append(Array("{\"method\":\"io.scened.Manager.\(method)\",\"parameters\":{\"session\":\"\(id)\"}}".utf8) + [0])
            }
        }
        let connection = try client()
        var run = TransitionRun()
        var rounds = 0
        let t0 = monotonicSeconds()
        repeat {
            let result = try connection.pipeline(block, window: 200)
            #expect(result.replies == block.count && result.errors.isEmpty,
                    "transitions: \(result.replies)/\(block.count) replies, errors \(result.errors)")
            run.calls += block.count
            rounds += 10
        } while rounds < 120 && (rounds < 40 || monotonicSeconds() - t0 < minSeconds)
        run.seconds = monotonicSeconds() - t0
        // Wait for journald to store what was sent, then count this run's entries.
        var previous = -1
        let expected = run.calls
        waitUntil(seconds: 10, interval: 0.3) {
            run.entries = ns.countEntries(matches) - before
            defer { previous = run.entries }
            return run.entries == expected || run.entries == previous
        }
        return run
    }
}
