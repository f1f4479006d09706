import SceneCore
import Varlink

extension Verb {
    static let metrics = Verb(
        "metrics", section: .daemon, synopsis: "[--format openmetrics|prometheus]",
        summary: "Print the daemon's metrics as OpenMetrics text",
        details: """
            Sessions by condition and scene state, apps by process state, memory usage, budget \
            and pressure level, pressure episodes, reclaim actions and the bytes they freed by \
            kind, the reclaim grace and missed deadlines, events and terminations, connections, \
            calls, loop passes, commits, and how long loop passes take (a histogram). Counters \
            count since the daemon started. --format prometheus writes the older text format \
            that node-exporter's textfile collector reads (counters typed under their _total \
            name, no # EOF); scened-metrics.timer writes that every 15 seconds to \
            /var/lib/prometheus/node-exporter/scened.prom.
            """,
        options: [OptionSpec("format", value: "FORMAT", "openmetrics (default) or prometheus")],
        run: { invocation in
            let name = invocation.options.value("format") ?? OpenMetricsWriter.Flavor.openMetrics.rawValue
            guard let flavor = OpenMetricsWriter.Flavor(rawValue: name) else {
                throw ControlError.usage("--format must be openmetrics or prometheus, not '\(name)'")
            }
            let reply = try invocation.call("GetMetrics")
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(MetricsText.render(reply.object("metrics") ?? [:], flavor: flavor))
        })
}

/// A GetMetrics reply as exposition text; names start with `scened_`.
enum MetricsText {
    static func render(_ m: JSONObject, flavor: OpenMetricsWriter.Flavor) -> String {
        var w = OpenMetricsWriter(flavor: flavor)
        func count(_ o: JSONObject, _ key: String = "count") -> UInt64 { UInt64(max(o.integer(key) ?? 0, 0)) }
        func value(_ key: String) -> UInt64 { UInt64(max(m.integer(key) ?? 0, 0)) }

        w.family("scened_uptime_seconds", .gauge, help: "Time since the daemon started.", unit: "seconds")
        w.sample("scened_uptime_seconds", seconds: Double(value("uptime")) / 1e6)
        w.family("scened_sessions", .gauge, help: "Sessions by condition and scene state.")
        for t in m.objects("sessions") {
            w.sample("scened_sessions", labels: ["condition": t.text("condition") ?? "", "state": t.text("state") ?? ""], count(t))
        }
        w.family("scened_apps", .gauge, help: "Apps by process state.")
        for t in m.objects("apps") { w.sample("scened_apps", labels: ["process": t.text("process") ?? ""], count(t)) }
        w.family("scened_background_tasks", .gauge, help: "Background tasks open now.")
        w.sample("scened_background_tasks", value("backgroundTasks"))
        writeMemory(&w, m)
        writeReclaim(&w, m)
        w.family("scened_events", .counter, help: "Lifecycle events published, by name.")
        for t in m.objects("events") { w.sample("scened_events_total", labels: ["event": t.text("event") ?? ""], count(t)) }
        w.family("scened_terminations", .counter, help: "App terminations, by reason.")
        for t in m.objects("terminations") {
            w.sample("scened_terminations_total", labels: ["reason": t.text("reason") ?? ""], count(t))
        }
        writeLoop(&w, m)
        return w.finish()
    }

    private static func writeMemory(_ w: inout OpenMetricsWriter, _ m: JSONObject) {
        w.family("scened_memory_usage_bytes", .gauge, help: "Resident memory by the daemon's accounting.", unit: "bytes")
        w.sample("scened_memory_usage_bytes", UInt64(max(m.integer("usage") ?? 0, 0)))
        w.family("scened_memory_budget_bytes", .gauge, help: "The memory budget.", unit: "bytes")
        w.sample("scened_memory_budget_bytes", UInt64(max(m.integer("budget") ?? 0, 0)))
        w.family("scened_pressure_level", .gauge, help: "The pressure level now: 1 for the level in force, 0 for the others.")
        let level = m.text("pressure") ?? ""
        for name in ["normal", "warning", "critical"] {
            w.sample("scened_pressure_level", labels: ["level": name], name == level ? 1 : 0)
        }
        w.family("scened_pressure_episodes", .counter, help: "Pressure episodes begun.")
        w.sample("scened_pressure_episodes_total", UInt64(max(m.integer("episodes") ?? 0, 0)))
    }

