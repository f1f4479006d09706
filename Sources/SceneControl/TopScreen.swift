import SceneCore
import Varlink

/// What `scenectl top` shows, as plain data: the daemon's last answers and the reclaim actions
/// seen on the event stream. `render` lays it out for a terminal of a given size, without any
/// I/O, so that the layout can be checked line by line.
struct TopScreen {
    enum Order: String, CaseIterable {
        case footprint, state, name, activity
    }

    var status: JSONObject = [:]
    var pressure: JSONObject = [:]
    var apps: [JSONObject] = []
    var sessions: [JSONObject] = []
    /// Reclaim actions from Monitor, newest last.
    var reclaims: [JSONObject] = []
    var order = Order.footprint
    var reversed = false
    /// Why the last refresh failed, shown instead of stale figures going unnoticed.
    var problem: String?

    static let keptReclaims = 50

    /// Keeps the event if reclaim caused it.
    mutating func note(_ event: JSONObject) {
        guard event.text("cause") == "reclaim" else { return }
        reclaims.append(event)
        if reclaims.count > Self.keptReclaims { reclaims.removeFirst(reclaims.count - Self.keptReclaims) }
    }

    // MARK: Layout

    /// Exactly `height` lines (padded with empty ones), none wider than `width`.
    func render(width: Int, height: Int, time: TimeFormatter, now: UInt64) -> [String] {
        var top: [String] = header(time: time, now: now)
        top += gauge(width: width)
        top.append("")
        let reclaimLines = reclaimSection(time: time)
        let footer = footerLine()
        // The tables share what the header, the reclaim list, the blank line between the
        // tables and the footer leave: apps (few, and each sums up its sessions) get what they
        // need up to a third of it, at least four lines; sessions the rest.
        let room = max(0, height - top.count - reclaimLines.count - 2)
        let appRows = sortedApps(), sessionRows = sortedSessions()
        let appShare = min(appRows.count + 1, max(4, room / 3), room)
        var lines = top
        lines += table(appTable(appRows), rows: appShare)
        lines.append("")
        lines += table(sessionTable(sessionRows, time: time), rows: room - appShare)
        lines += reclaimLines
        while lines.count < height - 1 { lines.append("") }
        lines = Array(lines.prefix(height - 1)) + [footer]
        return lines.map { Self.clip($0, width) }
    }

    private func header(time: TimeFormatter, now: UInt64) -> [String] {
        let int = { (key: String) in status.integer(key) ?? 0 }
        let counts = status.object("sessions") ?? [:]
        var first = "scened \(status.text("version") ?? "?")"
        if let uptime = status.integer("uptime") {
            first += " - up " + TimeFormatter.uptime(uptime)
        }
        first += " - \(int("connections")) client\(int("connections") == 1 ? "" : "s")"
        if let problem { first += " - " + problem }
        var byState: [String: Int] = [:]
        for session in sessions where session.text("condition") == "live" {
            byState[session.text("state") ?? "?", default: 0] += 1
        }
        let live = Check.sceneStates.compactMap { state in byState[state].map { "\($0) \(Self.shortState(state))" } }
        return [
            first,
            systemLine(now: now),
            "Apps:     \(int("apps")) (\(int("runningApps")) running, \(int("suspendedApps")) suspended); "
                + "\(int("backgroundTasks")) background task\(int("backgroundTasks") == 1 ? "" : "s")",
            status.object("background").map { "Wakes:    " + Verb.backgroundSummary($0) },
            "Sessions: \(counts.integer("total") ?? 0) (\(counts.integer("live") ?? 0) live, "
                + "\(counts.integer("archived") ?? 0) archived)" + (live.isEmpty ? "" : ": " + live.joined(separator: ", ")),
        ].compactMap { $0 }
    }

    /// "System:   1 interruption: i1 "call" 12s ago; locked: alice (lock, 5min ago); login
    /// followed", the stop and sleep first; nil from a daemon without the system's holds.
    private func systemLine(now: UInt64) -> String? {
        guard let system = status.object("system") else { return nil }
        let age = { (object: JSONObject) in TimeFormatter.relative(object.integer("since") ?? 0, now: Int64(clamping: now)) }
        var parts: [String] = []
        if system.flag("stopping") == true { parts.append("STOPPING") }
        if system.flag("sleeping") == true { parts.append("SLEEPING") }
        let held = system.objects("interruptions")
        let list = held.map { "\($0.text("token") ?? "?") \"\($0.text("reason") ?? "")\" \(age($0))" }
        parts.append(held.isEmpty ? "no interruption" : Format.count(held.count, "interruption") + ": " + list.joined(separator: ", "))
        let locked = system.objects("locked")
        let users = locked.map { "\($0.text("user") ?? "?") (\($0.text("cause") ?? "?"), \(age($0)))" }
        parts.append(locked.isEmpty ? "nobody locked" : "locked: " + users.joined(separator: ", "))
        parts.append("login " + (system.text("login") ?? "?"))
        return "System:   " + parts.joined(separator: "; ")
    }

