import Varlink

/// Lifecycle events as tables (-v after a change) and as monitor lines.
enum EventTable {
    /// SEQ EVENT APP SESSION STATE, for the events a change caused.
    static func table(_ events: [JSONObject]) -> Table {
        var table = Table([.init("SEQ", right: true), .init("EVENT"), .init("APP"), .init("SESSION"), .init("STATE")],
                          footer: Table.count(events.count, "event", "events", nil))
        for event in events {
            table.append([String(event.integer("seq") ?? 0), event.text("event") ?? "?", event.text("app") ?? "-",
                          sessionCell(event), event.text("state") ?? "-"])
        }
        return table
    }

    /// The event's session; for app events that concern several (didDiscardSceneSessions,
    /// terminated), those; "-" for none.
    static func sessionCell(_ event: JSONObject) -> String {
        if let session = event.text("session") { return session }
        let sessions = event["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return sessions.isEmpty ? "-" : sessions.joined(separator: ",")
    }

    // MARK: Monitor lines

    /// Monitor lines are printed as events arrive, so the columns have fixed widths (wide
    /// enough for every event name and typical ids) instead of being measured.
    private static let widths = (seq: 7, time: 15, event: 26, app: 24, session: 8)

    static let monitorHeader = line("SEQ", "TIME", "EVENT", "APP", "SESSION", "STATE")

    static func monitorLine(_ event: JSONObject, time: TimeFormatter) -> String {
        line(String(event.integer("seq") ?? 0), time.clockTime(event.integer("time") ?? 0), event.text("event") ?? "?",
             event.text("app") ?? "-", sessionCell(event), event.text("state") ?? "-")
    }

    private static func line(_ seq: String, _ time: String, _ event: String, _ app: String, _ session: String,
                             _ state: String) -> String {
        func left(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(width - text.count, 0))
        }
        let right = String(repeating: " ", count: max(widths.seq - seq.count, 0)) + seq
        return [right, left(time, widths.time), left(event, widths.event), left(app, widths.app),
                left(session, widths.session), state].joined(separator: " ")
    }
}
