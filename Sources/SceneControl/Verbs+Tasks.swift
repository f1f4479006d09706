import Varlink

extension Verb {
    static let tasks = Verb(
        "tasks", section: .tasks, summary: "List open background tasks and scheduled work",
        details: "The tasks begun with beginBackgroundTask (task begin); then, when there are any, the tasks apps scheduled (schedule), the notifications waiting for their app (notify), and the items of open wakes: what a woken app was handed and has not answered yet.",
        run: { invocation in
            let reply = try invocation.call("ListApps")
            let apps = reply.objects("apps")
            let tasks = apps.flatMap { $0.objects("tasks") }
            // Asked only when some app has background work: a daemon without it is never asked.
            let work = hasBackgroundWork(apps) ? try invocation.call("ListBackgroundWork") : [:]
            if invocation.global.json {
                return try invocation.json(["tasks": .array(tasks.map { .object($0) }), "scheduled": work["tasks"] ?? [],
                                            "notifications": work["notifications"] ?? [], "wakes": work["wakes"] ?? []])
            }
            let legend = !invocation.global.noLegend
            var text = taskTable(tasks, time: invocation.time).render(legend: legend)
            for table in backgroundWorkTables(work, time: invocation.time) {
                text += (legend ? "\n" : "") + table.render(legend: legend)
            }
            try invocation.write(text)
        })

    static func hasBackgroundWork(_ apps: [JSONObject]) -> Bool {
        apps.contains { app in ["scheduledTasks", "pendingNotifications", "wakes"].contains { (app.integer($0) ?? 0) > 0 } }
    }

    static func taskTable(_ tasks: [JSONObject], time: TimeFormatter) -> Table {
        var table = Table([.init("TOKEN"), .init("APP"), .init("SESSION"), .init("NAME"), .init("BEGAN"), .init("EXPIRES")],
                          footer: Table.count(tasks.count, "task", "tasks"))
        for task in tasks {
            let name = task.text("name") ?? ""
            table.append([
                task.text("token") ?? "?", task.text("app") ?? "?", task.text("session") ?? "-", name.isEmpty ? "-" : name,
                time.tableTime(task.integer("beganAt") ?? 0), task.integer("expiresAt").map(time.tableTime) ?? "-",
            ])
        }
        return table
    }

    static let taskBegin = Verb(
        "task begin", section: .tasks, synopsis: "SESSION | --app APP [--name NAME]",
        summary: "Begin a background task; prints its token",
        options: [
            OptionSpec("app", value: "APP", "Begin the task for APP rather than for a session's app"),
            OptionSpec("name", value: "NAME", "The task's name"),
        ],
        arguments: 0...1,
        run: { invocation in
            var parameters = JSONObject()
            switch (invocation.arguments.first, invocation.options.value("app")) {
            case (let session?, nil): parameters["session"] = .string(try Check.session(session))
            case (nil, let app?): parameters["app"] = .string(try Check.app(app))
            case (nil, nil): throw ControlError.usage("task begin needs either SESSION or --app APP")
            case (_?, _?): throw ControlError.usage("task begin takes either SESSION or --app APP, not both")
            }
            if let name = invocation.options.value("name") { parameters["name"] = .string(name) }
            let reply = try invocation.call("BeginBackgroundTask", parameters)
            try invocation.reportChange(reply, primary: reply.object("task")?.text("token") ?? "?")
        })

    static let taskEnd = Verb(
        "task end", section: .tasks, synopsis: "TOKEN", summary: "End a background task",
        arguments: 1...1,
        run: { invocation in
            let token = try Check.token(invocation.arguments[0])
            try invocation.reportChange(try invocation.call("EndBackgroundTask", ["token": .string(token)]))
        })
}
