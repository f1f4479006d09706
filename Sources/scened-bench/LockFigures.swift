import Glibc
import Varlink

/// `scened-bench lock`: N attached apps with a foregroundActive scene each; each round logind
/// (python3-dbusmock's template on a private bus) locks the session of the daemon's user, and
/// each app notes when it read willResignActive and didEnterBackground; Unlock brings every
/// scene back before the next round. Side by side, in alternating rounds, a shell's
/// interruption (BeginInterruption/EndInterruption over Varlink, no bus in the path).
func lockFigures() throws {
    let appCount = option("--apps", 1000)
    let rounds = max(1, option("--rounds", 20))
    let durability = stringOption("--durability", "full")
    raiseOpenFiles(to: 2 * appCount + 256)
    signal(SIGPIPE, SIG_IGN)
    let uid = getuid()
    let user = getpwuid(uid).map { String(cString: $0.pointee.pw_name) } ?? "\(uid)"
    var bus: LogindBus?
    if let missing = LogindBus.missing {
        say("\n(lock part NOT RUN: \(missing); interruption part only, no lock figure)")
    } else {
        bus = try LogindBus(uid: uid, user: user)
    }
    defer { bus?.close() }
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    if let bus { daemon.environment = ["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"] }
    try daemon.start(config: lockConfig(durability: durability, apps: appCount, followLogin: bus != nil))
    defer { daemon.stopWithin(30) }
    say("\n== lock: \(appCount) attached apps, a foregroundActive scene each; \(rounds) rounds (Durability=\(durability), LogLevel=notice, LockedBackgroundSec=0) ==")
    if bus != nil {
        try awaitLoginFollowed(daemon)
        say("logind: python3-dbusmock's template on a private dbus-daemon (DBUS_SYSTEM_BUS_ADDRESS), one session of \(user) (uid \(uid), scened's own) on seat0")
        say("a lock: t0 just before the bench writes \"lock\" to a python3 helper holding one bus connection; it calls the session's Lock, the mock emits the Lock signal")
    }
    say("an interruption: t0 just before BeginInterruption is written to the daemon's socket")
    say("latency of an app = its read of the event − t0 (each app's connection stamped just before its read); every app's didEnterBackground answered at once")
    let fleet = try SystemFleet(socket: daemon.socket, count: appCount)
    try fleet.setUp(timeout: 120)
    usleep(200_000)
    if let bus { try busFloor(bus) }
    say(loadLine("load average before"))
    var lock = LockSamples(), interruption = LockSamples()
    for round in 1...rounds {
        var line = "  round \(round):"
        if let bus {
            let r = try lock.measure(daemon) { try lockRound(fleet, bus) }
            line += " lock (engine at \(ms(r.madeFirst)), Lock call \(ms(r.busCall))) → resigned \(r.resign.summary), background \(r.background.summary);"
        }
        let r = try interruption.measure(daemon) { try interruptionRound(fleet) }
        say(line + " interruption → resigned \(r.resign.summary)")
    }
    say(loadLine("load average after"))
    say("CPU per round, its undoing included (Unlock, EndInterruption): \(bus != nil ? "lock: daemon \(ms(lock.daemonCPU / Double(rounds))), bench \(ms(lock.benchCPU / Double(rounds))); " : "")interruption: daemon \(ms(interruption.daemonCPU / Double(rounds))), bench \(ms(interruption.benchCPU / Double(rounds))) (2 CPUs shared with the machine's other work)")
    say("across \(rounds) rounds (\(appCount) apps each, every app's receipt a sample):")
    if bus != nil {
        say("  lock → willResignActive read:   \(Spread(lock.resign).summary)")
        say("  lock → didEnterBackground read: \(Spread(lock.background).summary)")
        say("  lock, when the engine made a round's events (event time − t0): \(lock.madeLine)")
        say("  lock, the helper's Lock call (the mock replies after it emitted the signal): \(Spread(lock.busCalls).summary)")
    }
    say("  interruption → willResignActive read: \(Spread(interruption.resign).summary)")
    say("  interruption, when the engine made a round's events (event time − t0): \(interruption.madeLine)")
    if bus != nil {
        let p99 = Spread(lock.resign).p99
        say("  → lock, every scene resigned and delivered: p99 \(ms(p99)) vs target p99 ≤ 50 ms: \(p99 <= 0.050 ? "met" : "MISSED") (\(lock.roundsWithin) of \(rounds) rounds within it on their own)")
    }
    let p99 = Spread(interruption.resign).p99
    say("  → interruption: p99 \(ms(p99)) vs target p99 ≤ 50 ms: \(p99 <= 0.050 ? "met" : "MISSED") (\(interruption.roundsWithin) of \(rounds) rounds within it on their own)")
}

private func lockConfig(durability: String, apps: Int, followLogin: Bool) -> String {
    config(durability: durability) + """

        [Lifecycle]
        SuspendDelaySec=60s
        [System]
        FollowLogin=\(followLogin ? "yes" : "no")
        LockedBackgroundSec=0
        [Limits]
        MaxConnections=\(max(4096, 2 * apps + 64))
        MaxConnectionsPerUser=\(max(1024, 2 * apps + 64))
        """
}