    private static func writeReclaim(_ w: inout OpenMetricsWriter, _ m: JSONObject) {
        let tallies = m.objects("reclaims")
        w.family("scened_reclaim_actions", .counter, help: "Reclaim actions carried out, by kind.")
        for t in tallies { w.sample("scened_reclaim_actions_total", labels: ["action": t.text("action") ?? ""], UInt64(max(t.integer("count") ?? 0, 0))) }
        w.family("scened_reclaim_freed_bytes", .counter, help: "Bytes freed by reclaim actions, by kind.", unit: "bytes")
        for t in tallies {
            w.sample("scened_reclaim_freed_bytes_total", labels: ["action": t.text("action") ?? ""], UInt64(max(t.integer("bytesFreed") ?? 0, 0)))
        }
        let grace = m.object("grace") ?? [:]
        func g(_ key: String) -> UInt64 { UInt64(max(grace.integer(key) ?? 0, 0)) }
        w.family("scened_reclaim_grace_pending", .gauge, help: "Reclaim notices awaiting an answer now.")
        w.sample("scened_reclaim_grace_pending", g("pending"))
        w.family("scened_reclaim_grace_notices", .counter, help: "Reclaim notices sent to attached apps.")
        w.sample("scened_reclaim_grace_notices_total", g("notices"))
        w.family("scened_reclaim_grace_answers", .counter, help: "How reclaim notices ended: acknowledged, deferred or timed out.")
        w.sample("scened_reclaim_grace_answers_total", labels: ["answer": "ack"], g("acks"))
        w.sample("scened_reclaim_grace_answers_total", labels: ["answer": "deferral"], g("deferrals"))
        w.sample("scened_reclaim_grace_answers_total", labels: ["answer": "timeout"], g("timeouts"))
        // The deadlines the daemon enforces, each counted where it is missed.
        let reasons = Dictionary(m.objects("terminations").map { ($0.text("reason") ?? "", UInt64(max($0.integer("count") ?? 0, 0))) },
                                 uniquingKeysWith: { a, _ in a })
        w.family("scened_deadlines_missed", .counter, help: "Deadlines missed: a reclaim notice unanswered, a callback unanswered (hung), a background task past its expiration.")
        w.sample("scened_deadlines_missed_total", labels: ["deadline": "reclaimGrace"], g("timeouts"))
        w.sample("scened_deadlines_missed_total", labels: ["deadline": "callback"], reasons["hung"] ?? 0)
        w.sample("scened_deadlines_missed_total", labels: ["deadline": "backgroundTask"], reasons["backgroundTaskExpired"] ?? 0)
    }

    private static func writeLoop(_ w: inout OpenMetricsWriter, _ m: JSONObject) {
        func value(_ key: String) -> UInt64 { UInt64(max(m.integer(key) ?? 0, 0)) }
        w.family("scened_connections", .gauge, help: "Clients connected now.")
        w.sample("scened_connections", value("connections"))
        w.family("scened_calls", .counter, help: "Varlink calls handled.")
        w.sample("scened_calls_total", value("calls"))
        w.family("scened_commits", .counter, help: "Batches of changes committed to storage.")
        w.sample("scened_commits_total", value("commits"))
        w.family("scened_loop_passes", .counter, help: "Passes of the daemon's event loop.")
        w.sample("scened_loop_passes_total", value("passes"))
        let h = m.object("passLatency") ?? [:]
        func ints(_ key: String) -> [UInt64] { (h[key]?.arrayValue ?? []).map { UInt64(max($0.intValue ?? 0, 0)) } }
        w.histogram("scened_loop_pass_duration_seconds", help: "How long each pass of the event loop took.",
                    bounds: ints("bounds"), counts: ints("counts"), overflow: UInt64(max(h.integer("overflow") ?? 0, 0)),
                    sumMicroseconds: UInt64(max(h.integer("sum") ?? 0, 0)))
    }
}
