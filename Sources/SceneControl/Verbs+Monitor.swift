import Varlink

extension Verb {
    static let monitor = Verb(
        "monitor", section: .daemon, synopsis: "[--app APP] [--session SESSION] [--since SEQ]",
        summary: "Print lifecycle events as they happen",
        details: "One line per event (SEQ TIME EVENT APP SESSION STATE, local time), written at once so that pipes see each event as it happens; with --json the daemon's event object, one per line. Runs until interrupted (exit 0) or until scened goes away (exit 3).",
        options: [
            OptionSpec("app", value: "APP", "Only APP's events"),
            OptionSpec("session", value: "SESSION", "Only events concerning SESSION"),
            OptionSpec("since", value: "SEQ", "Start with the logged events from sequence number SEQ (as far back as the daemon's event log reaches)"),
        ],
        streaming: true,
        run: { invocation in
            var parameters = JSONObject()
            if let app = invocation.options.value("app") { parameters["app"] = .string(try Check.app(app)) }
            if let session = invocation.options.value("session") { parameters["session"] = .string(try Check.session(session)) }
            if let since = invocation.options.value("since") { parameters["since"] = .int(try Check.count(since, option: "sequence number")) }
            if invocation.context.exitOnInterrupt { Interrupts.exitQuietly() }
            var headerShown = invocation.global.noLegend || invocation.global.json
            try invocation.callMore("Monitor", parameters) { reply in
                // The header as soon as the daemon accepted the subscription (its first reply,
                // which has no event), so that a quiet stream visibly waits.
                if !headerShown {
                    try invocation.line(EventTable.monitorHeader)
                    headerShown = true
                }
                guard let event = reply.object("event") else { return true }
                if invocation.global.json {
                    try invocation.json(event)
                } else {
                    try invocation.line(EventTable.monitorLine(event, time: invocation.time))
                }
                return true
            }
        })
}
