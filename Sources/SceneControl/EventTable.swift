import Varlink

/// Lifecycle events as tables (-v after a change) and as monitor lines.
enum EventTable {
    /// SEQ EVENT APP SESSION STATE, for the events a change caused.
    static func table(_ events: [JSONObject]) -> Table {
        // A DETAIL column only when an event has something to say (restored state, a task, a
        // reason), so the common table stays narrow.
        let details = events.map(detail)
        var columns: [Table.Column] = [.init("SEQ", right: true), .init("EVENT"), .init("APP"), .init("SESSION"), .init("STATE")]
        let withDetail = details.contains { !$0.isEmpty }
        if withDetail { columns.append(.init("DETAIL")) }
        var table = Table(columns, footer: Table.count(events.count, "event", "events", nil))
        for (event, text) in zip(events, details) {
            var row = [String(event.integer("seq") ?? 0), event.text("event") ?? "?", event.text("app") ?? "-",
                       sessionCell(event), event.text("state") ?? "-"]
            if withDetail { row.append(text) }
            table.append(row)
        }
        return table
    }

    /// What an event carries beyond its columns: the state-restoration data handed to a
    /// reconnecting scene, a task, a termination or reclaim reason.
    static func detail(_ event: JSONObject) -> String {
        var parts: [String] = []
        if let restoration = event.object("restoration") {
            if let json = restoration["json"], json != .null {
                let text = json.serializedString()
                parts.append("restored " + (text.utf8.count <= 80 ? text : String(text.prefix(77)) + "..."))
            } else if restoration.text("base64") != nil {
                parts.append("restored (binary)")
            }
        } else if event.flag("reconnect") == true {
            parts.append("reconnected, no saved state")
        }
        if let task = event.text("task") {
            let name = event.text("taskName") ?? ""
            parts.append("task \(task)" + (name.isEmpty ? "" : " (\(name))"))
        }
        if let wake = wakeDetail(event) { parts.append(wake) }
        parts += openDetails(event)
        if let reason = event.text("reason") { parts.append(reason) }
        if let reclaim = event.object("reclaim") {
            parts.append("reclaim: " + (reclaim.text("reason") ?? "") + " at " + (reclaim.text("level") ?? "?"))
        }
        return parts.joined(separator: "; ")
    }

    /// A wake's item (R34): "refresh task notes.refresh", "notification n3 {"text":"hi"}" (the
    /// payload only where the caller may read it, cut short like restored state).
    static func wakeDetail(_ event: JSONObject) -> String? {
        guard let kind = event.text("kind") else { return nil }
        if let id = event.text("notification") {
            guard let payload = event["payload"], payload != .null else { return "notification \(id)" }
            let text = payload.serializedString()
            return "notification \(id) " + (text.utf8.count <= 80 ? text : String(text.prefix(77)) + "...")
        }
        return "\(kind) task \(event.text("identifier") ?? "?")"
    }

    /// What a scene is opened with (willConnectTo, openURLContexts, continueUserActivity): each
    /// URL, with the app that opened it, and each activity's type and target; absent where the
    /// caller may not read the app's data.
    static func openDetails(_ event: JSONObject) -> [String] {
        let cut = { (text: String) in DesktopEntries.escaped(text.utf8.count <= 80 ? text : String(text.prefix(77)) + "...") }
        var parts: [String] = []
        for context in event.objects("urlContexts") {
            let source = context.text("sourceApplication").map { " from \($0)" } ?? ""
            parts.append(cut(context.text("url") ?? "?") + source)
        }
        for activity in event.objects("userActivities") {
            let target = activity.text("targetContentIdentifier").map { " for " + cut($0) } ?? ""
            parts.append("activity " + cut(activity.text("activityType") ?? "?") + target)
        }
        return parts
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
        + String(repeating: " ", count: 19 - "STATE".count) + "DETAIL"

    static func monitorLine(_ event: JSONObject, time: TimeFormatter) -> String {
        let base = line(String(event.integer("seq") ?? 0), time.clockTime(event.integer("time") ?? 0), event.text("event") ?? "?",
                        event.text("app") ?? "-", sessionCell(event), event.text("state") ?? "-")
        let extra = detail(event)
        guard !extra.isEmpty else { return base }
        // After the state, padded so that details line up.
        let state = event.text("state") ?? "-"
        return base + String(repeating: " ", count: max(19 - state.count, 1)) + extra
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
