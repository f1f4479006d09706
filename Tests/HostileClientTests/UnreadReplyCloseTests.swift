import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests.CloseEarly {
    /// Linux resets an AF_UNIX stream connection closed with unread input: the daemon's end
    /// then reports EPOLLERR (ECONNRESET) beside EPOLLHUP, yet every byte the client sent
    /// stays readable before the error. The calls received must run as after a plain hang-up.
    @Test("a call received behind a reply the client never read still runs, though its close is a reset")
    func callsBehindAnUnreadReplyStillRun() throws {
        let daemon = try DaemonProcess.hostile()
        let bystander = try Bystander(daemon)
        let baseline = try daemon.status()["connections"]?.intValue ?? -1
        var apps: [String] = []
        for i in 0..<10 {
            // With the reply read first, the close is a plain hang-up: the control.
            for readsReply in [false, true] {
                let app = "org.example.\(readsReply ? "read" : "unread")\(i)"
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 2)
                // The open Monitor stream holds the Connect in the daemon's input until the
                // stream ends, here by the close; the Monitor's first reply comes meanwhile.
                try raw.send(framed("Monitor", more: true) + framed("Connect", ["app": .string(app), "background": true]),
                             timeout: 2)
                if readsReply {
                    _ = try raw.receiveObject(timeout: 3)
                } else {
                    #expect(try Self.waitReadable(raw, milliseconds: 3000), "\(app): no Monitor reply within 3 s")
                }
                let unread = Self.unreadBytes(raw)
                #expect(readsReply || unread > 0, "\(app): nothing unread at the close, so it would not be a reset")
                raw.close()
                apps.append(app)
            }
        }
        // Every client closed: once the daemon has let go of each, each one's calls ran.
        let released = try Self.waitForConnections(daemon, baseline)
        #expect(released, "connections not released within 10 s")
        let counts = try daemon.sessionsByApp(timeout: 5)
        let missing = apps.filter { counts[$0] != 1 }
        let explained = missing.map { "\($0): \(counts[$0] ?? 0)" }
        #expect(missing.isEmpty,
                "Connects received before the close, without (or with several) sessions: \(explained)\n\(daemon.stderrTail())")
        try Self.expectHealthy(daemon, bystander, "after clients closed with a reply unread", watchdog: false)
    }

    /// The shape of randomClosePoints that can leave a reply unread while a Connect still waits
    /// in the daemon's input: two calls before it (a new client competes with the last one, so
    /// its calls come two per batch), and a close 0–3 ms after the send, without reading.
    @Test("2,000 clients send two calls and a Connect and close 0–3 ms later without reading: every Connect runs")
    func connectsBehindRepliesClosedUnread() throws {
        let count = 2000
        let seed = hostileSeed()
        var rng = SplitMix64(seed: seed)
        let daemon = try DaemonProcess.hostile()
        let bystander = try Bystander(daemon)
        let pool = try (0..<4).map { _ in
            try daemon.call("Connect", ["app": "org.example.pool", "background": true])["session"]?["id"]?.stringValue ?? "s1"
        }
        let baseline = try daemon.status()["connections"]?.intValue ?? -1
        var origin: [String: String] = [:]
        var resets = 0
        let deadline = Deadline(seconds: 120)
        for index in 0..<count where !deadline.hasPassed {
            let app = "org.example.behind\(index)"
            let plan = ClosePlan(calls: [.status(oneway: false),
                                         .transition(session: rng.pick(pool) ?? "s1", activate: rng.chance(50), oneway: false),
                                         .connect(app: app, oneway: rng.chance(50))],
                                 ending: .closeAfter(microseconds: rng.below(3000)))
            let outcome = try plan.perform(socket: daemon.socketPath)
            if outcome.unreadAtClose > 0 { resets += 1 }
            origin[app] = "#\(index): \(plan); \(outcome)"
        }
        #expect(origin.count == count, "seed \(seed): only \(origin.count) of \(count) clients within 120 s")
        let released = try Self.waitForConnections(daemon, baseline, seconds: 30)
        #expect(released, "seed \(seed): connections not released within 30 s")
        let counts = try daemon.sessionsByApp(timeout: 10)
        let missing = origin.keys.filter { counts[$0] != 1 }.sorted()
        let explained = missing.prefix(10).map { "\($0): \(counts[$0] ?? 0) sessions, from \(origin[$0] ?? "?")" }
        #expect(missing.isEmpty, """
                seed \(seed): \(missing.count) of \(origin.count) Connects have no (or several) sessions \
                (\(resets) clients closed with replies unread):
                \(explained.joined(separator: "\n"))
                """)
        try Self.expectHealthy(daemon, bystander, "seed \(seed): after clients closed with replies unread", watchdog: false)
    }

    /// Whether input waits on `raw`'s socket within `milliseconds`, without reading it.
    static func waitReadable(_ raw: RawConnection, milliseconds: Int32) throws -> Bool {
        var p = pollfd(fd: raw.fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, milliseconds)
        guard n >= 0 else { throw TestFailure("poll: \(errnoText())") }
        return n > 0
    }

    /// Bytes received by the kernel and not read (FIONREAD): more than 0 makes a close a reset.
    static func unreadBytes(_ raw: RawConnection) -> Int {
        var count: Int32 = 0
        return ioctl(raw.fd, UInt(FIONREAD), &count) == 0 ? Int(count) : -1
    }

    /// Waits until the daemon serves only `baseline` connections (the asking one included):
    /// the clients before have all been read to their end and let go. Bounded against a wedge.
    static func waitForConnections(_ daemon: DaemonProcess, _ baseline: Int64, seconds: Double = 10) throws -> Bool {
        try waitUntil(seconds: seconds) { try daemon.status()["connections"]?.intValue == baseline }
    }
}
