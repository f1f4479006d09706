import SceneCore
import SceneReplay
import Varlink

extension Verb {
    static let pressureChart = Verb(
        "pressure chart", section: .daemon, synopsis: "--svg FILE [--since SEQ | --all]",
        summary: "Draw the live daemon's latest pressure episode: usage against budget, reclaim actions marked",
        details: """
            The chart 'scenectl simulate --svg' draws, from the daemon's own history instead of \
            a trace: usage against the budget and its watermarks, each reclaim action marked \
            and named (warning ●, disconnect ▼, terminate ✕; suspensions and discards are counted \
            in the legend). It shows the latest episode (a time at a level above normal, or with \
            reclaim actions), shaded, with a margin before and after; an episode still going on \
            runs to now. The bytes axis fits the usage shown: a budget far above it is named at \
            the top rather than drawn. --all draws everything the daemon keeps (the last 2,048 \
            changes of usage, budget or level and the last 1,024 actions since it started); \
            --since draws everything from an event's sequence number (the SEQ column of \
            'scenectl monitor' and 'scenectl logs'). Prints what it drew.
            """,
        options: [OptionSpec("svg", value: "FILE", "Write the chart to FILE (required)"),
                  OptionSpec("since", value: "SEQ", "Draw everything from this event sequence number"),
                  OptionSpec("all", "Draw the whole history, not only the latest episode")],
        run: { invocation in
            guard let path = invocation.options.value("svg") else {
                throw ControlError.usage("'pressure chart' needs --svg FILE (see 'scenectl pressure chart --help')")
            }
            var parameters: JSONObject = [:]
            if let since = invocation.options.value("since") { parameters["since"] = .int(try Check.count(since, option: "--since")) }
            if parameters["since"] != nil, invocation.options.flag("all") {
                throw ControlError.usage("'pressure chart' takes --since or --all, not both")
            }
            let reply = try invocation.call("GetPressureHistory", parameters)
            let whole = parameters["since"] != nil || invocation.options.flag("all")
            let chart = PressureChart(reply, now: Int64(clamping: invocation.context.now()), window: whole ? .all : .latestEpisode)
            guard !chart.result.points.isEmpty else {
                throw ControlError(.failure, "no pressure history\(parameters["since"] == nil ? "" : " from that sequence number") yet")
            }
            do {
                try SimulateFiles.write(path, chart.svg)
            } catch {
                throw ControlError(.failure, "cannot write \(path): \(error)")
            }
            if invocation.global.json {
                return try invocation.json(["svg": .string(path), "samples": .int(Int64(chart.sampleCount)),
                                            "actions": .int(Int64(chart.result.marks.count))])
            }
            if !invocation.global.quiet { try invocation.write(chart.summary(path: path)) }
        })
}

/// A GetPressureHistory reply as the replayer's timeline, so that SVGChart draws it as it
/// draws a simulation. Times are made relative to the first sample; the periods at a level
/// above normal are the episodes.
struct PressureChart {
    var result = ReplayResult(metrics: ReplayMetrics(policy: .ours))
    var pressure: [ClosedRange<Int64>] = []
    var watermarks: (low: Double, high: Double)
    var window: ChartWindow
    var firstSeq: Int64 = 0
    /// From the first sample to the last sample or action.
    var historyMilliseconds: Int64 = 0
    /// To now: what the chart shows at most.
    var spanMilliseconds: Int64 = 0
    /// The daemon's samples (the points may end with one more, carrying the last to the end).
    var sampleCount = 0

    /// - Parameter now: microseconds since the epoch: the chart runs to it.
    init(_ reply: JSONObject, now: Int64, window: ChartWindow = .latestEpisode) {
        self.window = window
        watermarks = (reply["lowWatermark"]?.doubleValue ?? 0.8, reply["highWatermark"]?.doubleValue ?? 0.9)
        let samples = reply.objects("samples")
        sampleCount = samples.count
        let origin = samples.first?.integer("time") ?? 0
        firstSeq = samples.first?.integer("seq") ?? 0
        func ms(_ o: JSONObject) -> Int64 { max((o.integer("time") ?? origin) - origin, 0) / 1000 }
        var pressedSince: Int64?
        for s in samples {
            let budget = s.integer("budget").map { UInt64(max($0, 0)) }
            let t = ms(s)
            result.points.append(TimelinePoint(time: t, usage: UInt64(max(s.integer("usage") ?? 0, 0)),
                                               budget: budget == 0 ? nil : budget))
            let pressed = (s.text("level") ?? "normal") != "normal"
            if pressed, pressedSince == nil { pressedSince = t }
            if !pressed, let since = pressedSince {
                pressure.append(since...t)
                pressedSince = nil
            }
        }
        for a in reply.objects("actions") {
            guard let kind = TimelineMark.Kind(rawValue: a.text("action") ?? "") else { continue }
            result.marks.append(TimelineMark(time: ms(a), kind: kind, usage: UInt64(max(a.integer("usage") ?? 0, 0))))
        }
        // Samples are taken on changes: what the last one says holds until now, and an
        // episode still going on runs to now.
        historyMilliseconds = max(result.points.last?.time ?? 0, result.marks.last?.time ?? 0)
        spanMilliseconds = max(historyMilliseconds, max(now - origin, 0) / 1000)
        if let since = pressedSince { pressure.append(since...spanMilliseconds) }
        if let last = result.points.last, spanMilliseconds > last.time {
            result.points.append(TimelinePoint(time: spanMilliseconds, usage: last.usage, budget: last.budget))
        }
    }

    var svg: String {
        let what = window == .all ? "since event \(firstSeq)" : "the latest episode"
        return SVGChart.render([.init(label: "scened: usage against budget, \(what)", result: result, pressure: pressure)],
                               title: "scened memory pressure", watermarks: watermarks, window: window)
    }

    func summary(path: String) -> String {
        var counts: [String: Int] = [:]
        for m in result.marks { counts[m.kind.rawValue, default: 0] += 1 }
        let actions = counts.isEmpty ? "no reclaim actions"
            : counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        let span = TimeSpan(microseconds: historyMilliseconds * 1000).approximate
        return "Wrote \(path): \(sampleCount) samples over \(span) from event \(firstSeq); \(actions).\n"
    }
}
