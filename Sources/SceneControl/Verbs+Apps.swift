import SceneCore
import Varlink

extension Verb {
    static let apps = Verb(
        "apps", section: .apps, summary: "List apps and their state",
        run: { invocation in
            let reply = try invocation.call("ListApps")
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(appTable(reply.objects("apps")).render(legend: !invocation.global.noLegend))
        })

    static func appTable(_ apps: [JSONObject]) -> Table {
        // A HOLD column only while the system holds some app down, as -v's DETAIL column.
        let held = apps.contains { ($0.text("hold") ?? "none") != "none" }
        var columns: [Table.Column] = [.init("APP"), .init("PROCESS"), .init("STATE"), .init("SESSIONS", right: true),
                                       .init("LIVE", right: true), .init("TASKS", right: true), .init("FOOTPRINT", right: true),
                                       .init("ATTACHED", right: true)]
        // Background modes and work only where some app has any, as HOLD.
        let modes = apps.contains { !modeNames($0, "backgroundModes").isEmpty }, work = hasBackgroundWork(apps)
        if modes { columns.append(.init("MODES")) }
        if work { columns += backgroundColumns }
        if held { columns.append(.init("HOLD")) }
        var table = Table(columns, footer: Table.count(apps.count, "app", "apps"))
        for app in apps {
            let footprint = (app.integer("baseFootprint") ?? 0) + (app.integer("sceneFootprint") ?? 0)
            // UIKit's application state describes a running process; a stopped one has none.
            let running = app.text("process") != "notRunning"
            table.append([
                app.text("id") ?? "?", app.text("process") ?? "?", running ? app.text("state") ?? "?" : "-",
                String(app.integer("sessions") ?? 0), String(app.integer("liveSessions") ?? 0),
                String(app.objects("tasks").count), ByteSize.format(footprint),
                attachedText(app) ?? "-",
            ] + (modes ? [modesText(app) ?? "-"] : []) + (work ? backgroundCells(app) : [])
                + (held ? [app.text("hold") == "none" ? "-" : holdText(app) ?? "-"] : []))
        }
        return table
    }

    static let backgroundColumns: [Table.Column] = [.init("SCHED", right: true), .init("PENDING", right: true), .init("AWAKE")]

    /// Scheduled tasks, pending notifications, and the open wake items ("-" when asleep).
    static func backgroundCells(_ app: JSONObject) -> [String] {
        let wakes = Int(app.integer("wakes") ?? 0)
        return [String(app.integer("scheduledTasks") ?? 0), String(app.integer("pendingNotifications") ?? 0),
                wakes > 0 ? Format.count(wakes, "item") : "-"]
    }

