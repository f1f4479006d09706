import Glibc
import Varlink

/// `scened-bench stop`: SIGTERM to a scened with N attached apps, each with a foregroundActive
/// scene and answering at once, until the daemon's exit; then a start on the same store proves
/// every app's restoration data was committed. Beside it, in the same run and alternating, the
/// stop of that restarted daemon (the same sessions, no app attached) and of an empty one.
func stopFigures() throws {
    let appCount = option("--apps", 1000)
    let repeats = max(1, option("--repeats", 3))
    let durability = stringOption("--durability", "full")
    raiseOpenFiles(to: 2 * appCount + 256)
    say("\n== stop: SIGTERM → exit (waitpid) with \(appCount) attached apps, a foregroundActive scene each (Durability=\(durability), LogLevel=notice, FollowLogin=no) ==")
    say("each app answers didEnterBackground at once with restoration data {\"app\": i}; the apps are this process's connections, one thread on an epoll set")
    say("beside it: the same daemon restarted on that store (\(appCount) sessions, no app attached), and an empty one; \(repeats)× each, alternating")
    say(loadLine("load average before"))
    var withApps: [Double] = [], sameSessions: [Double] = [], empty: [Double] = []
    for round in 1...repeats {
        let dir = makeDirectory()
        defer { removeTree(dir) }
        let daemon = BenchDaemon(binary: binary, directory: dir)
        defer { daemon.stopWithin(10) }
        let conf = stopConfig(durability: durability, apps: appCount)
        try daemon.start(config: conf)
        let run = try stopWithApps(daemon, count: appCount)
        withApps.append(run.seconds)
        say("  round \(round), \(appCount) apps: \(ms(run.seconds)); last didEnterBackground read at \(ms(run.lastBackground)), last answer sent at \(ms(run.lastAnswer)), \(run.answers) answers (\(run.refused) refused); attach streams ended from \(ms(run.closes.first)) to \(ms(run.closes.last))")

        try daemon.start(config: conf)
        let saved = try savedRestorations(daemon, sessions: run.sessions)
        say("  round \(round): restarted on the same store: \(saved) of \(appCount) saved")
        guard saved == appCount else {
            throw BenchError("STATE LOST: only \(saved) of \(appCount) sessions have their restoration data after the stop (store kept in \(keepStore(dir)))")
        }
        let same = try timedStop(daemon)
        sameSessions.append(same)
        say("  round \(round), no apps, \(appCount) sessions stored: \(ms(same))")

        let emptyDir = makeDirectory()
        defer { removeTree(emptyDir) }
        let bare = BenchDaemon(binary: binary, directory: emptyDir)
        defer { bare.stopWithin(10) }
        try bare.start(config: conf)
        let e = try timedStop(bare)
        empty.append(e)
        say("  round \(round), no apps, empty store: \(ms(e))")
    }
    say(loadLine("load average after"))
    say("stop with \(appCount) apps: median \(spreadLine(withApps))")
    say("stop with no apps, \(appCount) sessions stored: median \(spreadLine(sameSessions)); ratio \(ratio(withApps, sameSessions))")
    say("stop with no apps, empty store: median \(spreadLine(empty)); ratio \(ratio(withApps, empty))")
    let met = median(withApps) <= 1.0 ? "met" : "MISSED"
    say("  → \(appCount) apps, every app's state committed: \(ms(median(withApps))) vs target ≤ 1 s: \(met)")
}

private func stopConfig(durability: String, apps: Int) -> String {
    config(durability: durability) + """

        [Lifecycle]
        SuspendDelaySec=60s
        [System]
        FollowLogin=no
        [Limits]
        MaxConnections=\(max(4096, 2 * apps + 64))
        MaxConnectionsPerUser=\(max(1024, 2 * apps + 64))
        """
}

struct StopRun {
    var seconds: Double
    var lastBackground: Double
    var lastAnswer: Double
    var answers: Int
    var refused: Int
    var closes: (first: Double, last: Double)
    var sessions: [String]
}

/// Attaches the apps, brings up their scenes, then SIGTERM; the apps answer while the daemon
/// stops; the time runs to the daemon's reaping.
private func stopWithApps(_ daemon: BenchDaemon, count: Int) throws -> StopRun {
    let fleet = try SystemFleet(socket: daemon.socket, count: count)
    do { try fleet.setUp(timeout: 120) } catch {
        daemon.stopWithin(10)
        throw error
    }
    usleep(200_000)
    fleet.clearReceipts()
    fleet.expectClosing = true
    let t0 = now()
    kill(daemon.pid, SIGTERM)
    var exited = false
    let deadline = t0 + 60
    while !exited {
        try fleet.pumpOnce(milliseconds: fleet.closedStreams == count ? 0 : 1)
        if fleet.closedStreams == count { usleep(50) }
        exited = daemon.reapIfExited()
        if !exited && now() > deadline {
            daemon.stopWithin(1)
            throw BenchError("scened did not exit within 60 s of SIGTERM")
        }
    }
    let t1 = now()
    let background = fleet.latencies(.didEnterBackground, since: t0)
    guard background.count == count else {
        throw BenchError("only \(background.count) of \(count) apps got didEnterBackground before the exit")
    }
    return StopRun(seconds: t1 - t0, lastBackground: background.last ?? 0, lastAnswer: fleet.lastAckSent - t0,
                   answers: fleet.acksSent, refused: fleet.acksRefused,
                   closes: (fleet.firstClose - t0, fleet.lastClose - t0), sessions: fleet.sessions)
}

/// SIGTERM to a daemon with nothing attached; the time to its reaping.
private func timedStop(_ daemon: BenchDaemon) throws -> Double {
    let t0 = now()
    kill(daemon.pid, SIGTERM)
    while !daemon.reapIfExited() {
        if now() - t0 > 60 {
            daemon.stopWithin(1)
            throw BenchError("scened did not exit within 60 s of SIGTERM")
        }
        usleep(50)
    }
    return now() - t0
}

/// How many of `sessions` (session i of app i) have restoration data `{"app": i}` (GetSession).
private func savedRestorations(_ daemon: BenchDaemon, sessions: [String]) throws -> Int {
    let client = try VarlinkClient(path: daemon.socket, timeout: .seconds(10))
    var saved = 0
    var firstMiss: String?
    for (i, id) in sessions.enumerated() {
        let reply = try client.call("io.scened.Manager.GetSession", ["session": .string(id)])
        let value = reply["session"]?["restoration"]?["json"]?["app"]?.intValue
        if value == Int64(i) {
            saved += 1
        } else if firstMiss == nil {
            firstMiss = "\(id): restoration \(reply["session"]?["restoration"].map { "\($0)" } ?? "none")"
        }
    }
    if let firstMiss { say("  first session without its data: \(firstMiss)") }
    return saved
}

/// A failed run's store, moved out of the directory the bench removes.
private func keepStore(_ dir: String) -> String {
    let kept = dir + "-kept"
    rename(dir, kept)
    return kept
}

func loadLine(_ label: String) -> String {
    "\(label): \((try? readFile("/proc/loadavg")) ?? "?")".trimmingSuffixNewline
}

/// "median (min – max)" of durations.
func spreadLine(_ values: [Double]) -> String {
    let s = values.sorted()
    return "\(ms(median(s))) (range \(ms(s.first ?? 0)) – \(ms(s.last ?? 0)))"
}

func ratio(_ a: [Double], _ b: [Double]) -> String {
    let d = median(b)
    return d > 0 ? "\((median(a) / d * 10).rounded() / 10)×" : "—"
}
