import SceneCore
import Varlink

extension Verb {
    static let pressure = Verb(
        "pressure", section: .daemon, summary: "Show memory pressure: level, sources, usage against budget, episodes",
        details: "The level scened acts on is the highest of its sources: the simulated budget, PSI, and a level forced with 'scenectl pressure set'.",
        run: { invocation in
            let reply = try invocation.call("GetPressure")
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(pressureBlock(reply.object("pressure") ?? [:], time: invocation.time, now: invocation.context.now()))
        })

    static let pressureSet = Verb(
        "pressure set", section: .daemon, synopsis: "warning|critical [--for DURATION]",
        summary: "Force a pressure level, until cleared or for DURATION (30s, 5min)",
        details: "The forced level joins the other sources (the highest wins) and lasts until 'pressure clear', until DURATION lapses, or until scened stops: it is not kept across a restart.",
        options: [OptionSpec("for", value: "DURATION", "Lapse after DURATION (systemd time span: 30s, 5min, 1h)")],
        arguments: 1...1,
        run: { invocation in
            let level = try Check.oneOf(invocation.arguments[0], ["warning", "critical"], option: "level")
            var parameters: JSONObject = ["level": .string(level)]
            if let text = invocation.options.value("for") {
                guard let span = TimeSpan(parsing: text), span.microseconds > 0 else {
                    throw ControlError.usage("invalid --for '\(text)'; expected a time span such as 30s, 5min, 1h")
                }
                parameters["duration"] = .int(span.microseconds)
            }
            try invocation.reportChange(try invocation.call("SetPressure", parameters))
        })

    static let pressureClear = Verb(
        "pressure clear", section: .daemon, summary: "Remove a forced pressure level",
        run: { invocation in
            try invocation.reportChange(try invocation.call("ClearPressure"))
        })

    static func pressureBlock(_ p: JSONObject, time: TimeFormatter, now: UInt64) -> String {
        let int = { (key: String) in p.integer(key) ?? 0 }
        var block = Block("Memory pressure: \(p.text("level") ?? "unknown")")
        let budget = int("budget")
        let usage = int("usage")
        // In floating point: usage × 100 would overflow near the top of the integer range.
        let percent = budget > 0 ? Int((Double(usage) * 100 / Double(budget)).rounded(.down)) : 0
        block.add("Usage", "\(ByteSize.format(usage)) of \(ByteSize.format(budget)) budget (\(percent)%)")
        if let m = p.object("measured") {
            // Started apps: what they really hold, read from the kernel.
            let apps = Int(m.integer("apps") ?? 0)
            var text = "\(ByteSize.format(m.integer("bytes") ?? 0)) in \(Format.count(apps, "started app")) (\(m.text("source") ?? "?"))"
            if let at = m.integer("measuredAt") { text += ", read \(time.timestampWithRelative(at, now: now))" }
            if m["awaitingRelease"]?.boolValue == true { text += "; waiting for reclaimed memory to show" }
            block.add("Measured", text)
        }
        block.add("Watermarks", "low \(ByteSize.format(int("lowWatermark"))), high \(ByteSize.format(int("highWatermark"))), critical \(ByteSize.format(int("criticalWatermark")))")
        let sources = p.objects("sources").map { s in
            "\(s.text("name") ?? "?"): \(s.text("level") ?? "?") (\(s.text("detail") ?? ""))"
        }
        block.add("Sources", sources.isEmpty ? "none" : sources.joined(separator: "\n"))
        if let forced = p.text("override") {
            let until = p.integer("overrideUntil").map { " until " + time.timestampWithRelative($0, now: now) } ?? " until cleared"
            block.add("Forced", forced + until)
        }
        if let e = p.object("episode") { block.add("Episode", episodeText(e, time: time, now: now)) }
        if let e = p.object("lastEpisode") { block.add("Last episode", episodeText(e, time: time, now: now)) }
        if let g = p.object("grace"), (g.integer("notices") ?? 0) > 0 {
            // The reclaim grace of attached apps (reclaim-policy.md §3.5).
            let n = { (k: String) in g.integer(k) ?? 0 }
            block.add("Grace", "\(Format.count(Int(n("notices")), "notice")): \(n("acks")) acked, \(n("deferrals")) deferred, \(n("timeouts")) timed out; \(n("pending")) pending")
        }
        return block.render()
    }

    static func episodeText(_ e: JSONObject, time: TimeFormatter, now: UInt64) -> String {
        let int = { (key: String) in e.integer(key) ?? 0 }
        var text = "#\(int("number")) \(e.text("peakLevel") ?? "?") peak, started \(time.timestampWithRelative(int("startedAt"), now: now))"
        if let ended = e.integer("endedAt") { text += "\nended \(time.timestampWithRelative(ended, now: now))" }
        if let relieved = e.integer("relievedAt") {
            text += "\nrelieved after \(TimeSpan(microseconds: max(0, relieved - int("startedAt"))).approximate)"
        }
        text += "\n\(int("disconnects")) disconnected, \(int("terminations")) terminated, \(int("suspensions")) suspended, \(ByteSize.format(int("bytesFreed"))) freed"
        if e.flag("unrelievable") == true { text += "\nunrelievable: only foreground and protected scenes were left" }
        return text
    }
}
