import ScenedTestSupport
import Testing
import Varlink

/// What the routing suites (issue 37) share: apps.d files with schemes, Open, its errors, and
/// the URLs an app's events carried.
enum Routes {
    /// Wakes' calm configuration (a suspended app is frozen 300 ms after going home) and a
    /// `[Routing]` section.
    static func configuration(suspendDelay: String = "300ms", routing: [String] = []) -> String {
        Wakes.configuration(suspendDelay: suspendDelay) + "\n[Routing]\n" + routing.joined(separator: "\n")
    }

    /// The `[App]` lines that route `schemes` and `types` to an app.
    static func appSection(schemes: [String], types: [String] = []) -> String {
        var lines = ["[App]", "URLSchemes=" + schemes.joined(separator: " ")]
        if !types.isEmpty { lines.append("ActivityTypes=" + types.joined(separator: " ")) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// apps.d/APP.conf for an app that attaches by itself (no ExecStart=).
    static func appFile(_ workspace: Workspace, _ app: String, schemes: [String], types: [String] = []) throws {
        try StartedAppTests.appFile(workspace, app, appSection(schemes: schemes, types: types))
    }

    /// io.scened.Manager.Open with the parameters given (nil ones left out).
    @discardableResult
    static func open(_ daemon: DaemonProcess, url: String? = nil, activity: JSONObject? = nil, session: String? = nil,
                     activate: Bool? = nil) throws -> JSONObject {
        var parameters: JSONObject = [:]
        if let url { parameters["url"] = .string(url) }
        if let activity { parameters["activity"] = .object(activity) }
        if let session { parameters["session"] = .string(session) }
        if let activate { parameters["activate"] = .bool(activate) }
        return try daemon.call("Open", parameters)
    }

    /// The error `body` threw: its name without the interface, and its parameters. Records an
    /// issue and returns nil when it succeeded or threw something else.
    static func refusal(_ what: String, sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: () throws -> JSONObject) -> (name: String, parameters: JSONObject)? {
        do {
            let reply = try body()
            Issue.record("\(what) was accepted: \(reply)", sourceLocation: sourceLocation)
        } catch let error as VarlinkError {
            let short = error.name.split(separator: ".").last.map(String.init) ?? error.name
            return (short, error.parameters)
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    /// "event session" of each event of a reply's `events`.
    static func briefs(_ reply: JSONObject) -> [String] {
        (reply["events"]?.arrayValue ?? []).map { e in
            "\(e["event"]?.stringValue ?? "?") \(e["session"]?.stringValue ?? "-")"
        }
    }

    /// The URLs an event carries (urlContexts).
    static func urls(_ event: ObservedEvent) -> [String] {
        (event.object["urlContexts"]?.arrayValue ?? []).compactMap { $0["url"]?.stringValue }
    }

    /// Every URL the app's processes were handed, by willConnectTo or openURLContexts, in order.
    static func delivered(_ app: WakeApp) -> [String] {
        app.events.filter { $0.event == "willConnectTo" || $0.event == "openURLContexts" }.flatMap(urls)
    }

    /// The app's record's pendingOpens (GetApp).
    static func pending(_ daemon: DaemonProcess, _ app: String) throws -> Int64? {
        try StartedAppTests.app(daemon, app)["pendingOpens"]?.intValue
    }

    /// The session of a reply's `session` (a Connect's or Activate's record).
    static func sessionID(_ reply: JSONObject) throws -> String {
        guard let id = reply["session"]?["id"]?.stringValue else { throw TestFailure("no session in \(reply)") }
        return id
    }
}
