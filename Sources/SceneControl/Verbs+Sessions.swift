import SceneCore
import Varlink

extension Verb {
    static let list = Verb(
        "list", section: .sessions, synopsis: "[--app APP] [--state STATE] [--condition live|archived]",
        summary: "List scene sessions",
        details: "Sessions arrive from the daemon in batches and are printed as they come, so any number can be listed and the first rows show at once.",
        options: [
            OptionSpec("app", value: "APP", "Only APP's sessions"),
            OptionSpec("state", value: "STATE", "Only sessions whose scene is in STATE: " + Check.sceneStates.joined(separator: ", ")),
            OptionSpec("condition", value: "COND", "Only live (connected) or archived sessions"),
        ],
        run: { invocation in
            var parameters = JSONObject()
            if let app = invocation.options.value("app") { parameters["app"] = .string(try Check.app(app)) }
            if let condition = invocation.options.value("condition") {
                parameters["condition"] = .string(try Check.oneOf(condition, Check.listableConditions, option: "condition"))
            }
            if let state = invocation.options.value("state") {
                parameters["state"] = .string(try Check.oneOf(state, Check.sceneStates, option: "state"))
            }
            // Printed batch by batch as the daemon sends them: the first rows show at once.
            var table = TableStream(sessionColumns, legend: !invocation.global.noLegend)
            var json = JSONArrayStream(name: "sessions", pretty: invocation.global.jsonMode == .pretty)
            var count = 0
            try invocation.callMore("ListSessions", parameters) { batch in
                let sessions = batch["sessions"]?.arrayValue ?? []
                if invocation.global.json {
                    try invocation.write(json.text(for: sessions))
                } else {
                    let rows = sessions.compactMap(\.objectValue)
                    count += rows.count
                    try invocation.write(table.text(for: rows.map { sessionRow($0, time: invocation.time) }))
                }
                return true
            }
            if invocation.global.json { return try invocation.write(json.finish()) }
            try invocation.write(table.finish(footer: Table.count(count, "session", "sessions")))
        })

    static let sessionColumns: [Table.Column] = [
        .init("SESSION"), .init("APP"), .init("CONDITION"), .init("STATE"), .init("ROLE"),
        .init("FOOTPRINT", right: true), .init("LAST ACTIVE"),
    ]

    static func sessionRow(_ session: JSONObject, time: TimeFormatter) -> [String] {
        let lastActive = session.integer("lastActiveAt") ?? 0
        return [
            session.text("id") ?? "?", session.text("app") ?? "?", session.text("condition") ?? "?",
            session.text("state") ?? "?", session.text("role") ?? "?",
            ByteSize.format(session.integer("footprint") ?? 0), lastActive > 0 ? time.tableTime(lastActive) : "-",
        ]
    }

    static let show = Verb(
        "show", section: .sessions, synopsis: "SESSION [-n N]",
        summary: "Show a session and its recent journal entries",
        details: "Like systemctl status: the session's fields, then its last journal entries (SCENED_SESSION=SESSION, SYSLOG_IDENTIFIER=scened). If the journal cannot be read, one line says why instead.",
        options: [
            OptionSpec("lines", short: "n", value: "N", "Show the last N journal entries (default: 10; 0: none; 'all' for all)"),
            journalDirectoryOption,
        ],
        arguments: 1...1,
        run: { invocation in
            let id = try Check.session(invocation.arguments[0])
            _ = try invocation.lineCount(default: 10)  // a bad -n is a usage error before connecting
            let reply = try invocation.call("GetSession", ["session": .string(id)])
            if invocation.global.json { return try invocation.json(reply) }
            let context = invocation.context
            try invocation.write(sessionBlock(reply.object("session") ?? [:], time: invocation.time, now: context.now()))
            try invocation.journalSection(session: id)
        })

    static func sessionBlock(_ session: JSONObject, time: TimeFormatter, now: UInt64) -> String {
        let int = { (key: String) in session.integer(key) ?? 0 }
        let live = session.text("condition") == "live"
        var block = Block("\(live ? "●" : "○") \(session.text("id") ?? "?") - \(session.text("app") ?? "?")")
        block.add("Condition", session.text("condition") ?? "?")
        var state = session.text("state") ?? "?"
        if state == "background", int("backgroundSince") > 0 {
            state += " since " + time.timestampWithRelative(int("backgroundSince"), now: now)
        }
        block.add("State", state)
        block.add("Role", session.text("role") ?? "?")
        block.add("Configuration", session.text("configuration") ?? "")
        // An archived session's scene was released; its number is the last one it had.
        block.add("Scene", live ? "instance \(int("sceneInstance"))" : "none (last instance \(int("sceneInstance")))")
        let footprint = int("footprint")
        block.add("Footprint", "\(ByteSize.format(footprint)) (\(footprint) bytes)")
        block.add("Protected", session.flag("protected") == true ? "yes" : "no")
        block.add("Restore cost", int("restoreCostMs") > 0 ? "\(int("restoreCostMs"))ms" : "unknown")
        block.add("Created", time.timestampWithRelative(int("createdAt"), now: now))
        block.add("Last active", int("lastActiveAt") > 0 ? time.timestampWithRelative(int("lastActiveAt"), now: now) : "never")
        block.add("Activations", String(int("activations")))
        block.add("Restores", String(int("restores")))
        block.add("User info", session["userInfo"].map(jsonSummary) ?? "{}")
        block.add("Restoration", restorationSummary(session.object("restoration")))
        return block.render()
    }

    /// The JSON itself when short; "JSON, 4.2K" when it would flood the terminal (--json shows it).
    static func jsonSummary(_ json: JSONValue) -> String {
        let text = json.serializedString()
        return text.utf8.count <= 160 ? text : "JSON, \(ByteSize.format(UInt64(text.utf8.count)))"
    }

    /// "none", the JSON itself when short, "JSON, 4.2K" or "binary, 1.5K".
    static func restorationSummary(_ restoration: JSONObject?) -> String {
        if let json = restoration?["json"], json != .null { return jsonSummary(json) }
        if let base64 = restoration?.text("base64") {
            let padding = base64.reversed().prefix { $0 == "=" }.count
            return "binary, \(ByteSize.format(UInt64(base64.utf8.count / 4 * 3 - padding)))"
        }
        return "none"
    }
}
