import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// Clients that do not read what they are sent: their unread output is capped per client
    /// (MaxOutputPerConnection) and in total (MaxBufferedOutput); a capped client loses its
    /// queued messages, gets LimitExceeded after whole messages only, and is closed.
    @Suite("Slow readers")
    struct SlowReaders {
        /// Subscribes `count` Monitors on sockets with a tiny receive buffer, that never read.
        static func stalledMonitors(_ daemon: DaemonProcess, count: Int) throws -> [RawConnection] {
            try (0..<count).map { _ in
                let raw = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096, connectTimeout: 3)
                try raw.send(framed("Monitor", more: true), timeout: 2)
                return raw
            }
        }

        /// Reconnects a session `cycles` times (Disconnect, Activate: six events, one of them a
        /// willConnectTo carrying the session's 16 KiB of restoration data), 64 calls in
        /// flight, while the bystander keeps making calls one at a time. Returns the number of
        /// events caused meanwhile.
        static func drive(_ daemon: DaemonProcess, _ bystander: Bystander, cycles: Int) throws -> Int64 {
            let session = try daemon.call("Connect", ["app": "org.example.driver", "background": true])["session"]?["id"]?
                .stringValue ?? "?"
            _ = try daemon.call("SaveState", ["session": .string(session),
                                              "restoration": ["json": ["blob": .string(String(repeating: "r", count: 16 << 10))]]])
            let before = try daemon.status()["nextSeq"]?.intValue ?? 0
            let driver = BackgroundLoad.pipeline(
                socket: daemon.socketPath,
                calls: [framed("Disconnect", ["session": .string(session)]), framed("Activate", ["session": .string(session)])],
                window: 64, total: 2 * cycles, seconds: 12)
            var bystanderCalls = 0
            while !driver.control.finished.value {
                try bystander.calls(1, within: 3, "while \(cycles) reconnections went to non-reading monitors")
                bystanderCalls += 1
            }
            let report = driver.stop()
            #expect(report.failure == nil && report.replies == 2 * cycles && report.errorReplies == 0,
                    "the client reconnecting its session: \(report)")
            #expect(bystanderCalls > 0)
            return (try daemon.status()["nextSeq"]?.intValue ?? 0) - before
        }

        /// Reads the never-reading monitors at last: each must have been closed, and whatever
        /// error it got must be LimitExceeded for `limit`. (It cannot demand the error itself: a
        /// client that never reads has no room for it, and is closed after the linger.)
        static func expectClosed(_ stalled: [RawConnection], limit: String, maximum: Int64, atLeast: Int? = nil,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
            let endings = try readUntilClosed(stalled, seconds: 8)
            let open = endings.filter { !$0.closed }.count
            let wrong = endings.compactMap { ending -> String? in
                guard ending.last?.errorName != nil else { return nil }
                return limitExceededProblem(ending.last, limit: limit, maximum: maximum)
            }
            if let atLeast {
                #expect(stalled.count - open >= atLeast,
                        "only \(stalled.count - open) of \(stalled.count) non-reading monitors were closed", sourceLocation: sourceLocation)
            } else {
                #expect(open == 0, "\(open) of \(stalled.count) non-reading monitors still open 8 s after the load", sourceLocation: sourceLocation)
            }
            #expect(wrong.isEmpty, "non-reading monitors got another error: \(wrong.prefix(3))", sourceLocation: sourceLocation)
        }

        @Test("100 Monitors that never read and 5 that read slowly, during 300 reconnections (~5 MiB of events each): cut at 1 MiB unread with LimitExceeded, RSS bounded")
        func monitorsThatDoNotRead() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxOutputPerConnection=1M"])
            let bystander = try Bystander(daemon)
            let stalled = try Self.stalledMonitors(daemon, count: 100)
            let slow = BackgroundLoad.slowMonitors(socket: daemon.socketPath, count: 5, limit: "MaxOutputPerConnection", maximum: 1 << 20)
            let reading = BackgroundLoad.readingMonitor(socket: daemon.socketPath, seconds: 40)
            #expect(slow.waitStarted(seconds: 5) && reading.waitStarted(seconds: 5), "\(slow.report); \(reading.report)")
            // The bystander, 105 monitors, the reading one and the GetStatus itself.
            #expect(try waitUntil(seconds: 5) { (try daemon.status()["connections"]?.intValue ?? 0) >= 108 })

            let events = try Self.drive(daemon, bystander, cycles: 300)
            let peak = daemon.peakResidentBytes
            #expect(peak < 160 << 20, "the daemon's RSS peaked at \(mebibytes(peak)) with 105 monitors capped at 1 MiB each")

            let complete = waitUntil(seconds: 5) { Int64(reading.report.replies) >= events }
            let readingReport = reading.stop()
            #expect(complete && readingReport.failure == nil,
                    "the reading monitor got \(readingReport.replies) of \(events) events: \(readingReport)")
            let slowReport = slow.stop()
            #expect(slowReport.failure == nil, "\(slowReport.failure ?? "")")
            try Self.expectClosed(stalled, limit: "MaxOutputPerConnection", maximum: 1 << 20)
            // Logged with the client's pid, but not once per client when 105 go at once.
            let logged = lines(of: daemon.stderr, mentioning: Int(getpid())).count
            #expect(logged >= 1 && logged < 105, "\(logged) log lines name this client's pid \(getpid()) for 105 cut monitors")
            try bystander.calls(20, within: 5, "after the monitors were cut")
            try daemon.assertServing("after 105 monitors that did not read")
        }

        @Test("20 Monitors that never read, MaxBufferedOutput=4M in total: the daemon cuts them with LimitExceeded, a reading monitor keeps all")
        func totalBufferedOutput() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxBufferedOutput=4M"])
            let bystander = try Bystander(daemon)
            let stalled = try Self.stalledMonitors(daemon, count: 20)
            let reading = BackgroundLoad.readingMonitor(socket: daemon.socketPath, seconds: 40)
            #expect(reading.waitStarted(seconds: 5), "the reading monitor: \(reading.report)")
            #expect(try waitUntil(seconds: 5) { (try daemon.status()["connections"]?.intValue ?? 0) >= 23 })

            let events = try Self.drive(daemon, bystander, cycles: 200)
            let complete = waitUntil(seconds: 5) { Int64(reading.report.replies) >= events }
            let readingReport = reading.stop()
            #expect(complete && readingReport.failure == nil,
                    "the reading monitor got \(readingReport.replies) of \(events) events: \(readingReport)")

            // 20 × ~3 MiB of events against 4 MiB in all: most of them must go.
            try Self.expectClosed(stalled, limit: "MaxBufferedOutput", maximum: 4 << 20, atLeast: 10)
            let peak = daemon.peakResidentBytes
            #expect(peak < 128 << 20, "the daemon's RSS peaked at \(mebibytes(peak))")
            try bystander.calls(20, within: 5, "after MaxBufferedOutput cut the monitors")
            try daemon.assertServing("after MaxBufferedOutput")
        }

        @Test("a client pipelining 20,000 calls and reading far slower: others are served, memory bounded, it gets its replies in order or LimitExceeded")
        func pipelinerThatReadsSlowly() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxOutputPerConnection=1M"])
            let bystander = try Bystander(daemon)
            let call = framed("GetStatus")
            let greedy = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
            let writer = try RawConnection.Writer(greedy, [UInt8](Array(repeating: call, count: 20_000).joined()), stallSeconds: 2)
            // 4 KiB every 50 ms while it writes, and a bystander call each time.
            var bystanderCalls = 0
            let slowPhase = Deadline(seconds: 4)
            while !writer.isFinished && !slowPhase.hasPassed {
                if try !greedy.fill(waitingMilliseconds: 0, maxBytes: 4096) { break }
                try bystander.calls(1, within: 3, "while a client pipelines 20,000 calls and reads slowly")
                bystanderCalls += 1
                sleepMilliseconds(50)
            }
            let written = writer.join().written
            #expect(bystanderCalls > 0)
            let peak = daemon.peakResidentBytes
            #expect(peak < 128 << 20, "the daemon's RSS peaked at \(mebibytes(peak))")

            // Now it reads fast: every whole call it wrote is answered, or the answers stop with the limit.
            let due = written / call.count
            let ending = try readUntilClosedOrCount(greedy, count: due, seconds: 10)
            if ending.messages < due || ending.closed {
                expectLimitExceeded(ending.last, limit: "MaxOutputPerConnection", maximum: 1 << 20,
                                    "the pipelining client got \(ending.messages) of \(due) replies")
            } else {
                #expect(ending.last?.parametersObject["status"] != nil, "the last reply: \(ending.last.map(describe) ?? "none")")
            }
            try bystander.calls(20, within: 5, "after the pipelining client read")
            try daemon.assertServing("after a pipelining client that read slowly")
        }
    }
}

/// Reads until `count` messages came, the daemon closed, or `seconds` passed.
func readUntilClosedOrCount(_ connection: RawConnection, count: Int, seconds: Double) throws -> Ending {
    var ending = Ending()
    let deadline = Deadline(seconds: seconds)
    while ending.messages < count && !deadline.hasPassed {
        while ending.messages < count, let message = connection.bufferedMessage() {
            ending.lastBytes = message
            ending.messages += 1
        }
        if ending.messages >= count { break }
        if try !connection.fill(waitingMilliseconds: 50) {
            while let message = connection.bufferedMessage() {
                ending.lastBytes = message
                ending.messages += 1
            }
            ending.closed = true
            break
        }
    }
    ending.last = ending.lastBytes.flatMap(parseObject)
    return ending
}
