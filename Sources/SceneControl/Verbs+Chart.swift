import SceneCore
import SceneReplay
import Varlink

extension Verb {
    static let pressureChart = Verb(
        "pressure chart", section: .daemon, synopsis: "--svg FILE [--since SEQ]",
        summary: "Draw the live daemon's usage against budget, with its reclaim actions marked",
        details: """
            The chart 'scenectl simulate --svg' draws, from the daemon's own history instead of \
            a trace: usage against the budget and its watermarks, each reclaim action marked \
            (warning ●, disconnect ▼, terminate ✕; suspensions and discards are counted). The daemon keeps the last \
            2,048 changes of usage, budget or level and the last 1,024 actions since it started. \
            --since starts the chart at an event's sequence number (the SEQ column of 'scenectl \
            monitor' and 'scenectl logs'). Prints what it drew.
            """,
        options: [OptionSpec("svg", value: "FILE", "Write the chart to FILE (required)"),
                  OptionSpec("since", value: "SEQ", "Start at this event sequence number")],
        run: { invocation in
            guard let path = invocation.options.value("svg") else {
                throw ControlError.usage("'pressure chart' needs --svg FILE (see 'scenectl pressure chart --help')")
            }
            var parameters: JSONObject = [:]
            if let since = invocation.options.value("since") { parameters["since"] = .int(try Check.count(since, option: "--since")) }
            let reply = try invocation.call("GetPressureHistory", parameters)
            let chart = PressureChart(reply)
            guard !chart.result.points.isEmpty else {
                throw ControlError(.failure, "no pressure history\(parameters["since"] == nil ? "" : " from that sequence number") yet")
            }
            do {
                try SimulateFiles.write(path, chart.svg)
            } catch {
                throw ControlError(.failure, "cannot write \(path): \(error)")
            }
            if invocation.global.json {
                return try invocation.json(["svg": .string(path), "samples": .int(Int64(chart.result.points.count)),
                                            "actions": .int(Int64(chart.result.marks.count))])
            }
            if !invocation.global.quiet { try invocation.write(chart.summary(path: path)) }
        })
}

/// A GetPressureHistory reply as the replayer's timeline, so that SVGChart draws it as it
/// draws a simulation. Times are made relative to the first sample.
struct PressureChart {
    var result = ReplayResult(metrics: ReplayMetrics(policy: .ours))
    var watermarks: (low: Double, high: Double)
    var firstSeq: Int64 = 0
    var spanMilliseconds: Int64 = 0

    init(_ reply: JSONObject) {
        watermarks = (reply["lowWatermark"]?.doubleValue ?? 0.8, reply["highWatermark"]?.doubleValue ?? 0.9)
        let samples = reply.objects("samples")
        let origin = samples.first?.integer("time") ?? 0
        firstSeq = samples.first?.integer("seq") ?? 0
        func ms(_ o: JSONObject) -> Int64 { max((o.integer("time") ?? origin) - origin, 0) / 1000 }
        for s in samples {
            let budget = s.integer("budget").map { UInt64(max($0, 0)) }
            result.points.append(TimelinePoint(time: ms(s), usage: UInt64(max(s.integer("usage") ?? 0, 0)),
                                               budget: budget == 0 ? nil : budget))
        }
        for a in reply.objects("actions") {
            guard let kind = TimelineMark.Kind(rawValue: a.text("action") ?? "") else { continue }
            result.marks.append(TimelineMark(time: ms(a), kind: kind, usage: UInt64(max(a.integer("usage") ?? 0, 0))))
        }
        spanMilliseconds = max(result.points.last?.time ?? 0, result.marks.last?.time ?? 0)
        // The chart runs to the last thing that happened.
        if let last = result.points.last, spanMilliseconds > last.time {
            result.points.append(TimelinePoint(time: spanMilliseconds, usage: last.usage, budget: last.budget))
        }
    }

    var svg: String {
        SVGChart.render([.init(label: "scened: usage against budget since event \(firstSeq)", result: result)],
                        title: "scened memory pressure", watermarks: watermarks)
    }

    func summary(path: String) -> String {
        var counts: [String: Int] = [:]
        for m in result.marks { counts[m.kind.rawValue, default: 0] += 1 }
        let actions = counts.isEmpty ? "no reclaim actions"
            : counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        let span = TimeSpan(microseconds: spanMilliseconds * 1000).approximate
        return "Wrote \(path): \(result.points.count) samples over \(span) from event \(firstSeq); \(actions).\n"
    }
}
