import Glibc
import SceneCore
import Varlink

// Issue 37: opening URLs and continuing activities through scened (io.scened.Manager Open),
// the table of who handles what (ListRoutes), and the desktop's registration of it.

extension Verb {
    static let activityOptions = ["title", "user-info", "target", "webpage-url"]

    static let open = Verb(
        "open", section: .routing, synopsis: "URL | --activity TYPE [--session S] [--background]",
        summary: "Open a URL or continue an activity in the app that handles it",
        details: "The app is the one whose [App] URLSchemes= has the URL's scheme (ActivityTypes= the activity's type); the scene is the session given, else a connected scene whose activation conditions take the URL, else a new one. Prints the app and the session that got it, or, for an app that is not running, the id of the stored open (o<number>) delivered when it launches. Exit status 6 if no app handles the scheme or type. For the app's owner and administrators.",
        options: [
            OptionSpec("session", value: "SESSION", "Open it in SESSION (one of the app's)"),
            OptionSpec("background", "Do not bring the scene to the foreground; it gets the URL in its state"),
            OptionSpec("activity", value: "TYPE", "Continue an activity of TYPE instead of opening a URL"),
            OptionSpec("title", value: "TEXT", "The activity's title"),
            OptionSpec("user-info", value: "JSON", "The activity's userInfo, a JSON object"),
            OptionSpec("target", value: "ID", "The activity's targetContentIdentifier (matched against the scenes' activation conditions)"),
            OptionSpec("webpage-url", value: "URL", "The activity's webpageURL"),
        ],
        arguments: 0...1,
        run: { invocation in
            let reply: JSONObject
            do {
                reply = try invocation.call("Open", try openParameters(invocation))
            } catch let error as VarlinkError where error.name == ErrorReport.interface + ".NoHandler" {
                throw CommandExit(ExitStatus.noHandler, message: ErrorReport.message(for: error))
            }
            let target = reply.text("session") ?? reply.text("open") ?? "?"
            try invocation.reportChange(reply, primary: "\(reply.text("app") ?? "?") \(target)")
        })

    /// Manager.Open's parameters: exactly one of a URL and an activity, both checked here.
    static func openParameters(_ invocation: Invocation) throws(ControlError) -> JSONObject {
        let options = invocation.options
        var parameters = JSONObject()
        switch (invocation.arguments.first, options.value("activity")) {
        case (let url?, nil):
            if let stray = activityOptions.first(where: { options.value($0) != nil }) {
                throw .usage("--\(stray) belongs to --activity, not to a URL")
            }
            parameters["url"] = .string(try Check.url(url))
        case (nil, let type?): parameters["activity"] = .object(try activity(type, options))
        case (nil, nil): throw .usage("'open': give a URL or --activity TYPE (usage: scenectl open \(Verb.open.synopsis))")
        case (_?, _?): throw .usage("'open' takes a URL or --activity, not both")
        }
        if let session = options.value("session") { parameters["session"] = .string(try Check.session(session)) }
        if options.flag("background") { parameters["activate"] = .bool(false) }
        return parameters
    }

    static func activity(_ type: String, _ options: ParsedOptions) throws(ControlError) -> JSONObject {
        var activity: JSONObject = ["activityType": .string(try Check.text(type, option: "--activity"))]
        if let title = options.value("title") { activity["title"] = .string(try Check.text(title, option: "--title")) }
        if let info = options.value("user-info") { activity["userInfo"] = .object(try Check.jsonObject(info, option: "--user-info")) }
        if let target = options.value("target") {
            activity["targetContentIdentifier"] = .string(try Check.text(target, option: "--target"))
        }
        if let page = options.value("webpage-url") { activity["webpageURL"] = .string(try Check.url(page, option: "--webpage-url")) }
        return activity
    }

    static let routes = Verb(
        "routes", section: .routing, summary: "List which app handles each URL scheme and activity type",
        details: "From the apps' [App] URLSchemes= and ActivityTypes=, with the apps.d file each came from.",
        run: { invocation in
            let reply = try invocation.call("ListRoutes")
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(routeTable(reply.objects("routes")).render(legend: !invocation.global.noLegend))
        })

    static func routeTable(_ routes: [JSONObject]) -> Table {
        var table = Table([.init("KIND"), .init("NAME"), .init("APP"), .init("FILE")],
                          footer: Table.count(routes.count, "route", "routes"))
        for route in routes {
            table.append([route.text("kind") ?? "?", route.text("name") ?? "?", route.text("app") ?? "?", route.text("file") ?? "-"])
        }
        return table
    }
}

extension Check {
    /// What Open accepts: an RFC 3986 scheme and no control characters or spaces (a URL with a
    /// space is two words to every program that reads it back).
    static func url(_ text: String, option: String = "URL") throws(ControlError) -> String {
        guard URLContext.scheme(of: text) != nil else {
            throw .usage("invalid \(option) '\(DesktopEntries.escaped(text))': it needs a scheme (RFC 3986: a letter, then letters, digits, + - or ., then ':')")
        }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw .usage("invalid \(option) '\(DesktopEntries.escaped(text))': spaces and control characters must be percent-encoded")
        }
        return text
    }

    /// A non-empty text without control characters.
    static func text(_ text: String, option: String) throws(ControlError) -> String {
        guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .usage("invalid \(option): it must be a non-empty text without control characters")
        }
        return text
    }
}
