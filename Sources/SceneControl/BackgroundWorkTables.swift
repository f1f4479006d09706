import SceneCore
import Varlink

/// What ListBackgroundWork returns, as the tables `scenectl tasks` prints after the
/// beginBackgroundTask tasks: scheduled tasks, pending notifications, open wake items. An empty
/// one is left out. The first column is never a task token, so that completion can tell them
/// apart from the first table's rows.
extension Verb {
    static func backgroundWorkTables(_ work: JSONObject, time: TimeFormatter) -> [Table] {
        var tables: [Table] = []
        let scheduled = work.objects("tasks"), notifications = work.objects("notifications"), wakes = work.objects("wakes")
        if !scheduled.isEmpty { tables.append(scheduledTable(scheduled, time: time)) }
        if !notifications.isEmpty { tables.append(notificationTable(notifications, time: time)) }
        if !wakes.isEmpty { tables.append(wakeTable(wakes, time: time)) }
        return tables
    }

    static func scheduledTable(_ tasks: [JSONObject], time: TimeFormatter) -> Table {
        var table = Table([.init("APP"), .init("IDENTIFIER"), .init("KIND"), .init("EARLIEST BEGIN"), .init("SUBMITTED")],
                          footer: Table.count(tasks.count, "scheduled task", "scheduled tasks"))
        for task in tasks {
            table.append([task.text("app") ?? "?", task.text("identifier") ?? "?", task.text("kind") ?? "?",
                          time.tableTime(task.integer("earliestBegin") ?? 0), time.tableTime(task.integer("submittedAt") ?? 0)])
        }
        return table
    }

    static func notificationTable(_ notifications: [JSONObject], time: TimeFormatter) -> Table {
        var table = Table([.init("APP"), .init("NOTIFICATION"), .init("PRIORITY"), .init("SIZE", right: true), .init("QUEUED")],
                          footer: Table.count(notifications.count, "pending notification", "pending notifications"))
        for n in notifications {
            table.append([n.text("app") ?? "?", n.text("notification") ?? "?", n.text("priority") ?? "?",
                          ByteSize.format(n.integer("size") ?? 0), time.tableTime(n.integer("queuedAt") ?? 0)])
        }
        return table
    }

    static func wakeTable(_ items: [JSONObject], time: TimeFormatter) -> Table {
        var table = Table([.init("APP"), .init("ITEM"), .init("KIND"), .init("SEQ", right: true), .init("BEGAN"), .init("DEADLINE"),
                           .init("STATE")],
                          footer: Table.count(items.count, "wake item", "wake items"))
        for item in items {
            table.append([item.text("app") ?? "?", item.text("identifier") ?? item.text("notification") ?? "?",
                          item.text("kind") ?? "?", item.integer("seq").map(String.init) ?? "?",
                          time.tableTime(item.integer("began") ?? 0), time.tableTime(item.integer("deadline") ?? 0),
                          item.flag("expiring") == true ? "expiring" : "open"])
        }
        return table
    }
}
