import Glibc
import Varlink

/// `scened-bench apps`: a thousand apps attached over io.scened.App (this process's
/// connections, one epoll loop), (a) the time from commit to an app's receipt of its event at
/// a paced load, (b) transitions/s when every didEnterBackground is acknowledged by its app.
final class AppBench {
    enum Phase { case setup, latency, throughput }

    let apps: [String]
    var count: Int { apps.count }
    private(set) var streams: [FramedConnection] = []
    /// The system's side: Manager calls on the apps' sessions ((a) uses the first only).
    let drivers: [FramedConnection]
    var driver: FramedConnection { drivers[0] }
    /// The apps' own calls: each app's requests and answers on a second connection of its
    /// own (Attach holds the first), one call in flight at a time or a few, as an app makes them.
    /// the first).
    let answers: [FramedConnection]
    /// Apps whose answers connection has output queued.
    private var unflushed: [Int] = []
    private let poller: BenchPoller
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    var phase = Phase.setup
    private(set) var sessions: [String]
    private(set) var failures: [String] = []

    // Setup.
    private var messagesPerApp: [Int]
    private var sessionsKnown = 0

    // (a): per session, when the driver's replies and the app's events arrived (monotonic s).
    private var driven = IndexQueue()
    private var replyTimes: [[Double]]
    private var receiptTimes: [[Double]]
    /// Event time (the engine's) → receipt, µs.
    private var engineLag: [Int64] = []
    private(set) var transitionEvents = 0
    private var active: [Bool]
    private var deactivateFrames: [[UInt8]] = []
    private var activateFrames: [[UInt8]] = []

    // (b).
    private var backgroundFrames: [[UInt8]] = []
    private var inFlights: [Int]
    var inFlight: Int { inFlights.reduce(0, +) }
    private(set) var driverReplies = 0
    private(set) var driverErrors = 0
    private(set) var backgroundsSent = 0
    private(set) var backgroundEvents = 0
    private(set) var acksSent = 0
    private(set) var acksAnswered = 0
    private(set) var acksRefused = 0
    private var ackPrefixes: [[UInt8]] = []

    private static let willResignActive = Array("willResignActive".utf8)
    private static let didBecomeActive = Array("didBecomeActive".utf8)
    private static let didEnterBackground = Array("didEnterBackground".utf8)

    let socket: String