    /// "Pressure: warning [#####....|..|.]  7.2G/8.0G 90%", the marks at the watermarks, and
    /// the watermarks and forced level spelled out below.
    private func gauge(width: Int) -> [String] {
        let budget = pressure.integer("budget") ?? status.integer("budget") ?? 0
        let usage = pressure.integer("usage") ?? status.integer("usage") ?? 0
        let level = pressure.text("level") ?? status.text("pressure") ?? "?"
        let percent = budget > 0 ? Int((Double(usage) * 100 / Double(budget)).rounded(.down)) : 0
        let label = "Pressure: " + level.padding(9)
        let figures = " \(ByteSize.format(usage))/\(ByteSize.format(budget)) \(percent)%"
        let cells = max(10, min(60, width - label.count - figures.count - 2))
        var bar = [Character](repeating: ".", count: cells)
        if budget > 0 {
            let filled = min(cells, Int(Double(cells) * Double(max(0, usage)) / Double(budget)))
            for i in 0..<filled { bar[i] = "#" }
            for key in ["lowWatermark", "highWatermark", "criticalWatermark"] {
                guard let mark = pressure.integer(key) else { continue }
                let at = min(cells - 1, Int(Double(cells) * Double(mark) / Double(budget)))
                bar[at] = "|"
            }
        }
        var second = "          low \(ByteSize.format(pressure.integer("lowWatermark") ?? 0)), "
            + "high \(ByteSize.format(pressure.integer("highWatermark") ?? 0)), "
            + "critical \(ByteSize.format(pressure.integer("criticalWatermark") ?? 0))"
        if let forced = pressure.text("override") { second += "; forced \(forced)" }
        if let episode = pressure.object("episode") {
            second += "; episode #\(episode.integer("number") ?? 0): \(episode.integer("disconnects") ?? 0) disconnected, "
                + "\(ByteSize.format(episode.integer("bytesFreed") ?? 0)) freed"
        }
        return [label + "[" + String(bar) + "]" + figures, second]
    }

    private func appTable(_ rows: [JSONObject]) -> Table {
        // Background modes and wakes only where some app has any, last so that a narrow
        // terminal clips them rather than the footprint (the counts are on the Wakes line).
        let background = rows.contains { Self.backgroundCell($0) != "-" }
        var table = Table([.init("APP"), .init("PROCESS"), .init("STATE"), .init("SESSIONS", right: true),
                           .init("LIVE", right: true), .init("TASKS", right: true), .init("FOOTPRINT", right: true)]
                          + (background ? [.init("BACKGROUND")] : []))
        for app in rows {
            let running = app.text("process") != "notRunning"
            table.append([app.text("id") ?? "?", app.text("process") ?? "?", running ? app.text("state") ?? "?" : "-",
                          String(app.integer("sessions") ?? 0), String(app.integer("liveSessions") ?? 0),
                          String(app.objects("tasks").count), ByteSize.format(Self.footprint(app))]
                         + (background ? [Self.backgroundCell(app)] : []))
        }
        return table
    }

    private func sessionTable(_ rows: [JSONObject], time: TimeFormatter) -> Table {
        var table = Table([.init("SESSION"), .init("APP"), .init("STATE"), .init("ROLE"), .init("FOOTPRINT", right: true),
                           .init("LAST ACTIVE")])
        for session in rows {
            let live = session.text("condition") == "live"
            let last = session.integer("lastActiveAt") ?? 0
            table.append([session.text("id") ?? "?", session.text("app") ?? "?",
                          live ? session.text("state") ?? "?" : "archived",
                          session.flag("protected") == true ? "protected" : "-",
                          ByteSize.format(session.integer("footprint") ?? 0), last > 0 ? time.clockTime(last).prefix(8).description : "-"])
        }
        return table
    }

    /// "audio*,voip awake": the declared modes (active ones starred) and whether the app is
    /// awake for background work; "-" for neither.
    static func backgroundCell(_ app: JSONObject) -> String {
        let parts = [Verb.modesText(app), (app.integer("wakes") ?? 0) > 0 ? "awake" : nil].compactMap { $0 }
        return parts.isEmpty ? "-" : parts.joined(separator: " ")
    }