    static func modeNames(_ app: JSONObject, _ key: String) -> [String] {
        app[key]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// The declared background modes, an active one starred: "audio* location"; nil for none.
    static func modesText(_ app: JSONObject, separator: String = ",") -> String? {
        let declared = modeNames(app, "backgroundModes"), active = Set(modeNames(app, "activeModes"))
        guard !declared.isEmpty else { return nil }
        return declared.map { active.contains($0) ? $0 + "*" : $0 }.joined(separator: separator)
    }

    /// show-app's line on background work; nil from a daemon without it.
    static func backgroundText(_ app: JSONObject) -> String? {
        guard let scheduled = app.integer("scheduledTasks") else { return nil }
        let pending = Int(app.integer("pendingNotifications") ?? 0), wakes = Int(app.integer("wakes") ?? 0)
        var parts = ["\(scheduled) scheduled", "\(pending) notification\(pending == 1 ? "" : "s") pending"]
        parts.append(wakes > 0 ? "awake (\(Format.count(wakes, "open item")))" : "not awake")
        return parts.joined(separator: ", ")
    }

    /// "inactive (interruption)", "none"; nil from a daemon that does not say.
    static func holdText(_ app: JSONObject) -> String? {
        guard let level = app.text("hold") else { return nil }
        guard level != "none" else { return "none" }
        return level + (app.text("holdCause").map { " (\($0))" } ?? "")
    }

    /// "pid N", with "frozen" for a started app's frozen process.
    static func attachedText(_ app: JSONObject) -> String? {
        guard let pid = app.integer("attachedPid") ?? app.integer("startedPid") else { return nil }
        return "pid \(pid)" + (app["frozen"]?.boolValue == true ? " frozen" : "")
    }

    static let showApp = Verb(
        "show-app", section: .apps, synopsis: "APP", summary: "Show an app's state, scenes, memory and tasks",
        arguments: 1...1,
        run: { invocation in
            let reply = try invocation.call("GetApp", ["app": .string(try Check.app(invocation.arguments[0]))])
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(appBlock(reply.object("app") ?? [:], time: invocation.time, now: invocation.context.now()))
        })

    static func appBlock(_ app: JSONObject, time: TimeFormatter, now: UInt64) -> String {
        let int = { (key: String) in app.integer(key) ?? 0 }
        let process = app.text("process") ?? "?"
        var block = Block("\(process == "notRunning" ? "○" : "●") \(app.text("id") ?? "?")")
        var processLine = process
        if process != "notRunning", let launched = app.integer("launchedAt") {
            // The daemon records when the process was launched, not when it was last suspended.
            processLine += (process == "running" ? " since " : ", launched ") + time.timestampWithRelative(launched, now: now)
        }
        block.add("Process", processLine)
        // The process that lives the callbacks, when the app attached one (io.scened.App).
        block.add("Attached", app.integer("attachedPid").map { "pid \($0)" } ?? "no process attached")
        // An app scened starts itself (ExecStart=): its main process, frozen while suspended.
        if let started = app.integer("startedPid") {
            block.add("Started", "pid \(started)" + (app["frozen"]?.boolValue == true ? ", frozen" : ""))
        }
        if let suspends = app.integer("suspendsAt") { block.add("Suspends", time.timestampWithRelative(suspends, now: now)) }
        block.add("State", process == "notRunning" ? "- (not running)" : app.text("state") ?? "?")
        // Which user's login sessions hold the app, and how far the system holds it now.
        if let user = app.text("follows") { block.add("Follows", user) }
        if let hold = holdText(app) { block.add("Hold", hold) }
        block.add("Launches", String(int("launches")))
        block.add("Sessions", "\(int("sessions")) (\(int("liveSessions")) live)")
        block.add("Scenes", "\(int("foregroundActiveScenes")) foreground-active, \(int("foregroundInactiveScenes")) foreground-inactive, \(int("backgroundScenes")) background")
        let base = int("baseFootprint"), scenes = int("sceneFootprint")
        block.add("Footprint", "\(ByteSize.format(base + scenes)) (process \(ByteSize.format(base)), scenes \(ByteSize.format(scenes)))")
        let pending = app["pendingDiscards"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !pending.isEmpty { block.add("Pending discards", pending.joined(separator: " ")) }
        let tasks = app.objects("tasks")
        block.add("Tasks", tasks.isEmpty ? "none" : tasks.map { taskSummary($0, time: time, now: now) }.joined(separator: "\n"))
        if app["backgroundModes"] != nil {
            // [App] BackgroundModes=, those active now (BeginBackgroundActivity) starred.
            block.add("Modes", modesText(app, separator: " ").map { $0.contains("*") ? $0 + " (* active)" : $0 } ?? "none")
        }
        if let background = backgroundText(app) { block.add("Background", background) }
        return block.render()
    }

    /// `t3 "upload" (s2), expires Fri ...; 25s left`.
    static func taskSummary(_ task: JSONObject, time: TimeFormatter, now: UInt64) -> String {
        var text = task.text("token") ?? "?"
        if let name = task.text("name"), !name.isEmpty { text += " \"\(name)\"" }
        if let session = task.text("session") { text += " (\(session))" }
        if let expires = task.integer("expiresAt") { text += ", expires " + time.timestampWithRelative(expires, now: now) }
        if task.integer("expirationSentAt") != nil { text += ", expiring" }
        return text
    }

    /// A verb that sends one APP to `method` and reports the change.
    static func appChange(_ name: String, _ method: String, _ summary: String) -> Verb {
        Verb(name, section: .apps, synopsis: "APP", summary: summary, arguments: 1...1, run: { invocation in
            let app = try Check.app(invocation.arguments[0])
            try invocation.reportChange(try invocation.call(method, ["app": .string(app)]))
        })
    }

    static let launch = appChange("launch", "Launch", "Launch an app (didFinishLaunching)")
    static let terminate = appChange("terminate", "Terminate", "Terminate an app; its sessions stay archived")

    static let memoryWarning = Verb(
        "memory-warning", section: .apps, synopsis: "[APP...]",
        summary: "Send didReceiveMemoryWarning to running apps",
        arguments: 0...Int.max,
        run: { invocation in
            var parameters = JSONObject()
            if !invocation.arguments.isEmpty {
                var apps: [JSONValue] = []
                for app in invocation.arguments { apps.append(.string(try Check.app(app))) }
                parameters["apps"] = .array(apps)
            }
            try invocation.reportChange(try invocation.call("MemoryWarning", parameters))
        })

    static let setAppFootprint = Verb(
        "set-app-footprint", section: .apps, synopsis: "APP BYTES",
        summary: "Set the memory an app's process holds",
        arguments: 2...2,
        run: { invocation in
            let app = try Check.app(invocation.arguments[0])
            let bytes = try Check.footprint(invocation.arguments[1])
            try invocation.reportChange(try invocation.call("SetAppFootprint", ["app": .string(app), "footprint": .int(bytes)]))
        })
}