    init(socket: String, apps: [String], drivers driverCount: Int) throws {
        self.apps = apps
        self.socket = socket
        sessions = Array(repeating: "", count: apps.count)
        messagesPerApp = Array(repeating: 0, count: apps.count)
        replyTimes = Array(repeating: [], count: apps.count)
        receiptTimes = Array(repeating: [], count: apps.count)
        active = Array(repeating: true, count: apps.count)
        poller = try BenchPoller()
        drivers = try (0..<max(1, driverCount)).map { _ in try FramedConnection(socket: socket) }
        inFlights = Array(repeating: 0, count: max(1, driverCount))
        answers = try apps.map { _ in try FramedConnection(socket: socket) }
        for app in apps {
            let stream = try FramedConnection(socket: socket)
            try poller.add(stream.fd, token: streams.count)
            stream.queue(VarlinkCall(method: "io.scened.App.Attach", parameters: ["app": .string(app)], more: true).encoded())
            guard stream.flush() else { throw BenchError("the daemon closed an attach connection") }
            streams.append(stream)
            ackPrefixes.append(Array(#"{"method":"io.scened.App.Acknowledge","parameters":{"app":"\#(app)","seq":"#.utf8))
        }
        for (k, d) in drivers.enumerated() { try poller.add(d.fd, token: apps.count + k) }
        for (i, a) in answers.enumerated() { try poller.add(a.fd, token: apps.count + drivers.count + i) }
    }

    /// Every app attached (its attached reply and didFinishLaunching in).
    func awaitLaunched(timeout: Double) throws {
        try pump(until: { messagesPerApp.allSatisfy { $0 >= 2 } }, timeout: timeout, "attaching")
    }

    /// Each app asks for a new scene; it is foregroundActive once its four callbacks are in.
    func requestScenes(timeout: Double) throws {
        for i in apps.indices {
            answers[i].queue(appFrame("io.scened.App.RequestSceneSessionActivation", ["app": .string(apps[i])]))
            unflushed.append(i)
        }
        try flushAnswers()
        try pump(until: { sessionsKnown == count && messagesPerApp.allSatisfy { $0 >= 6 } },
                 timeout: timeout, "requesting scenes")
        for i in apps.indices {
            deactivateFrames.append(frame("Deactivate", ["session": .string(sessions[i])]))
            activateFrames.append(frame("Activate", ["session": .string(sessions[i])]))
            backgroundFrames.append(frame("Background", ["session": .string(sessions[i])]))
        }
    }

    /// (a) One round: `rate` calls/s for `seconds`, each Deactivate or Activate (one callback),
    /// round robin over the apps' sessions. Returns the achieved rate.
    func latencyRound(rate: Int, seconds: Double) throws -> Double {
        phase = .latency
        for i in apps.indices {
            replyTimes[i].removeAll(keepingCapacity: true)
            receiptTimes[i].removeAll(keepingCapacity: true)
        }
        engineLag.removeAll(keepingCapacity: true)
        transitionEvents = 0
        var sent = 0
        var next = 0
        let start = now()
        let end = start + seconds
        while true {
            let t = now()
            if t >= end { break }
            let due = Int((t - start) * Double(rate)) - sent
            if due > 0 {
                for _ in 0..<due {
                    let i = next
                    next = (next + 1) % count
                    driver.queue(active[i] ? deactivateFrames[i] : activateFrames[i])
                    active[i].toggle()
                    driven.append(i)
                }
                sent += due
                guard driver.flush() else { throw BenchError("the daemon closed the driving connection") }
            }
            try pumpOnce(milliseconds: 1)
        }
        let achieved = Double(sent) / (now() - start)
        try pump(until: { driven.isEmpty && transitionEvents == sent }, timeout: 20, "draining the paced load")
        return achieved
    }

    /// (a)'s samples of the last round: reply → receipt (s, signed) and engine time → receipt (µs).
    func latencySamples() -> (replyToReceipt: [Double], engineToReceipt: [Int64]) {
        var out: [Double] = []
        for i in apps.indices {
            for k in 0..<min(replyTimes[i].count, receiptTimes[i].count) { out.append(receiptTimes[i][k] - replyTimes[i][k]) }
        }
        return (out.sorted(), engineLag.sorted())
    }

    /// Brings every session back to foregroundActive after (a).
    func activateAll(timeout: Double) throws {
        phase = .latency
        transitionEvents = 0
        var sent = 0
        for i in apps.indices where !active[i] {
            driver.queue(activateFrames[i])
            active[i] = true
            driven.append(i)
            sent += 1
        }
        guard driver.flush() else { throw BenchError("the daemon closed the driving connection") }
        try pump(until: { driven.isEmpty && transitionEvents == sent }, timeout: timeout, "activating")
    }

    /// (b) One round: Background ↔ Activate (home, then back: willResignActive,
    /// didEnterBackground; willEnterForeground, didBecomeActive) with `window` calls in flight
    /// on each of `used` driving connections (each on its share of the sessions) for
    /// `seconds`, each didEnterBackground acknowledged by its app as it arrives. `bounded`
    /// false: Deactivate ↔ Activate instead, nothing to acknowledge. Returns the transitions
    /// and acknowledgements answered within the window, and its length.
    func throughputRound(window: Int, seconds: Double, used: Int = 1, bounded: Bool = true) throws
        -> (transitions: Int, acks: Int, seconds: Double) {
        phase = .throughput
        driverReplies = 0
        let acksBefore = acksAnswered
        let used = min(used, drivers.count)
        let scripts = (0..<used).map { d in
            stride(from: d, to: count, by: used).flatMap { i in
                [bounded ? backgroundFrames[i] : deactivateFrames[i], activateFrames[i]]
            }
        }
        var cursors = Array(repeating: 0, count: used)
        func queue(_ d: Int) {
            drivers[d].queue(scripts[d][cursors[d]])
            if cursors[d] % 2 == 0 && bounded { backgroundsSent += 1 }
            cursors[d] = (cursors[d] + 1) % scripts[d].count
            inFlights[d] += 1
        }
        let start = now()
        let end = start + seconds
        while now() < end {
            for d in 0..<used {
                while inFlights[d] < window { queue(d) }
                guard drivers[d].flush() else { throw BenchError("the daemon closed a driving connection") }
            }
            try pumpOnce(milliseconds: 1)
        }
        let length = now() - start
        let inWindow = (driverReplies, acksAnswered - acksBefore)
        // Every session ends foregroundActive, as the next round and (a) expect: a session left
        // between its two calls gets the second.
        for d in 0..<used where cursors[d] % 2 == 1 { queue(d) }
        for d in 0..<used { _ = drivers[d].flush() }
        try pump(until: {
            for d in 0..<used { _ = drivers[d].flush() }
            return inFlight == 0 && backgroundEvents == backgroundsSent && acksAnswered == acksSent
        }, timeout: 20, "draining the load")
        return (inWindow.0, inWindow.1, length)
    }

    // MARK: - The loop

    private func pump(until done: () -> Bool, timeout: Double, _ what: String) throws {
        let deadline = now() + timeout
        while !done() {
            guard now() < deadline else {
                throw BenchError("\(what): not done within \(timeout) s (in flight \(inFlight), driven \(driven.count), acks \(acksAnswered)/\(acksSent), backgrounds \(backgroundEvents)/\(backgroundsSent)); \(daemonState())")
            }
            try pumpOnce(milliseconds: 5)
        }
    }

    /// What the daemon says of itself, for a failure's message: whether it answers, and
    /// whether its loop goes on.
    private func daemonState() -> String {
        func status() -> String {
            guard let client = try? VarlinkClient(path: socket, timeout: .seconds(5)),
                  let s = (try? client.call("io.scened.Manager.GetStatus", [:]))?["status"] else { return "no answer to GetStatus" }
            let loop = s["loop"]
            return "passes \(loop?["passes"]?.intValue ?? -1), calls \(loop?["calls"]?.intValue ?? -1), commits \(loop?["commits"]?.intValue ?? -1), connections \(s["connections"]?.intValue ?? -1), nextSeq \(s["nextSeq"]?.intValue ?? -1)"
        }
        let first = status()
        usleep(500_000)
        return "the daemon: \(first); 0.5 s later: \(status())"
    }

    private func pumpOnce(milliseconds: Int32) throws {
        var ready: [Int] = []
        poller.wait(milliseconds: milliseconds) { ready.append($0) }
        guard !ready.isEmpty else { return }
        // One arrival time for everything this wait returned: it was all there by now.
        let t = now()
        let wall = wallMicroseconds()
        for token in ready {
            let open: Bool
            if token < count {
                open = streams[token].read(&scratch) { m in streamMessage(token, m, t, wall) }
            } else if token < count + drivers.count {
                open = drivers[token - count].read(&scratch) { m in driverReply(token - count, m, t) }
            } else {
                let i = token - count - drivers.count
                open = answers[i].read(&scratch) { m in answerReply(i, m) }
            }
            if !open { failures.append(token < count ? "\(apps[token])'s attach connection closed" : "a call connection closed") }
        }
        try flushAnswers()
        if let first = failures.first { throw BenchError("\(first) (\(failures.count) failures)") }
    }

    private func streamMessage(_ i: Int, _ m: UnsafeRawBufferPointer, _ t: Double, _ wall: Int64) {
        if Scan.isError(m) {
            failures.append("\(apps[i])'s Attach ended: \(String(decoding: m.prefix(300), as: UTF8.self))")
            return
        }
        messagesPerApp[i] += 1
        switch phase {
        case .setup:
            break
        case .latency:
            if Scan.named(Self.willResignActive, in: m) || Scan.named(Self.didBecomeActive, in: m) {
                receiptTimes[i].append(t)
                transitionEvents += 1
                if let made = Scan.integer(Scan.time, in: m) { engineLag.append(wall - made) }
            } else {
                failures.append("\(apps[i]) got an unexpected event: \(String(decoding: m.prefix(300), as: UTF8.self))")
            }
        case .throughput:
            if Scan.named(Self.didEnterBackground, in: m) {
                backgroundEvents += 1
                guard let seq = Scan.integer(Scan.seq, in: m) else {
                    failures.append("a didEnterBackground without seq")
                    return
                }
                answers[i].queue(ackPrefixes[i] + Array("\(seq)}}".utf8) + [0])
                unflushed.append(i)
                acksSent += 1
            }
        }
    }

    private func driverReply(_ d: Int, _ m: UnsafeRawBufferPointer, _ t: Double) {
        if Scan.isError(m) {
            driverErrors += 1
            failures.append("a driving call failed: \(String(decoding: m.prefix(300), as: UTF8.self))")
        }
        switch phase {
        case .setup:
            break
        case .latency:
            guard let i = driven.popFirst() else { failures.append("a reply nobody asked for"); return }
            replyTimes[i].append(t)
        case .throughput:
            inFlights[d] -= 1
            driverReplies += 1
        }
    }

    /// Sends what the apps queued (their answers as they read their events).
    private func flushAnswers() throws {
        for i in unflushed where answers[i].hasOutput {
            guard answers[i].flush() else { throw BenchError("the daemon closed \(apps[i])'s call connection") }
            if answers[i].hasOutput { failures.append("\(apps[i])'s call connection is full") }
        }
        unflushed.removeAll(keepingCapacity: true)
    }

    private func answerReply(_ i: Int, _ m: UnsafeRawBufferPointer) {
        if sessions[i].isEmpty {
            sessionsKnown += 1
            guard !Scan.isError(m), let session = Scan.string(Scan.session, in: m) else {
                failures.append("RequestSceneSessionActivation for \(apps[i]) failed: \(String(decoding: m.prefix(300), as: UTF8.self))")
                return
            }
            sessions[i] = session
            return
        }
        acksAnswered += 1
        if Scan.isError(m) {
            acksRefused += 1
            failures.append("an Acknowledge was refused: \(String(decoding: m.prefix(300), as: UTF8.self))")
        }
    }
}


func appFigures() throws {
    let appCount = option("--apps", 1000)
    let rate = option("--rate", 10_000)
    let rounds = max(1, option("--rounds", 3))
    let durability = stringOption("--durability", "off")
    raiseOpenFiles(to: 2 * appCount + 256)
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    try daemon.start(config: config(durability: durability) + """

        [Lifecycle]
        SuspendDelaySec=60s
        [Limits]
        MaxConnections=\(max(4096, 2 * appCount + 64))
        MaxConnectionsPerUser=\(max(1024, 2 * appCount + 64))
        """)
    defer { daemon.stopWithin(10) }
    say("\n== apps: \(appCount) apps attached over io.scened.App (Durability=\(durability), LogLevel=notice) ==")
    say("(the apps are this process's connections, one thread on an epoll set; each app has its attach stream and a connection for its calls)")
    usleep(300_000)
    let rssIdle = daemon.residentBytes()
    let t0 = now()
    let bench = try AppBench(socket: daemon.socket, apps: (0..<appCount).map { "com.example.bench\($0)" }, drivers: 8)
    try bench.awaitLaunched(timeout: 60)
    let attachTime = now() - t0
    let t1 = now()
    try bench.requestScenes(timeout: 60)
    let sceneTime = now() - t1
    usleep(300_000)
    say("attached \(appCount) apps in \(ms(attachTime)) (each: Attach, didFinishLaunching); a scene each in \(ms(sceneTime)) (RequestSceneSessionActivation, 4 callbacks)")
    say("RSS idle: \(mb(rssIdle)); with \(appCount) apps attached, a live scene each: \(mb(daemon.residentBytes()))")

    try commitToReceipt(bench, daemon, rate: rate, rounds: rounds, appCount: appCount)
    try bench.activateAll(timeout: 20)
    try acknowledgedTransitions(bench, daemon, rounds: rounds)
    say("RSS after: \(mb(daemon.residentBytes())), peak \(mb(daemon.peakResidentBytes())); every app still attached (no stream ended, no answer refused)")
}

/// (a) How long an event takes from its commit to the app that reads it, paced, in rounds.
private func commitToReceipt(_ bench: AppBench, _ daemon: BenchDaemon, rate: Int, rounds: Int, appCount: Int) throws {
    say("(a) commit → app receipt, \(rate) transitions/s paced over \(Int(seconds)) s, Deactivate ↔ Activate round robin over the \(appCount) sessions (one callback each), 1 driving connection:")
    say("    reply → receipt: from the driving call's reply (sent after the commit: the commit is earlier, so this is a lower bound) to the app's read of its event; negative when the event came first")
    say("    time → receipt: from the event's time (the engine made it, before its batch committed: an upper bound) to the app's read")
    var p50s: [Double] = [], p99s: [Double] = [], e50s: [Double] = [], e99s: [Double] = []
    for round in 1...rounds {
        let cpu0 = daemon.cpuSeconds()
        let c0 = clientCPUSeconds()
        let r0 = now()
        let achieved = try bench.latencyRound(rate: rate, seconds: seconds)
        let elapsed = now() - r0
        let (lat, lag) = bench.latencySamples()
        let p50 = percentile(lat, 0.5) ?? 0, p99 = percentile(lat, 0.99) ?? 0
        let e50 = Double(percentile(lag, 0.5) ?? 0) / 1e6, e99 = Double(percentile(lag, 0.99) ?? 0) / 1e6
        let before = lat.filter { $0 < 0 }.count
        p50s.append(p50); p99s.append(p99); e50s.append(e50); e99s.append(e99)
        say("  round \(round): driven \(Int(achieved.rounded())) /s, \(lat.count) events; reply → receipt p50 \(us(p50)), p99 \(us(p99)), max \(us(lat.last ?? 0)) (event first in \(lat.isEmpty ? 0 : before * 100 / lat.count) %); time → receipt p50 \(us(e50)), p99 \(us(e99)), max \(us(Double(lag.last ?? 0) / 1e6)); CPU daemon \(Int(((daemon.cpuSeconds() - cpu0) / elapsed * 100).rounded()))%, client \(Int(((clientCPUSeconds() - c0) / elapsed * 100).rounded()))%")
    }
    say("  median of \(rounds): reply → receipt p50 \(us(median(p50s))), p99 \(us(median(p99s))); time → receipt p50 \(us(median(e50s))), p99 \(us(median(e99s)))   (target: p99 ≤ 1 ms)")
}

/// (b) Transitions whose callbacks the apps acknowledge, on 1 and 8 driving connections, then
/// unbounded ones for reference.
private func acknowledgedTransitions(_ bench: AppBench, _ daemon: BenchDaemon, rounds: Int) throws {
    let window = option("--window", 512)
    say("(b) acknowledged transitions: Background ↔ Activate over \(Int(seconds)) s, \(window) calls in flight in all; every didEnterBackground acknowledged by its app as it arrives (each on its own call connection).")
    say("    The apps are interactive clients (a call or a few in flight), so while they answer, each driving connection is held to 8 calls per batch (VarlinkServer+Contention): more connections, more calls per batch.")
    for used in [1, 8] {
        var rates: [Double] = []
        for round in 1...rounds {
            let loop0 = loopCounters(daemon)
            let cpu0 = daemon.cpuSeconds()
            let c0 = clientCPUSeconds()
            let r0 = now()
            let (n, acks, s) = try bench.throughputRound(window: window / used, seconds: seconds, used: used)
            let elapsed = now() - r0
            let loop1 = loopCounters(daemon)
            rates.append(Double(n) / s)
            say("  \(used) driving connection\(used == 1 ? "" : "s"), round \(round): \(perSecond(n, s)) transitions/s, \(perSecond(acks, s)) acknowledgements/s answered, \(bench.acksRefused) refused, \(bench.driverErrors) failed calls; \(batching(loop0, loop1)); CPU daemon \(Int(((daemon.cpuSeconds() - cpu0) / elapsed * 100).rounded()))%, client \(Int(((clientCPUSeconds() - c0) / elapsed * 100).rounded()))%")
        }
        say("  \(used) driving connection\(used == 1 ? "" : "s"), median of \(rounds): \(Int(median(rates).rounded())) acknowledged transitions/s   (target: ≥ 50,000/s)")
    }
    for used in [1, 8] {
        let loop0 = loopCounters(daemon)
        let cpu0 = daemon.cpuSeconds()
        let r0 = now()
        let (n, _, s) = try bench.throughputRound(window: window / used, seconds: seconds, used: used, bounded: false)
        let loop1 = loopCounters(daemon)
        say("  for reference, \(used) driving connection\(used == 1 ? "" : "s") without a bounded callback (Deactivate ↔ Activate, nothing to acknowledge, no interactive client): \(perSecond(n, s)) transitions/s, \(batching(loop0, loop1)); CPU daemon \(Int(((daemon.cpuSeconds() - cpu0) / (now() - r0) * 100).rounded()))%")
    }
}
