import SceneCore
import Varlink

// Background work (R34): notifications handed to an app, and the tasks an app schedules.

extension Verb {
    static let notify = Verb(
        "notify", section: .tasks, synopsis: "APP JSON [--priority high|normal]",
        summary: "Hand an app a notification; prints its id",
        details: "The payload is a JSON object (at most [Background] MaxNotificationSize=). A running app receives didReceiveNotification at once; a suspended one is thawed for it and suspended again once it answers; otherwise the notification waits, stored, and is delivered exactly once. For administrators and members of the app's [App] NotifyGroup=.",
        options: [OptionSpec("priority", value: "PRIORITY", "normal (default: not under warning pressure) or high")],
        arguments: 2...2,
        run: { invocation in
            var parameters: JSONObject = ["app": .string(try Check.app(invocation.arguments[0]))]
            parameters["payload"] = .object(try Check.jsonObject(invocation.arguments[1], option: "JSON"))
            if let priority = invocation.options.value("priority") {
                parameters["priority"] = .string(try Check.oneOf(priority, Check.notificationPriorities, option: "--priority"))
            }
            let reply = try invocation.call("Notify", parameters)
            try invocation.reportChange(reply, primary: reply.text("notification") ?? "?")
        })

    /// io.scened.App's calls are for the app's owner and administrators; for an app scened
    /// starts itself, only from its attached process or an administrator while one is attached.
    static let appCallNote = "It makes the app's own request (io.scened.App), for the app's owner and administrators; for an app scened starts itself (ExecStart=) its process must be attached, and then only that process or an administrator may make it (NotAttached otherwise, exit status 1)."

    static let schedule = Verb(
        "schedule", section: .tasks, synopsis: "APP IDENTIFIER [--kind KIND] [--at TIME | --in SPAN]",
        summary: "Schedule a background task for an app (BGTaskScheduler.submit)",
        details: "The app is woken for it (performBackgroundTask) at or after the time given, now without one. Scheduling an identifier again replaces it. " + appCallNote,
        options: [
            OptionSpec("kind", value: "KIND", "refresh (default) or processing"),
            OptionSpec("at", value: "TIME", "Not before TIME: 'YYYY-MM-DD HH:MM[:SS]' (local time, or with ' UTC'), or @SECONDS since the epoch"),
            OptionSpec("in", value: "SPAN", "Not before SPAN from now (systemd time span: 30s, 5min, 1h)"),
        ],
        arguments: 2...2,
        run: { invocation in
            var parameters: JSONObject = ["app": .string(try Check.app(invocation.arguments[0]))]
            parameters["identifier"] = .string(try Check.taskIdentifier(invocation.arguments[1]))
            parameters["kind"] = .string(try Check.oneOf(invocation.options.value("kind") ?? "refresh", Check.taskKinds, option: "--kind"))
            switch (invocation.options.value("at"), invocation.options.value("in")) {
            case (let at?, nil): parameters["earliestBegin"] = .int(try Check.wallTime(at, option: "--at", utc: invocation.context.utc))
            case (nil, let span?):
                guard let offset = TimeSpan(parsing: span), offset.microseconds >= 0 else {
                    throw ControlError.usage("invalid --in '\(span)'; expected a time span such as 30s, 5min, 1h")
                }
                parameters["earliestBegin"] = .int(Int64(clamping: invocation.context.now()) &+ offset.microseconds)
            case (nil, nil): break
            case (_?, _?): throw ControlError.usage("schedule takes either --at or --in, not both")
            }
            try invocation.reportChange(try invocation.callApp("ScheduleBackgroundTask", parameters))
        })

    static let cancelTask = Verb(
        "cancel-task", section: .tasks, synopsis: "APP IDENTIFIER",
        summary: "Cancel an app's scheduled background task",
        details: "Exit status 4 if no task of that identifier waits. " + appCallNote,
        arguments: 2...2,
        run: { invocation in
            let app = try Check.app(invocation.arguments[0])
            let identifier = try Check.taskIdentifier(invocation.arguments[1])
            try invocation.reportChange(try invocation.callApp("CancelBackgroundTask", ["app": .string(app), "identifier": .string(identifier)]))
        })
}

extension Check {
    static let notificationPriorities = NotificationPriority.allCases.map(\.name)
    static let taskKinds = [WakeKind.refresh.name, WakeKind.processing.name]
    /// io.scened.App's limit on a task identifier, in bytes.
    static let maxTaskIdentifierBytes = 255

    static func taskIdentifier(_ text: String) throws(ControlError) -> String {
        guard !text.isEmpty, text.utf8.count <= maxTaskIdentifierBytes else {
            throw .usage("invalid task identifier '\(text)'; it must be 1 to \(maxTaskIdentifierBytes) bytes")
        }
        return text
    }
}