    /// The header and as many rows as fit in `rows` lines; the last line says how many more
    /// there are when not all fit.
    private func table(_ table: Table, rows: Int) -> [String] {
        guard rows > 0 else { return [] }
        var lines = table.render(legend: true).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // render(legend:) ends with the footer-less table and a final newline.
        while lines.last == "" { lines.removeLast() }
        guard lines.count > rows else { return lines }
        let hidden = lines.count - rows
        return Array(lines.prefix(rows - 1)) + ["  ... \(hidden + 1) more"]
    }

    private func reclaimSection(time: TimeFormatter) -> [String] {
        var lines = ["Recent reclaim:" + (reclaims.isEmpty ? " none seen" : "")]
        for event in reclaims.suffix(3) {
            let note = event.object("reclaim") ?? [:]
            let freed = (note.integer("usageBefore") ?? 0) - (note.integer("usageAfter") ?? 0)
            var text = time.clockTime(event.integer("time") ?? 0).prefix(8) + " " + (event.text("event") ?? "?")
            text += " " + EventTable.sessionCell(event) + " " + (event.text("app") ?? "-")
            text += " at \(note.text("level") ?? "?")"
            if freed > 0 { text += ", \(ByteSize.format(freed)) freed" }
            if let reason = note.text("reason"), !reason.isEmpty { text += " (\(reason))" }
            lines.append("  " + text)
        }
        return lines
    }

    private func footerLine() -> String {
        let orderText = order.rawValue + (reversed ? ", reversed" : "")
        // Within 80 columns for every order (space refreshes too; see scenectl top --help).
        return "q:quit f:footprint s:state n:name a:activity r:reverse  [\(orderText)]"
    }

    // MARK: Order

    static func footprint(_ app: JSONObject) -> Int64 {
        (app.integer("baseFootprint") ?? 0) + (app.integer("sceneFootprint") ?? 0)
    }

    /// Foreground first, then background, then what is not running or archived.
    static func stateRank(_ state: String?) -> Int {
        switch state {
        case "foregroundActive", "active": 0
        case "foregroundInactive", "inactive": 1
        case "background": 2
        case "unattached": 3
        default: 4
        }
    }

    func sortedApps() -> [JSONObject] {
        sorted(apps) { a, b in
            switch order {
            case .footprint: Self.footprint(a) > Self.footprint(b)
            case .state: Self.appRank(a) < Self.appRank(b)
            case .name: (a.text("id") ?? "") < (b.text("id") ?? "")
            case .activity: (a.integer("launchedAt") ?? 0) > (b.integer("launchedAt") ?? 0)
            }
        } tie: { ($0.text("id") ?? "") < ($1.text("id") ?? "") }
    }

    func sortedSessions() -> [JSONObject] {
        sorted(sessions) { a, b in
            switch order {
            case .footprint: (a.integer("footprint") ?? 0) > (b.integer("footprint") ?? 0)
            case .state: Self.sessionRank(a) < Self.sessionRank(b)
            case .name: (a.text("app") ?? "", Self.number(a)) < (b.text("app") ?? "", Self.number(b))
            case .activity: (a.integer("lastActiveAt") ?? 0) > (b.integer("lastActiveAt") ?? 0)
            }
        } tie: { Self.number($0) < Self.number($1) }
    }

    private static func appRank(_ app: JSONObject) -> Int {
        switch app.text("process") {
        case "running": stateRank(app.text("state"))
        case "suspended": 5
        default: 6
        }
    }

    private static func sessionRank(_ session: JSONObject) -> Int {
        session.text("condition") == "live" ? stateRank(session.text("state")) : 5
    }

    /// s42 → 42, so that s10 comes after s9.
    private static func number(_ session: JSONObject) -> Int64 {
        Int64((session.text("id") ?? "").dropFirst()) ?? 0
    }

    /// A stable sort by `before`, ties broken by `tie`, reversed on request.
    private func sorted(_ rows: [JSONObject], by before: (JSONObject, JSONObject) -> Bool,
                        tie: (JSONObject, JSONObject) -> Bool) -> [JSONObject] {
        let result = rows.sorted { a, b in
            if before(a, b) { return true }
            if before(b, a) { return false }
            return tie(a, b)
        }
        return reversed ? result.reversed() : result
    }

    static func shortState(_ state: String) -> String {
        switch state {
        case "foregroundActive": "active"
        case "foregroundInactive": "inactive"
        default: state
        }
    }

    static func clip(_ line: String, _ width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width)))
    }
}

extension String {
    /// Padded with spaces to `width` characters.
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