/// Waits until GetStatus says logind is followed (the daemon read the sessions).
private func awaitLoginFollowed(_ daemon: BenchDaemon) throws {
    let client = try VarlinkClient(path: daemon.socket, timeout: .seconds(10))
    let deadline = now() + 20
    var state = "?"
    while now() < deadline {
        let status = try client.call("io.scened.Manager.GetStatus", [:])["status"]
        state = status?["system"]?["login"]?.stringValue ?? "?"
        if state == "followed" { return }
        usleep(20_000)
    }
    throw BenchError("scened does not follow the mock's logind: login \(state); see \(daemon.directory)/scened.log")
}

/// The helper's own round trip to the mock without a signal (Peer.Ping): the bus's share.
private func busFloor(_ bus: LogindBus) throws {
    var helper: [Double] = [], seen: [Double] = []
    for _ in 0..<50 {
        let t = now()
        try bus.send("ping")
        helper.append(try bus.reply())
        seen.append(now() - t)
    }
    say("the bus path alone (Peer.Ping to the mock, 50×): the helper's call \(Spread(helper).summary); the bench's write → the helper's answer \(Spread(seen).summary)")
}

struct RoundResult {
    var resign: Spread
    var background: Spread
    var madeFirst: Double
    var madeLast: Double
    /// The helper's Lock call, from its send to the mock's reply (sent after the signal).
    var busCall: Double = 0
}

/// Samples pooled over rounds.
struct LockSamples {
    var resign: [Double] = []
    var background: [Double] = []
    var madeFirst: [Double] = []
    var madeLast: [Double] = []
    var busCalls: [Double] = []
    /// Rounds whose own p99 was within 50 ms.
    var roundsWithin = 0

    /// CPU seconds the daemon and the bench used in these rounds.
    var daemonCPU = 0.0
    var benchCPU = 0.0

    /// When the engine made each round's first and last event, over the rounds.
    var madeLine: String {
        let first = Spread(madeFirst), last = Spread(madeLast)
        return "the first p50 \(ms(first.p50)), max \(ms(first.max)); the last p50 \(ms(last.p50)), max \(ms(last.max))"
    }

    /// Runs a round, keeps its samples and the CPU it cost.
    mutating func measure(_ daemon: BenchDaemon, _ round: () throws -> RoundResult) throws -> RoundResult {
        let d0 = daemon.cpuSeconds(), b0 = clientCPUSeconds()
        let r = try round()
        daemonCPU += daemon.cpuSeconds() - d0
        benchCPU += clientCPUSeconds() - b0
        resign += r.resign.values
        background += r.background.values
        madeFirst.append(r.madeFirst)
        madeLast.append(r.madeLast)
        busCalls.append(r.busCall)
        if r.resign.p99 <= 0.050 { roundsWithin += 1 }
        return r
    }
}

/// Lock, every scene resigned and in the background (answered); Unlock, every scene back.
private func lockRound(_ fleet: SystemFleet, _ bus: LogindBus) throws -> RoundResult {
    let n = fleet.count
    fleet.clearReceipts()
    let wall0 = wallMicroseconds()
    let t0 = now()
    try bus.send("lock")
    try fleet.pump(timeout: 30, "lock") {
        fleet.received(.willResignActive) == n && fleet.received(.didEnterBackground) == n && fleet.acksAnswered == fleet.acksSent
    }
    let busCall = try bus.reply()
    let made = fleet.madeSpan(.willResignActive, sinceWall: wall0)
    let result = RoundResult(resign: Spread(fleet.latencies(.willResignActive, since: t0)),
                             background: Spread(fleet.latencies(.didEnterBackground, since: t0)),
                             madeFirst: made.first, madeLast: made.last, busCall: busCall)
    fleet.clearReceipts()
    try bus.send("unlock")
    try fleet.pump(timeout: 30, "unlock") { fleet.received(.didBecomeActive) == n }
    _ = try bus.reply()
    return result
}

/// BeginInterruption, every scene resigned; EndInterruption, every scene active again.
private func interruptionRound(_ fleet: SystemFleet) throws -> RoundResult {
    let n = fleet.count
    fleet.clearReceipts()
    let replies = fleet.controlReplies.count
    let wall0 = wallMicroseconds()
    let t0 = now()
    try fleet.sendControl("io.scened.Manager.BeginInterruption", ["reason": "bench"])
    try fleet.pump(timeout: 30, "interruption") {
        fleet.received(.willResignActive) == n && fleet.controlReplies.count > replies
    }
    guard let token = fleet.controlReplies.last ?? nil, !token.isEmpty else { throw BenchError("BeginInterruption gave no token") }
    guard fleet.received(.didEnterBackground) == 0 else { throw BenchError("an interruption sent scenes to the background") }
    let made = fleet.madeSpan(.willResignActive, sinceWall: wall0)
    let result = RoundResult(resign: Spread(fleet.latencies(.willResignActive, since: t0)), background: Spread([]),
                             madeFirst: made.first, madeLast: made.last)
    fleet.clearReceipts()
    try fleet.sendControl("io.scened.Manager.EndInterruption", ["token": .string(token)])
    try fleet.pump(timeout: 30, "end of the interruption") {
        fleet.received(.didBecomeActive) == n && fleet.controlReplies.count > replies + 1
    }
    return result
}

/// Sorted durations and their p50, p99, max.
struct Spread {
    let values: [Double]
    init(_ values: [Double]) { self.values = values.sorted() }
    var p50: Double { percentile(values, 0.5) ?? 0 }
    var p99: Double { percentile(values, 0.99) ?? 0 }
    var max: Double { values.last ?? 0 }
    var summary: String { values.isEmpty ? "—" : "first \(ms(values[0])), p50 \(ms(p50)), p99 \(ms(p99)), max \(ms(max))" }
}
