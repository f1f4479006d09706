import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// A well-behaved client (one call in flight, Activate/Background on its own session) keeps
    /// a share of the daemon while another client floods or pipelines. Only a generous floor
    /// of its unloaded rate, measured in the same test, is asserted: the bench measures the
    /// ≥ 50 % target; a test must not depend on the machine's load.
    @Suite("Floods and deep pipelines")
    struct Floods {
        /// The bystander's rate alone and under `load`, alternately (three loaded windows, each
        /// between two alone ones); fails when the median of loaded ÷ mean of the alone rates
        /// either side is below `floor`. Alternating cancels the drift of a shared machine
        /// (other suites run beside this one), which a single before/after pair does not.
        static func expectShare(_ daemon: DaemonProcess, floor: Double, _ what: String, knownIssue: Comment? = nil,
                                sourceLocation: SourceLocation = #_sourceLocation, load: () throws -> BackgroundLoad) throws {
            let bystander = try Bystander(daemon)
            try bystander.calls(20, within: 5, "warming up")
            var alone = [try bystander.throughput(over: 0.8)]
            var loaded: [Bystander.Throughput] = []
            var reports: [String] = []
            var sent = 0
            for _ in 0..<3 {
                let background = try load()
                #expect(background.waitStarted(seconds: 5), "\(what): \(background.report)")
                sleepMilliseconds(300)
                loaded.append(try bystander.throughput(over: 0.8))
                let report = background.stop()
                reports.append("\(report)")
                sent += report.callsSent
                if loaded.last?.stalled == true { break }
                alone.append(try bystander.throughput(over: 0.8))
            }
            let ratios = loaded.indices.compactMap { i -> Double? in
                guard i + 1 < alone.count else { return nil }
                return loaded[i].perSecond / max((alone[i].perSecond + alone[i + 1].perSecond) / 2, 1)
            }.sorted()
            let ratio = ratios.isEmpty ? 0 : ratios[ratios.count / 2]
            let share = {
                #expect(!loaded.contains { $0.stalled } && ratio >= floor,
                        "\(what): the bystander made \(loaded.map(\.description)) against \(alone.map(\.description)) alone: median \(Int(ratio * 100)) % (floor \(Int(floor * 100)) %); the load: \(reports)",
                        sourceLocation: sourceLocation)
            }
            if let knownIssue {
                // Reported as a known issue, not as a pass: the share is still measured and shown.
                withKnownIssue(knownIssue, isIntermittent: true) { share() }
            } else {
                share()
            }
            #expect(sent > 0, "\(what): the load never got going: \(reports)", sourceLocation: sourceLocation)
            try bystander.calls(20, within: 10, "after \(what)")
            try daemon.assertServing("after \(what)")
        }

        @Test("a flood of oneway Activate/Background leaves the bystander ≥ 10 % of its rate alone")
        func onewayTransitionFlood() throws {
            let daemon = try DaemonProcess.hostile()
            let session = try daemon.call("Connect", ["app": "org.example.flood", "background": true])["session"]?["id"]?.stringValue ?? "?"
            try Self.expectShare(daemon, floor: 0.10, "a oneway Activate/Background flood") {
                .onewayFlood(socket: daemon.socketPath,
                             calls: [framed("Activate", ["session": .string(session)], oneway: true),
                                     framed("Background", ["session": .string(session)], oneway: true)],
                             seconds: 10)
            }
        }

        /// A client that connects while another floods must be accepted and answered as soon as
        /// any call is: the listening socket was dispatched at the pass's own priority, and the
        /// pass, re-requesting itself while the flooder had calls queued, kept it waiting (about
        /// a second per connection in the release build, 60–90 ms beside a slower flooder).
        @Test("20 clients connecting one after another beside a oneway flood: each is answered within 0.5 s of connecting")
        func newcomersBesideAFlood() throws {
            let daemon = try DaemonProcess.hostile()
            let session = try daemon.call("Connect", ["app": "org.example.flood", "background": true])["session"]?["id"]?.stringValue ?? "?"
            let flood = BackgroundLoad.onewayFlood(socket: daemon.socketPath,
                                                   calls: [framed("Activate", ["session": .string(session)], oneway: true),
                                                           framed("Background", ["session": .string(session)], oneway: true)],
                                                   seconds: 30)
            #expect(flood.waitStarted(seconds: 5), "\(flood.report)")
            sleepMilliseconds(300)
            var waits: [Double] = []
            for _ in 0..<20 {
                let start = monotonicSeconds()
                let newcomer = try RawConnection(path: daemon.socketPath)
                try newcomer.send(framed("GetStatus"))
                let reply = try newcomer.receiveMessage(timeout: 10)
                waits.append(monotonicSeconds() - start)
                #expect(reply.flatMap(parseObject)?.errorName == nil, "a newcomer got \(reply.map { String(decoding: $0.prefix(200), as: UTF8.self) } ?? "no reply")")
                newcomer.close()
            }
            let report = flood.stop()
            #expect(report.callsSent > 0, "the flood never got going: \(report)")
            let slowest = waits.max() ?? 0
            #expect(slowest < 0.5, "newcomers waited \(waits.map { Int($0 * 1000) }) ms for their first reply beside the flood")
            try daemon.assertServing("after the newcomers")
        }

        @Test("a flood of oneway Connects leaves the bystander ≥ 10 % of its rate alone")
        func onewayConnectFlood() throws {
            let daemon = try DaemonProcess.hostile()
            try Self.expectShare(daemon, floor: 0.10, "a oneway Connect flood") {
                .onewayFlood(socket: daemon.socketPath,
                             calls: (0..<8).map { framed("Connect", ["app": .string("org.example.flood\($0)"), "background": true], oneway: true) },
                             seconds: 10)
            }
        }

        @Test("a client keeping 1,024 calls in flight (reading its replies) leaves the bystander ≥ 25 % of its rate alone")
        func deepPipeline() throws {
            let daemon = try DaemonProcess.hostile()
            let session = try daemon.call("Connect", ["app": "org.example.pipeline", "background": true])["session"]?["id"]?.stringValue ?? "?"
            // Above the 13 % measured on main, well below the 50 % the bench holds it to.
            // Known issue (issue 10, open): on a loaded machine the bystander's share beside a deep
            // pipeline falls to 8–20 % (windows of a near stall were seen), below this floor.
            try Self.expectShare(daemon, floor: 0.25, "1,024 pipelined calls in flight",
                                 knownIssue: "issue 10: the bystander's share beside a deep pipeline on a loaded machine") {
                .pipeline(socket: daemon.socketPath,
                          calls: [framed("Activate", ["session": .string(session)]), framed("Background", ["session": .string(session)])],
                          window: 1024, seconds: 10)
            }
        }
    }
}
