import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The Varlink wire protocol at its edges, with raw sockets. After each abuse the daemon must
/// still be alive and serve a second client (GetStatus and a Connect).
@Suite("Varlink protocol edge cases on the real daemon")
struct ProtocolEdgeTests {
    static let manager = "io.scened.Manager."

    static func call(_ method: String, _ parameters: JSONObject = [:], more: Bool = false, oneway: Bool = false) -> [UInt8] {
        VarlinkCall(method: method, parameters: parameters, oneway: oneway, more: more).encoded()
    }

    @Test("several calls in one write are all answered, in order")
    func mergedMessages() throws {
        let daemon = try DaemonProcess(try Workspace())
        let raw = try RawConnection(path: daemon.socketPath)
        try raw.send(Self.call("org.varlink.service.GetInfo") + Self.call(Self.manager + "Connect", ["app": "com.example.merged"])
                     + Self.call(Self.manager + "GetStatus") + Self.call(Self.manager + "GetSession", ["session": "s1"]))
        let info = try raw.receiveObject()
        #expect(info.parametersObject["vendor"]?.stringValue == "scened")
        let connect = try raw.receiveObject()
        #expect(connect.parametersObject["session"]?["id"]?.stringValue == "s1")
        let status = try raw.receiveObject()
        #expect(status.parametersObject["status"]?["sessions"]?["total"]?.intValue == 1)
        let session = try raw.receiveObject()
        #expect(session.parametersObject["session"]?["state"]?.stringValue == "foregroundActive")
        #expect(try raw.staysQuiet(milliseconds: 200))
        try daemon.assertServing("after merged messages")
        try daemon.stop()
    }

