import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// Issue 37, the hostile side of Open: a flood of garbage Opens beside a bystander, clients
    /// that send half an Open and vanish, and an app that never reads while Opens flow to it.
    @Suite("Open from hostile clients (issue 37)")
    struct OpenHostile {
        static let target = "org.example.target"
        static let sleeper = "org.example.sleeper"

        /// scened with two routed apps: target (scheme target:) and sleeper (sleeper:, never
        /// started: its Opens are stored).
        static func daemon(routing: [String] = [], limits: [String] = []) throws -> DaemonProcess {
            let workspace = try Workspace(configuration: HostileConfiguration.text(limits: limits) + "\n[Routing]\n"
                                          + routing.joined(separator: "\n"))
            mkdir(workspace.directory.file("apps.d"), 0o755)
            for (app, scheme) in [(target, "target"), (sleeper, "sleeper")] {
                try writeTextFile(workspace.directory.file("apps.d/\(app).conf"), "[App]\nURLSchemes=\(scheme)\n")
            }
            return try DaemonProcess(workspace, environment: ScenedLaunch.measuredMemoryEnvironment)
        }

        /// An app attached on a raw connection that is never read again; its scene connected
        /// (foregroundActive). The connection and the session.
        static func silentApp(_ daemon: DaemonProcess) throws -> (RawConnection, String) {
            let stream = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
            try stream.sendCall("io.scened.App.Attach", ["app": .string(target)], more: true)
            let first = try stream.receiveObject(timeout: 10)
            guard first.errorName == nil else { throw TestFailure("Attach: \(first)") }
            let session = try daemon.call("Connect", ["app": .string(target)])["session"]?["id"]?.stringValue ?? "?"
            return (stream, session)
        }

        static func pendingOpens(_ daemon: DaemonProcess, _ app: String) throws -> Int64 {
            do {
                return try daemon.call("GetApp", ["app": .string(app)])["app"]?["pendingOpens"]?.intValue ?? -1
            } catch let error as VarlinkError where error.name.hasSuffix("NoSuchApp") {
                return 0
            }
        }

        /// The garbage, one framed Open each, cycled: malformed and oversized URLs, wrong
        /// types, unknown schemes, other sessions, and valid Opens for the app never started.
        static func garbage() -> [[UInt8]] {
            let long = String(repeating: "A", count: 9_000)
            let blob = String(repeating: "b", count: 17_000)
            let parameters: [JSONObject] = [
                ["url": ""], ["url": "no scheme"], ["url": "9x:y"], ["url": "target:a\u{0}b"], ["url": "target:\u{7f}"],
                ["url": .string("target:" + long)], ["url": 42], ["url": ["nested": true]], ["activity": "x"],
                ["activity": ["activityType": 7]], ["activity": ["activityType": "org.example.none"]],
                ["activity": ["activityType": "org.example.none", "userInfo": ["b": .string(blob)]]],
                ["url": "zzz:unknown"], ["url": "target:x", "activity": ["activityType": "a.b"]], [:],
                ["url": "target:x", "session": "s999999"], ["url": "target:x", "session": "banana"],
                ["url": "target:x", "activate": "yes"], ["url": "sleeper:kept"], ["url": "SLEEPER:kept-too"],
            ]
            return parameters.map { framed("Open", $0) }
        }

        @Test("10,000 Opens of garbage pipelined from one client beside a bystander: all answered, at most MaxPendingOpens stored, the bystander keeps ≥ 10 % of its rate, CPU and RSS bounded",
              .timeLimit(.minutes(5)))
        func garbageFlood() throws {
            let daemon = try Self.daemon()
            let bystander = try Bystander(daemon)
            try bystander.calls(20, within: 5, "warming up")
            let alone = try bystander.throughput(over: 1.0)
            let cpuBefore = try daemon.cpuTicks()
            let rssBefore = daemon.residentBytes
            let start = monotonicSeconds()
            let load = BackgroundLoad.pipeline(socket: daemon.socketPath, calls: Self.garbage(), window: 64, total: 10_000,
                                               seconds: 120, drainSeconds: 30)
            #expect(load.waitStarted(seconds: 5))
            let loaded = try bystander.throughput(over: 1.0)
            let report = load.finish(within: 150)
            let elapsed = monotonicSeconds() - start
            let cpu = Double(try daemon.cpuTicks() - cpuBefore) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
            let rssGrowth = (daemon.residentBytes - rssBefore) / 1024
            let ratio = loaded.perSecond / max(alone.perSecond, 1)

            #expect(report.failure == nil && report.replies == 10_000, "every Open answered: \(report)")
            #expect(report.errorReplies >= 10_000 - 16 - 20, "only a few Opens could be accepted: \(report)")
            #expect(try Self.pendingOpens(daemon, Self.sleeper) == 16, "MaxPendingOpens (16) stored, no more")
            #expect(!loaded.stalled && ratio >= 0.10, "bystander \(loaded) under the flood against \(alone) alone")
            #expect(cpu < 10_000, "scened used \(cpu) ms of CPU for 10,000 Opens")
            #expect(rssGrowth < 30 * 1024, "RSS grew \(rssGrowth) KiB")
            try bystander.calls(20, within: 5, "after the garbage")
            try daemon.assertServing("after 10,000 garbage Opens")
            print("10,000 garbage Opens: \(Int(elapsed * 1000)) ms; scened CPU \(Int(cpu)) ms; RSS +\(rssGrowth) KiB; "
                  + "bystander \(Int(ratio * 100)) % of its rate alone (\(loaded) vs \(alone)); \(report)")
        }

        @Test("300 connections each sending half an Open and closing (100 one by one, 200 held then closed at once): nothing stored, descriptors and connections back, scened idle and serving",
              .timeLimit(.minutes(3)))
        func halfOpens() throws {
            let daemon = try Self.daemon()
            let bystander = try Bystander(daemon)
            try bystander.calls(10, within: 5, "before the half Opens")
            let descriptors = daemon.openDescriptors
            let whole = framed("Open", ["url": .string("sleeper:half-" + String(repeating: "h", count: 200))])
            for i in 0..<100 {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 5)
                try raw.send(Array(whole.prefix(whole.count / 2 + i % 40)), timeout: 5)
                raw.close()
            }
            var held: [RawConnection] = []
            for i in 0..<200 {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 5)
                try raw.send(Array(whole.prefix(10 + i % (whole.count - 11))), timeout: 5)
                held.append(raw)
            }
            try bystander.calls(20, within: 5, "with 200 half Opens held")
            for raw in held { raw.close() }
            held.removeAll()
            let settled = waitUntil(seconds: 10) { daemon.openDescriptors <= descriptors + 2 }
            #expect(settled, "descriptors \(descriptors) before, \(daemon.openDescriptors) after")
            #expect(try Self.pendingOpens(daemon, Self.sleeper) == 0, "half an Open stores nothing")
            let cpu = try daemon.cpuPercent(over: 1.5)
            #expect(cpu < 20, "scened used \(Int(cpu)) % of a CPU afterwards")
            try bystander.calls(20, within: 5, "after the half Opens")
            try daemon.assertServing("after 300 half Opens")
            print("half Opens: descriptors \(descriptors) → \(daemon.openDescriptors), idle CPU \(Int(cpu)) %")
        }

        @Test("an app that never reads its Attach stream while 20,000 Opens of 1 KiB URLs flow to its scene: every Open answered in bounded time, the app's unread stream cut off at MaxOutputPerConnection=4M, peak RSS bounded, the bystander served",
              .timeLimit(.minutes(3)))
        func silentAppUnderOpens() throws {
            let daemon = try Self.daemon(limits: ["MaxOutputPerConnection=4M"])
            let (stream, session) = try Self.silentApp(daemon)
            defer { stream.close() }
            let bystander = try Bystander(daemon)
            try bystander.calls(10, within: 5, "before")
            let rssBefore = daemon.residentBytes
            let padding = String(repeating: "p", count: 1_000)
            var calls: [[UInt8]] = []
            for i in 0..<50 { calls.append(framed("Open", ["url": .string("target:\(i)/\(padding)"), "activate": false])) }
            let start = monotonicSeconds()
            let load = BackgroundLoad.pipeline(socket: daemon.socketPath, calls: calls, window: 16, total: 20_000,
                                               seconds: 60, drainSeconds: 20)
            #expect(load.waitStarted(seconds: 5))
            try bystander.calls(20, within: 10, "while Opens flow to a silent app")
            let report = load.finish(within: 90)
            let elapsed = monotonicSeconds() - start
            let peakGrowth = (daemon.peakResidentBytes - rssBefore) / 1024
            #expect(report.failure == nil && report.replies == 20_000, "\(report)")
            // Over 20 MiB of events unread: the stream is over [Limits] MaxOutputPerConnection= and
            // cut off. The RSS also holds the store's growth by 20,000 committed events.
            #expect(peakGrowth < 64 * 1024, "peak RSS grew \(peakGrowth) KiB")
            let cut = try stream.waitForClose(timeout: 5)
            #expect(cut, "the unread Attach stream, over MaxOutputPerConnection=4M, was not closed")
            let app = try daemon.call("GetApp", ["app": .string(Self.target)])["app"]?.objectValue ?? [:]
            let state = try daemon.call("GetSession", ["session": .string(session)])["session"]?["state"]?.stringValue ?? "?"
            try daemon.assertServing("after Opens to a silent app")
            print("silent app: 20,000 Opens answered in \(Int(elapsed * 1000)) ms (\(report.errorReplies) refused); peak RSS +\(peakGrowth) KiB; "
                  + "the app afterwards: process \(app["process"]?.stringValue ?? "?"), attachedPid \(app["attachedPid"].map { "\($0)" } ?? "none"), its scene \(state); its Attach stream \(cut ? "closed" : "still open")")
        }
    }
}
