import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests.SlowReaders {
    /// A monitor whose client does not keep up falls behind at its high-water mark (a quarter
    /// of MaxOutputPerConnection here, 1 MiB): nothing more is queued or copied for it, and it
    /// reads the events from the log once its client reads. What it is behind by still counts
    /// as unread: a client that never reads is cut off at MaxOutputPerConnection as before.
    @Test("Monitors paused during ~2.7 MiB of events (past their 1 MiB high-water mark) get every event in order once they read; 20 that never read hold at most the mark each and are cut at MaxOutputPerConnection=4M")
    func monitorsThatFallBehind() throws {
        let daemon = try DaemonProcess.hostile(limits: ["MaxOutputPerConnection=4M"])
        let bystander = try Bystander(daemon)
        let resume = Shared(false)
        let logs = Shared([MonitorLog]())
        let counts = Shared([Int]())
        // One monitor of everything, one of the driving app only (a filtered monitor counts only
        // the events it matches).
        let paused = BackgroundLoad.pausedMonitors(socket: daemon.socketPath, apps: [nil, "org.example.driver"],
                                                   resume: resume, logs: logs, counts: counts)
        #expect(paused.waitStarted(seconds: 5), "\(paused.report)")
        let stalled = try Self.stalledMonitors(daemon, count: 20)
        // The bystander, 22 monitors and the GetStatus itself.
        #expect(try waitUntil(seconds: 5) { (try daemon.status()["connections"]?.intValue ?? 0) >= 24 })
        let first = try daemon.status()["nextSeq"]?.intValue ?? 0
        let before = daemon.peakResidentBytes

        // 150 reconnections, about 18 KiB of events each: every monitor falls behind by ~2.7 MiB.
        _ = try Self.drive(daemon, bystander, cycles: 150)
        let grown = daemon.peakResidentBytes - before
        // Queued for all 22 up to the limit, that would be ~60 MiB; at the mark, ~25 MiB.
        #expect(grown < 44 << 20, "the daemon's RSS grew by \(mebibytes(grown)) while 22 monitors were behind by ~2.7 MiB each")
        #expect(try daemon.status()["connections"]?.intValue ?? 0 >= 24, "monitors behind by less than MaxOutputPerConnection were cut")

        // The paused ones read; the others go on not reading, and pass 4 MiB behind.
        resume.update { $0 = true }
        _ = try Self.drive(daemon, bystander, cycles: 150)
        let last = try daemon.status()["nextSeq"]?.intValue ?? 0
        // Everything before `last` is committed and published: the monitor of every app reads it all.
        let caughtUp = waitUntil(seconds: 15) { Int64(counts.value.first ?? 0) >= last - first }
        #expect(caughtUp, "the paused monitors read \(counts.value) events; \(last - first) were made")
        let report = paused.stop()
        #expect(report.failure == nil, "\(report)")
        let received = logs.value
        #expect(received.count == 2)
        if received.count == 2 {
            let all = received[0], driver = received[1]
            #expect(all.problem == nil && driver.problem == nil, "\(all.problem ?? ""); \(driver.problem ?? "")")
            // Events after `last` (a timer's) may have come too.
            let seqs = all.events.map(\.seq).filter { $0 < last }
            #expect(seqs == Array(first..<last), "the monitor of every app got \(seqs.count) events, \(seqs.first ?? -1)…\(seqs.last ?? -1), of \(first)..<\(last)\(firstGap(seqs, consecutive: true).map { "; \($0)" } ?? "")")
            let expected = all.events.filter { $0.app == "org.example.driver" && $0.seq < last }
            #expect(!expected.isEmpty && driver.events.filter { $0.seq < last } == expected,
                    "the monitor of org.example.driver got \(driver.events.count) events; the driver's are \(expected.count)\(firstGap(driver.events.map(\.seq), consecutive: false).map { "; \($0)" } ?? "")")
        }
        try Self.expectClosed(stalled, limit: "MaxOutputPerConnection", maximum: 4 << 20)
        let logged = lines(of: daemon.stderr, mentioning: Int(getpid())).count
        #expect(logged >= 1 && logged < 20, "\(logged) log lines name this client's pid \(getpid()) for 20 cut monitors")
        try bystander.calls(20, within: 5, "after the monitors fell behind")
        try daemon.assertServing("after monitors that fell behind")
    }
}

/// Where `seqs` first fails to go up (by exactly one if `consecutive`), described.
private func firstGap(_ seqs: [Int64], consecutive: Bool) -> String? {
    for i in seqs.indices.dropFirst() where seqs[i] <= seqs[i - 1] || (consecutive && seqs[i] != seqs[i - 1] + 1) {
        return "\(seqs[i]) follows \(seqs[i - 1])"
    }
    return nil
}
