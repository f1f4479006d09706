import Glibc
import Varlink

/// A well-behaved client's throughput alone and beside an abusive one, side by side in one run,
/// each load on a fresh daemon (a Connect flood leaves many sessions behind).
func fairnessFigures() throws {
    say("\n== fairness: a well-behaved client beside an abusive one (Durability=off, LogLevel=notice; target: ≥ 0.50 of its rate alone) ==")
    say("well-behaved, sequential: one connection, one call in flight (the next sent when the reply is in), Activate then Background on its own session")
    say("well-behaved, windowed: the same with 16 calls in flight (pipelined, in order)")
    say("alternating: alone, beside, alone, … (\(cycles) times beside, each \(twoDigits(window)) s; the abusive client starts 0.3 s before each")
    say("beside window and stops after it, 0.5 s before the next alone one); each beside rate is compared with the mean of")
    say("the alone rates either side of it, so that the machine's drift cancels (its speed here varies up to 3x over seconds);")
    say("the figure is the median of those ratios")
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
    // --loads ac, --clients w: a part of the run, to look into one case.
    let loadFilter = stringOption("--loads", "abc"), clientFilter = stringOption("--clients", "sw")
    for (index, load) in loads.enumerated() where loadFilter.contains(["a", "b", "c"][index]) {
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

        say(load.name + ":")
        var abusiveCalls = 0
        var cpuSeconds = 0.0, abusedSeconds = 0.0
        for (label, rate) in [("sequential", { try sequential.rate(over: window) }),
                              ("windowed  ", { try windowedRate(daemon, windowScript, over: window) })] as [(String, () throws -> (perSecond: Double, stalled: Bool))]
            where clientFilter.contains(label.first!) {
            var alone = [try rate().perSecond]
            var beside: [Double] = []
            var stalled = false
            for _ in 0..<cycles {
                let counts = Shared(AbuseCounts())
                let cpu0 = daemon.cpuSeconds(), t0 = now()
                let abuser = try load.start(daemon, abuserSession, counts, 0.3 + window + 0.2)
                usleep(300_000)
                let loaded = try rate()
                abuser.stop()
                cpuSeconds += daemon.cpuSeconds() - cpu0
                abusedSeconds += now() - t0
                abusiveCalls += counts.value.calls
                if let failure = counts.value.failure, !failure.isEmpty, counts.value.calls == 0 {
                    say("    the abusive client failed: \(failure)")
                }
                beside.append(loaded.perSecond)
                stalled = stalled || loaded.stalled
                usleep(500_000)
                alone.append(try rate().perSecond)
            }
            let ratios = beside.indices.map { beside[$0] / max((alone[$0] + alone[$0 + 1]) / 2, 1) }.sorted()
            let ratio = ratios[ratios.count / 2]
            worst = min(worst, ratio)
            say("    \(label): alone \(alone.map { String(Int($0.rounded())) }.joined(separator: ", ")) calls/s; "
                + "beside \(beside.map { String(Int($0.rounded())) }.joined(separator: ", ")); ratios \(ratios.map(twoDigits).joined(separator: ", ")): "
                + "median \(twoDigits(ratio)) of alone (target ≥ 0.50) \(ratio >= 0.5 ? "ok" : "MISSED")\(stalled ? "; a call went unanswered for 5 s" : "")")
        }
        say("    the abusive client: \(abusiveCalls) calls; daemon CPU while it ran \(Int((cpuSeconds / max(abusedSeconds, 0.001) * 100).rounded()))%")
    }
    say("fairness: worst median ratio \(twoDigits(worst)) (target ≥ 0.50)")
}

/// Beside windows per measure, and their length (s).
let cycles = 5
let window = 1.0

/// The windowed well-behaved client's rate over `seconds`.
func windowedRate(_ daemon: BenchDaemon, _ script: [[UInt8]], over seconds: Double) throws -> (perSecond: Double, stalled: Bool) {
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
