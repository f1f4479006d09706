import SceneCore
import Varlink

extension Verb {
    static let status = Verb(
        "status", section: .daemon, summary: "Show the daemon's state",
        details: "Version, process, uptime, socket, apps, sessions, scenes, tasks, background work (apps awake for it, tasks scheduled, notifications pending, the next due), what the system holds (how logind is followed, locked users, held interruptions, a sleep or a stop), the next event sequence number and the number of connected clients, like systemctl status.",
        run: { invocation in
            let reply = try invocation.call("GetStatus")
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(statusBlock(reply.object("status") ?? [:], time: invocation.time, now: invocation.context.now()))
        })

    static func statusBlock(_ status: JSONObject, time: TimeFormatter, now: UInt64) -> String {
        let int = { (key: String) in status.integer(key) ?? 0 }
        var block = Block("● scened - scene session daemon")
        block.add("Version", status.text("version") ?? "unknown")
        let uptime = int("uptime")
        let since = Int64(clamping: now) - uptime
        block.add("Active", "running since \(time.timestampWithRelative(since, now: now))")
        block.add("Main PID", String(int("pid")))
        block.add("Socket", status.text("socket") ?? "")
        block.add("Apps", "\(int("apps")) (\(int("runningApps")) running, \(int("suspendedApps")) suspended)")
        let sessions = status.object("sessions") ?? [:]
        let count = { (key: String) in sessions.integer(key) ?? 0 }
        block.add("Sessions", "\(count("total")) (\(count("live")) live, \(count("archived")) archived)")
        block.add("Scenes", "\(int("foregroundActiveScenes")) foreground-active")
        block.add("Tasks", "\(int("backgroundTasks")) background")
        // Background work came with issue 36; older daemons omit it.
        if let background = status.object("background") {
            var text = backgroundSummary(background)
            if let due = background.integer("nextDue") { text += "; next due " + time.timestampWithRelative(due, now: now) }
            block.add("Background", text)
        }
        // The system's holds came with issue 35; older daemons omit them.
        if let system = status.object("system") { addSystem(system, to: &block, time: time, now: now) }
        // Memory and configuration came with the pressure work; older daemons omit them.
        if let usage = status.integer("usage"), let budget = status.integer("budget") {
            block.add("Memory", "\(ByteSize.format(usage)) of \(ByteSize.format(budget)) budget, pressure \(status.text("pressure") ?? "unknown")")
        }
        if let episode = status.object("lastEpisode") {
            block.add("Last episode", episodeText(episode, time: time, now: now))
        }
        if let files = status["configFiles"]?.arrayValue {
            let names = files.compactMap(\.stringValue)
            block.add("Config", names.isEmpty ? "built-in defaults" : names.joined(separator: "\n"))
        }
        if let quarantined = status.integer("quarantined"), quarantined > 0 {
            block.add("Quarantined", "\(quarantined) stored row\(quarantined == 1 ? "" : "s") (damaged on disk; "
                      + "journalctl -u scened MESSAGE_ID=\(quarantineMessageID))")
        }
        block.add("Next seq", String(int("nextSeq")))
        block.add("Clients", String(int("connections")))
        return block.render()
    }

    /// "1 app awake (at most 4), 3 scheduled, 2 notifications pending" (status.background).
    static func backgroundSummary(_ background: JSONObject) -> String {
        let int = { (key: String) in Int(background.integer(key) ?? 0) }
        let pending = int("pendingNotifications")
        return "\(Format.count(int("wakingApps"), "app")) awake (at most \(int("maxConcurrentWakes"))), \(int("scheduledTasks")) scheduled, "
            + "\(pending) notification\(pending == 1 ? "" : "s") pending"
    }

    /// status.system: how logind is followed, locked users, held interruptions, sleep and stop.
    static func addSystem(_ system: JSONObject, to block: inout Block, time: TimeFormatter, now: UInt64) {
        block.add("Login", system.text("login") ?? "unknown")
        let locked = system.objects("locked").map { user in
            "\(userName(user)): \(user.text("cause") ?? "?") since \(time.timestampWithRelative(user.integer("since") ?? 0, now: now))"
        }
        if !locked.isEmpty { block.add("Locked", locked.joined(separator: "\n")) }
        let interruptions = system.objects("interruptions").map { held in
            "\(held.text("token") ?? "?") \"\(held.text("reason") ?? "")\" since "
                + time.timestampWithRelative(held.integer("since") ?? 0, now: now)
        }
        if !interruptions.isEmpty { block.add("Interrupted", interruptions.joined(separator: "\n")) }
        let states = systemStates(system)
        if !states.isEmpty { block.add("System", states.joined(separator: ", ")) }
    }

    /// "alice (uid 1000)", or the uid alone for a user without a name.
    static func userName(_ user: JSONObject) -> String {
        let uid = user.integer("uid").map(String.init) ?? "?"
        guard let name = user.text("user"), !name.isEmpty, name != uid else { return "uid \(uid)" }
        return "\(name) (uid \(uid))"
    }

    /// What the whole system is doing to the scenes beyond locks and interruptions.
    static func systemStates(_ system: JSONObject) -> [String] {
        var states: [String] = []
        if system.flag("sleeping") == true { states.append("sleeping (scenes in the background, apps frozen)") }
        if system.flag("stopping") == true { states.append("stopping (scenes saved, then started apps terminated)") }
        return states
    }

    /// The daemon's entry for a quarantined row (SceneDaemon's MessageID.rowQuarantined).
    static let quarantineMessageID = "11e83c9298ac403eae2cbba03cc7edd1"

    static let reload = Verb(
        "reload", section: .daemon, summary: "Make the daemon reload its configuration",
        run: { invocation in
            let reply: JSONObject
            do {
                reply = try invocation.call("Reload")
            } catch let error as VarlinkError where error.name == ErrorReport.service + "MethodNotFound" {
                throw ControlError(.failure, "this scened cannot reload its configuration (no io.scened.Manager.Reload); restart it instead")
            }
            try invocation.reportChange(reply)
        })
}