    @Test("one call split over many reads (byte by byte) is answered once complete")
    func splitMessage() throws {
        let daemon = try DaemonProcess(try Workspace())
        let raw = try RawConnection(path: daemon.socketPath)
        let bytes = Self.call(Self.manager + "Connect", ["app": "com.example.split", "background": true])
            + Self.call(Self.manager + "GetStatus")
        for (i, byte) in bytes.enumerated() {
            try raw.send([byte])
            if i % 4 == 0 { usleep(500) }
            // Nothing may come back before the first NUL.
            if i == bytes.count / 4 { #expect(try raw.staysQuiet(milliseconds: 50)) }
        }
        let connect = try raw.receiveObject()
        #expect(connect.errorName == nil, "\(connect)")
        #expect(connect.parametersObject["session"]?["id"]?.stringValue == "s1")
        let status = try raw.receiveObject()
        #expect(status.parametersObject["status"]?["sessions"]?["live"]?.intValue == 1)
        try daemon.assertServing("after a split message")
        try daemon.stop()
    }

    @Test("Monitor since with a filter replays the log across batches in which nothing matches")
    func filteredReplayAcrossBatches() throws {
        let daemon = try DaemonProcess(try Workspace())
        let driver = try RawConnection(path: daemon.socketPath)
        // One event of com.example.rare, then well over one replay batch (256 events) of others,
        // then another of com.example.rare.
        var calls = Self.call(Self.manager + "Launch", ["app": "com.example.rare"])
        for i in 0..<300 { calls += Self.call(Self.manager + "Connect", ["app": .string("com.example.busy\(i % 10)"), "background": true]) }
        calls += Self.call(Self.manager + "MemoryWarning", ["apps": ["com.example.rare"]])
        try driver.send(calls)
        _ = try driver.skipMessages(302)
        let replay = try EventMonitor(daemon, parameters: ["app": "com.example.rare", "since": 1], consecutive: false)
        let rare = Expect(app: "com.example.rare")
        try replay.expect([rare.didFinishLaunching, rare.memoryWarning], "filtered replay from the log")
        // And then live.
        _ = try daemon.call("MemoryWarning", ["apps": ["com.example.rare"]])
        try replay.expect([rare.memoryWarning], "live after the replay")
        replay.close()
        try daemon.stop()
    }

    @Test("oneway: no reply, and the effect is visible to the next call")
    func oneway() throws {
        let daemon = try DaemonProcess(try Workspace())
        let raw = try RawConnection(path: daemon.socketPath)
        try raw.send(Self.call(Self.manager + "Connect", ["app": "com.example.oneway"], oneway: true))
        #expect(try raw.staysQuiet(milliseconds: 300), "a oneway call was answered")
        try raw.send(Self.call(Self.manager + "GetSession", ["session": "s1"]))
        let reply = try raw.receiveObject()
        #expect(reply.parametersObject["session"]?["app"]?.stringValue == "com.example.oneway", "\(reply)")
        // A oneway call that fails is not answered either, and the connection stays usable.
        try raw.send(Self.call(Self.manager + "Activate", ["session": "s99"], oneway: true) + Self.call(Self.manager + "GetStatus"))
        let status = try raw.receiveObject()
        #expect(status.parametersObject["status"] != nil, "\(status)")
        try daemon.stop()
    }

    @Test("standard errors: MethodNotFound, InterfaceNotFound, InvalidParameter naming the parameter; the connection stays open")
    func standardErrors() throws {
        let daemon = try DaemonProcess(try Workspace())
        let raw = try RawConnection(path: daemon.socketPath)
        func expectError(_ bytes: [UInt8], _ name: String, _ key: String? = nil, _ value: String? = nil) throws {
            try raw.send(bytes)
            let reply = try raw.receiveObject()
            #expect(reply.errorName == name, "\(reply)")
            if let key { #expect(reply.parametersObject[key]?.stringValue == value, "\(reply)") }
        }
        try expectError(Self.call(Self.manager + "Nope"), "org.varlink.service.MethodNotFound", "method", Self.manager + "Nope")
        try expectError(Self.call("com.example.Nothing.Method"), "org.varlink.service.InterfaceNotFound", "interface", "com.example.Nothing")
        try expectError(Self.call("org.varlink.service.GetInterfaceDescription", ["interface": "com.example.Nothing"]),
                        "org.varlink.service.InterfaceNotFound", "interface", "com.example.Nothing")
        try expectError(Self.call(Self.manager + "Connect", ["app": 5]), "org.varlink.service.InvalidParameter", "parameter", "app")
        try expectError(Self.call(Self.manager + "Connect"), "org.varlink.service.InvalidParameter", "parameter", "app")
        try expectError(Self.call(Self.manager + "Connect", ["app": "com.example.x", "bogus": 1]),
                        "org.varlink.service.InvalidParameter", "parameter", "bogus")
        try expectError(Self.call(Self.manager + "Connect", ["app": "com.example.x", "background": "yes"]),
                        "org.varlink.service.InvalidParameter", "parameter", "background")
        try expectError(Self.call(Self.manager + "Connect", ["app": "not an app id"]), "org.varlink.service.InvalidParameter", "parameter", "app")
        try expectError(Self.call(Self.manager + "Monitor"), "org.varlink.service.ExpectedMore")
        // Typed errors with their parameters.
        try expectError(Self.call(Self.manager + "GetSession", ["session": "s42"]), "io.scened.Manager.NoSuchSession", "session", "s42")
        try expectError(Self.call(Self.manager + "GetApp", ["app": "com.example.none"]), "io.scened.Manager.NoSuchApp", "app", "com.example.none")
        try expectError(Self.call(Self.manager + "Terminate", ["app": "com.example.none"]), "io.scened.Manager.NoSuchApp", "app", "com.example.none")
        try raw.send(Self.call(Self.manager + "Connect", ["app": "com.example.x", "background": true]))
        _ = try raw.receiveObject()
        try expectError(Self.call(Self.manager + "Deactivate", ["session": "s1"]), "io.scened.Manager.InvalidTransition", "state", "background")
        try raw.send(Self.call(Self.manager + "Discard", ["session": "s1"]) + Self.call(Self.manager + "Activate", ["session": "s1"]))
        #expect(try raw.receiveObject().errorName == nil)
        let discarded = try raw.receiveObject()
        #expect(discarded.errorName == "io.scened.Manager.SessionDiscarded", "\(discarded)")
        #expect(discarded.parametersObject["session"]?.stringValue == "s1")
        // Still the same connection.
        try raw.send(Self.call(Self.manager + "GetStatus"))
        #expect(try raw.receiveObject().parametersObject["status"] != nil)
        try daemon.stop()
    }

    /// Sends `bytes`, expects a ProtocolViolation reply with `reason` (when `replyRequired`)
    /// and then the connection closed; then the daemon must still serve others.
    static func expectViolation(_ daemon: DaemonProcess, _ bytes: [UInt8], reason: String, _ context: String) throws {
        let bystander = try daemon.client()
        _ = try bystander.call(manager + "GetStatus")
        let raw = try RawConnection(path: daemon.socketPath)
        do {
            try raw.send(bytes)
        } catch {
            // The daemon may close before everything is written; the reply must still be there.
        }
        guard let message = try raw.receiveMessage(timeout: 10) else {
            throw TestFailure("\(context): the connection was closed without a ProtocolViolation reply")
        }
        guard case .object(let reply) = try JSONParser.parse(message) else { throw TestFailure("\(context): reply is not an object") }
        #expect(reply.errorName == "io.scened.Manager.ProtocolViolation", "\(context): \(reply)")
        #expect(reply.parametersObject["reason"]?.stringValue == reason, "\(context): \(reply)")
        #expect(try raw.waitForClose(timeout: 5), "\(context): the connection stayed open after a protocol violation")
        // A client that was connected all along did not notice.
        let status = try bystander.call(manager + "GetStatus")
        #expect(status["status"] != nil)
        try daemon.assertServing("after \(context)")
    }

    @Test("oversize, malformed JSON, invalid UTF-8, no method: ProtocolViolation reply, then close; others unaffected")
    func malformedMessages() throws {
        let daemon = try DaemonProcess(try Workspace())
        // Over 1 MiB with no NUL: the daemon gives up once the limit is passed.
        let oversize = Array(#"{"method":"io.scened.Manager.GetStatus","parameters":{"pad":""#.utf8)
            + [UInt8](repeating: UInt8(ascii: "a"), count: (1 << 20) + 4096)
        try Self.expectViolation(daemon, oversize, reason: "messageTooLarge", "a message over 1 MiB without NUL")
        // A complete message over the limit, NUL-terminated.
        try Self.expectViolation(daemon, oversize + Array(#""}}"#.utf8) + [0], reason: "messageTooLarge", "a NUL-terminated message over 1 MiB")
        try Self.expectViolation(daemon, Array(#"{"method": "io.scened.Manager.GetStatus", "#.utf8) + [0],
                                 reason: "invalidJSON", "invalid JSON")
        try Self.expectViolation(daemon, Array(#"{"method":"io.scened.Manager.Connect","parameters":{"app":""#.utf8) + [0xff, 0xfe]
                                 + Array(#""}}"#.utf8) + [0], reason: "invalidUTF8", "invalid UTF-8")
        try Self.expectViolation(daemon, Array(#"{"parameters":{}}"#.utf8) + [0], reason: "missingMethod", "a call without method")
        try Self.expectViolation(daemon, Array("[1,2,3]".utf8) + [0], reason: "notAnObject", "a message that is not an object")
        // The calls before the bad one are still answered first.
        let raw = try RawConnection(path: daemon.socketPath)
        try raw.send(Self.call(Self.manager + "GetStatus") + Array("{".utf8) + [0])
        #expect(try raw.receiveObject().parametersObject["status"] != nil)
        #expect(try raw.receiveObject().errorName == "io.scened.Manager.ProtocolViolation")
        #expect(try raw.waitForClose(timeout: 5))
        try daemon.stop()
    }
}

/// The heavy ones (tens of MiB, 25,000 sessions), one at a time so that they do not starve
/// each other on a small machine.
@Suite("Varlink protocol under load", .serialized)
struct ProtocolLoadTests {
    static let manager = ProtocolEdgeTests.manager
    static func call(_ method: String, _ parameters: JSONObject = [:], more: Bool = false, oneway: Bool = false) -> [UInt8] {
        ProtocolEdgeTests.call(method, parameters, more: more, oneway: oneway)
    }

    @Test("1,000 pipelined calls are answered in order (more than the output high-water mark)")
    func pipelining() throws {
        let daemon = try DaemonProcess(try Workspace())
        let raw = try RawConnection(path: daemon.socketPath)
        var batch: [UInt8] = []
        let count = 1000
        for i in 0..<count {
            if i % 10 == 9 {
                batch += Self.call(Self.manager + "GetStatus")
            } else {
                batch += Self.call(Self.manager + "Connect", ["app": .string("com.example.pipe\(i % 100)")])
            }
        }
        let started = monotonicNanoseconds()
        // Written while the replies are read, as a real pipelining client does: the daemon stops
        // reading a client whose replies back up, so writing everything first could deadlock.
        let writer = try RawConnection.Writer(raw, batch)
        var nextSession = 1
        var lastSeq: Int64 = 0
        var replyBytes = 0
        for i in 0..<count {
            guard let bytes = try raw.receiveMessage(timeout: 20) else {
                throw TestFailure("connection closed after \(i) replies; stderr:\n\(daemon.stderr.suffix(2000))")
            }
            replyBytes += bytes.count + 1
            guard case .object(let reply) = try JSONParser.parse(bytes), reply.errorName == nil else {
                throw TestFailure("reply \(i) is an error: \(String(decoding: bytes, as: UTF8.self))")
            }
            let p = reply.parametersObject
            if i % 10 == 9 {
                // GetStatus sees exactly the sessions connected before it.
                #expect(p["status"]?["sessions"]?["total"]?.intValue == Int64(nextSession - 1), "reply \(i) out of order")
                #expect(p["status"]?["nextSeq"]?.intValue == lastSeq + 1, "reply \(i): nextSeq")
            } else {
                #expect(p["session"]?["id"]?.stringValue == "s\(nextSession)", "reply \(i) out of order: \(p["session"]?["id"] ?? .null)")
                nextSession += 1
                let seqs = p["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
                #expect(seqs.first == lastSeq + 1, "reply \(i): events do not continue the sequence")
                lastSeq = seqs.last ?? lastSeq
            }
        }
        try writer.finish()
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        #expect(replyBytes > 1 << 20, "the test must push past the daemon's 1 MiB output high-water mark")
        #expect(seconds < 45, "1,000 pipelined calls took \(seconds) s")
        #expect(try raw.staysQuiet(milliseconds: 200))
        try daemon.assertServing("after 1,000 pipelined calls")
        try daemon.stop()
    }

    @Test("a Monitor client that never reads is cut off once its output passes the cap, with LimitExceeded last; the daemon keeps serving")
    func monitorThatNeverReads() throws {
        let daemon = try DaemonProcess(try Workspace())
        let driver = try RawConnection(path: daemon.socketPath)
        // 200 running apps, each warned on every MemoryWarning: 200 events per call.
        var setup: [UInt8] = []
        for i in 0..<200 { setup += Self.call(Self.manager + "Connect", ["app": .string("com.example.load\(i)")]) }
        let setupWriter = try RawConnection.Writer(driver, setup)
        _ = try driver.skipMessages(200)
        try setupWriter.finish()

        let stalled = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
        try stalled.send(Self.call(Self.manager + "Monitor", more: true))
        // A monitor that does read, all along, must not be disturbed.
        let healthy = try EventMonitor(daemon, parameters: ["app": "com.example.load0"], consecutive: false)
        guard try waitUntil(seconds: 10, {
            (try daemon.call("GetStatus")["status"]?["connections"]?.intValue ?? 0) >= 4
        }) else { throw TestFailure("monitors did not connect") }

        var eventBytes = 0
        var eventCount = 0
        var rounds = 0
        var dropped = false
        var bytesWhenCut: Int?
        let warning = Self.call(Self.manager + "MemoryWarning")
        while !dropped && eventBytes < 64 << 20 {
            var round: [UInt8] = []
            for _ in 0..<20 { round += warning }
            try driver.send(round)
            // Each reply carries the same 200 events the monitors get.
            eventBytes += try driver.skipMessages(20)
            eventCount += 20 * 200
            rounds += 1
            for _ in 0..<20 {
                guard let e = try healthy.next(timeout: 10), e.event == "didReceiveMemoryWarning" else {
                    throw TestFailure("the reading monitor missed events in round \(rounds)")
                }
            }
            // Cut off: its unsent output dropped at once, the error queued; the connection then
            // lingers (at most 2 s) for the client to read what it still can.
            if daemon.stderr.contains("MaxOutputPerConnection exceeded") {
                bytesWhenCut = eventBytes + 42 * eventCount
                dropped = true
            }
        }
        // What the monitor was sent: the same events as the replies, each in its own message
        // ({"parameters":{"event":…},"continues":true} and a NUL: 42 bytes more than in a reply).
        let monitorBytes = eventBytes + 42 * eventCount
        #expect(dropped, "the non-reading monitor was not cut off after \(monitorBytes >> 20) MiB of events")
        let cut = bytesWhenCut ?? monitorBytes
        #expect(cut >= 16 << 20, "cut off after only \(cut >> 20) MiB: the cap is 16 MiB of unread output")
        #expect(cut <= 22 << 20, "cut off only after \(cut >> 20) MiB")
        // What the kernel still held is delivered (the rest was dropped), LimitExceeded last, then EOF.
        var last: [UInt8] = []
        while let message = try stalled.receiveMessage(timeout: 10) { last = message }
        let error = try JSONParser.parse(last)
        #expect(error["error"]?.stringValue == "io.scened.Manager.LimitExceeded", "last message: \(String(decoding: last.prefix(300), as: UTF8.self))")
        #expect(error["parameters"]?["limit"]?.stringValue == "MaxOutputPerConnection")
        #expect(try waitUntil(seconds: 10, { (try daemon.call("GetStatus")["status"]?["connections"]?.intValue ?? 9) < 4 }),
                "the cut-off monitor's connection was not closed")
        #expect(try healthy.expectQuietResult())
        try daemon.assertServing("after dropping a monitor that never read")
        let rss = readTextFile("/proc/\(daemon.pid)/status").split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        let kilobytes = Int(rss.split(separator: " ").dropFirst().first ?? "") ?? 0
        #expect(kilobytes < 200_000, "daemon RSS \(kilobytes) kB after dropping the monitor")
        try daemon.stop()
    }

    @Test("ListSessions: 25,000 sessions arrive complete in batches with more; over 10,000 without more is ExpectedMore")
    func largeListings() throws {
        let workspace = try Workspace(configuration: """
            [Daemon]
            LogLevel=warning
            [Lifecycle]
            SuspendDelaySec=60s
            [Store]
            Durability=off
            """)
        let daemon = try DaemonProcess(workspace)
        let total = 25_000
        let driver = try RawConnection(path: daemon.socketPath)
        var calls: [UInt8] = []
        for i in 0..<total {
            calls += Self.call(Self.manager + "Connect", ["app": .string("com.example.bulk\(i % 50)"), "background": true])
        }
        let writer = try RawConnection.Writer(driver, calls)
        _ = try driver.skipMessages(total, timeout: 240)
        try writer.finish()

        // With more: every batch but the last has continues; together they hold every session once.
        try driver.send(Self.call(Self.manager + "ListSessions", more: true))
        var ids: [String] = []
        var batches = 0
        while true {
            let reply = try driver.receiveObject(timeout: 20)
            guard reply.errorName == nil else { throw TestFailure("ListSessions failed: \(reply)") }
            batches += 1
            for s in reply.parametersObject["sessions"]?.arrayValue ?? [] { ids.append(s["id"]?.stringValue ?? "?") }
            if reply["continues"]?.boolValue != true { break }
            if batches > total { throw TestFailure("ListSessions never ended") }
        }
        #expect(ids.count == total)
        #expect(ids == (1...total).map { "s\($0)" }, "sessions missing, repeated or out of order")
        #expect(batches > 1, "25,000 sessions came in one reply")

        // Without more: refused.
        try driver.send(Self.call(Self.manager + "ListSessions"))
        let refused = try driver.receiveObject()
        #expect(refused.errorName == "org.varlink.service.ExpectedMore", "\(refused.errorName ?? "no error")")
        // A filtered listing under the limit still works without more.
        try driver.send(Self.call(Self.manager + "ListSessions", ["app": "com.example.bulk7"]))
        let filtered = try driver.receiveObject(timeout: 20)
        #expect(filtered.parametersObject["sessions"]?.arrayValue?.count == total / 50)
        try daemon.assertServing("after large listings")
        try daemon.stop()
    }
}

extension EventMonitor {
    /// True when nothing more arrives for a moment.
    func expectQuietResult() throws -> Bool { try next(timeout: 0.2) == nil }
}
