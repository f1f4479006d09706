import Glibc
import Varlink

/// A well-behaved client's throughput alone and beside an abusive one, side by side in one run,
/// each load on a fresh daemon (a Connect flood leaves many sessions behind).
func fairnessFigures() throws {
    say("\n== fairness: a well-behaved client beside an abusive one (Durability=off, LogLevel=notice; target: ≥ 0.50 of its rate alone) ==")
    say("well-behaved, sequential: one connection, one call in flight (the next sent when the reply is in), Activate then Background on its own session")
    say("well-behaved, windowed: the same with 16 calls in flight (pipelined, in order)")
    say("each rate over \(seconds) s; the abusive client starts 0.3 s before and runs throughout")
    say("alone is measured before and after (0.5 s after the abuser stops), and beside is compared with their mean,")
    say("so that the machine's drift between the measurements cancels (its speed here varies up to 3x over seconds)")
    let loads: [(name: String, start: (BenchDaemon, String, Shared<AbuseCounts>, Double) throws -> BenchThread)] = [
        ("(a) a oneway flood of Activate/Background on its own session, never reading", { daemon, session, counts, _ in
            onewayFlood(daemon.socket, [onewayFrame("Activate", ["session": .string(session)]),
                                        onewayFrame("Background", ["session": .string(session)])], counts: counts)
        }),
        ("(b) a oneway flood of Connect (8 apps, background), never reading", { daemon, _, counts, _ in
            onewayFlood(daemon.socket, (0..<8).map { onewayFrame("Connect", ["app": .string("com.example.flood\($0)"), "background": true]) },
                        counts: counts)
        }),
        ("(c) 1,024 calls in flight (Activate/Background on its own session), reading every reply", { daemon, session, counts, duration in
            pipelined(daemon.socket, [frame("Activate", ["session": .string(session)]), frame("Background", ["session": .string(session)])],
                      window: 1024, duration: duration, counts: counts)
        }),
    ]
    var worst = Double.infinity
    for load in loads {
        let dir = makeDirectory()
        defer { removeTree(dir) }
        let daemon = BenchDaemon(binary: binary, directory: dir)
        try daemon.start(config: config(durability: "off"))
        defer { daemon.stopWithin(10) }
        let sequential = try SequentialClient(socket: daemon.socket, app: "com.example.polite")
        let windowSession = try SequentialClient(socket: daemon.socket, app: "com.example.windowed").session
        let abuserSession = try SequentialClient(socket: daemon.socket, app: "com.example.abuser").session
        let windowScript = [frame("Activate", ["session": .string(windowSession)]), frame("Background", ["session": .string(windowSession)])]

        _ = try sequential.rate(over: 0.3)
        let aloneSequential = try sequential.rate(over: seconds)
        let aloneWindowed = try windowedRate(daemon, windowScript)

        let counts = Shared(AbuseCounts())
        let cpu0 = daemon.cpuSeconds()
        let t0 = now()
        let abuser = try load.start(daemon, abuserSession, counts, 0.3 + 2 * seconds + 1)
        usleep(300_000)
        let besideSequential = try sequential.rate(over: seconds)
        let besideWindowed = try windowedRate(daemon, windowScript)
        abuser.stop()
        let daemonCPU = Int(((daemon.cpuSeconds() - cpu0) / (now() - t0) * 100).rounded())
        let abuse = counts.value
        usleep(500_000)
        let afterSequential = try sequential.rate(over: seconds)
        let afterWindowed = try windowedRate(daemon, windowScript)

        say(load.name + ":")
        for (label, before, beside, after, stalled) in [
            ("sequential", aloneSequential.perSecond, besideSequential.perSecond, afterSequential.perSecond, besideSequential.stalled),
            ("windowed  ", aloneWindowed.perSecond, besideWindowed.perSecond, afterWindowed.perSecond, besideWindowed.stalled),
        ] {
            let alone = (before + after) / 2
            let ratio = beside / max(alone, 1)
            worst = min(worst, ratio)
            say("    \(label): alone \(Int(before.rounded())) then \(Int(after.rounded())) calls/s, beside it \(Int(beside.rounded())) calls/s: "
                + "\(twoDigits(ratio)) of alone (target ≥ 0.50) \(ratio >= 0.5 ? "ok" : "MISSED")\(stalled ? "; a call went unanswered for 5 s" : "")")
        }
        say("    the abusive client: \(abuse.calls) calls\(abuse.failure.map { "; stopped: \($0)" } ?? ""); daemon CPU meanwhile \(daemonCPU)%")
    }
    say("fairness: worst ratio \(twoDigits(worst)) (target ≥ 0.50)")
}

/// The windowed well-behaved client's rate over `seconds`.
func windowedRate(_ daemon: BenchDaemon, _ script: [[UInt8]]) throws -> (perSecond: Double, stalled: Bool) {
    let load = try PipelinedLoad(socket: daemon.socket, scripts: [script], window: 16)
    let r = load.run(duration: seconds)
    if r.errors > 0, let e = r.firstError { throw BenchError("the windowed client got an error: \(e)") }
    // run() goes on past `seconds` to collect what is in flight (up to 10 s when stuck).
    return (Double(r.replies) / max(r.seconds, seconds), r.seconds > seconds + 5)
}

func onewayFrame(_ method: String, _ parameters: JSONObject) -> [UInt8] {
    VarlinkCall(method: "io.scened.Manager." + method, parameters: parameters, oneway: true).encoded()
}

func twoDigits(_ value: Double) -> String {
    let hundredths = Int((value * 100).rounded())
    return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
}
