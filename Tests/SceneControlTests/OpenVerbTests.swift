import Testing
import Varlink
@testable import SceneControl

/// scenectl open and routes: what is printed, what is refused before connecting, and NoHandler's
/// own exit status.
@Suite struct OpenVerbTests {
    static func noHandler(_ scheme: String) -> VarlinkError {
        VarlinkError(name: "io.scened.Manager.NoHandler", parameters: ["scheme": .string(scheme), "message": .string("no app handles the URL scheme \(scheme)")])
    }

    @Test func printsTheAppAndTheSessionOrTheStoredOpen() {
        let delivered: JSONObject = ["app": "org.example.notes", "session": "s3", "events": [
            ["seq": 7, "time": 0, "event": "openURLContexts", "app": "org.example.notes", "session": "s3", "state": "foregroundActive"],
        ]]
        let now = ctl(["open", "notes:hello"], replies: ["Open": [.success(delivered)]])
        #expect(now.status == 0 && now.out == "org.example.notes s3\n" && now.err.isEmpty)
        #expect(ctl(["open", "notes:hello", "-v"], replies: ["Open": [.success(delivered)]]).out.contains("openURLContexts"))
        let stored = ctl(["open", "notes:later"], replies: ["Open": [.success(["app": "org.example.notes", "open": "o2", "events": []])]])
        #expect(stored.out == "org.example.notes o2\n")
        #expect(ctl(["-q", "open", "notes:x"], replies: ["Open": [.success(delivered)]]).out.isEmpty)
    }

    @Test func noHandlerHasItsOwnStatus() {
        let result = ctl(["open", "gopher:x"], replies: ["Open": [.failure(Self.noHandler("gopher"))]])
        #expect(result.status == ExitStatus.noHandler && result.status == 6)
        #expect(result.err == "scenectl: no app handles the URL scheme gopher\n" && result.out.isEmpty)
        // Other verbs, and other errors of open, keep the usual statuses.
        let notOwn = VarlinkError(name: "io.scened.Manager.NotOwnSession", parameters: ["app": "org.example.notes", "session": "s9",
                                                                                      "message": "s9 is not org.example.notes's"])
        #expect(ctl(["open", "notes:x", "--session", "s9"], replies: ["Open": [.failure(notOwn)]]).status == 1)
        #expect(ctl(["open", "notes:x"], replies: ["Open": [.failure(.permissionDenied())]]).status == 5)
    }

    @Test(arguments: [
        (["open"], "'open': give a URL or --activity TYPE"),
        (["open", "notes:x", "--activity", "a.b"], "'open' takes a URL or --activity, not both"),
        (["open", "notes:x", "--title", "T"], "--title belongs to --activity, not to a URL"),
        (["open", "hello"], "invalid URL 'hello': it needs a scheme"),
        (["open", "--", "--help"], "invalid URL '--help': it needs a scheme"),
        (["open", "1notes:x"], "invalid URL '1notes:x': it needs a scheme"),
        (["open", "no tes:x"], "invalid URL 'no tes:x': it needs a scheme"),
        (["open", "notes:a b"], "invalid URL 'notes:a b': spaces and control characters must be percent-encoded"),
        (["open", "notes:a\nb"], "invalid URL 'notes:a\\x0ab': spaces and control characters"),
        (["open", "--activity", ""], "invalid --activity: it must be a non-empty text"),
        (["open", "--activity", "a.b", "--user-info", "[1]"], "--user-info must be a JSON object"),
        (["open", "--activity", "a.b", "--webpage-url", "example.org"], "invalid --webpage-url 'example.org'"),
        (["open", "notes:x", "--session", "x"], "'x' is not a session id"),
        (["open", "a:b", "c:d"], "'open': too many arguments"),
        (["routes", "x"], "'routes' takes no arguments"),
    ])
    func refusedBeforeConnecting(_ arguments: [String], _ message: String) {
        let result = ctl(arguments)
        #expect(result.status == 2, "\(arguments)")
        #expect(result.err.hasPrefix("scenectl: " + message), "\(result.err)")
        #expect(result.connections.isEmpty)
    }

    /// -v and monitor show what a scene was opened with; nothing where the daemon withheld it.
    @Test func eventDetailsShowTheURLsAndActivities() {
        let opened: JSONObject = ["seq": 6, "time": 0, "event": "openURLContexts", "app": "org.example.notes", "session": "s1",
                                  "state": "foregroundActive",
                                  "urlContexts": [["url": "notes:hello"], ["url": "notes:x\u{1b}[2J", "sourceApplication": "com.example.mail"]]]
        #expect(EventTable.detail(opened) == "notes:hello; notes:x\\x1b[2J from com.example.mail")
        let continued: JSONObject = ["seq": 7, "event": "continueUserActivity",
                                     "userActivities": [["activityType": "org.example.notes.edit", "targetContentIdentifier": "note-3"]]]
        #expect(EventTable.detail(continued) == "activity org.example.notes.edit for note-3")
        let long = String(repeating: "a", count: 200)
        #expect(EventTable.detail(["event": "willConnectTo", "urlContexts": [["url": .string("notes:" + long)]]]) == "notes:" + long.prefix(71) + "...")
        #expect(EventTable.detail(["event": "openURLContexts", "app": "org.example.notes"]).isEmpty, "withheld")
        let table = EventTable.table([opened]).render(legend: true)
        #expect(table.contains("DETAIL") && table.contains("notes:hello"), "\(table)")
    }

    @Test func routesTable() {
        let routes: JSONObject = ["routes": [
            ["kind": "scheme", "name": "notes", "app": "org.example.notes", "file": "/etc/scened/apps.d/org.example.notes.conf"],
            ["kind": "activityType", "name": "org.example.notes.edit", "app": "org.example.notes", "file": "/etc/scened/apps.d/org.example.notes.conf"],
        ]]
        let result = ctl(["routes"], replies: ["ListRoutes": [.success(routes)]])
        #expect(result.status == 0)
        #expect(result.out == """
            KIND         NAME                   APP               FILE
            scheme       notes                  org.example.notes /etc/scened/apps.d/org.example.notes.conf
            activityType org.example.notes.edit org.example.notes /etc/scened/apps.d/org.example.notes.conf

            2 routes listed.

            """)
        #expect(ctl(["routes", "--json"], replies: ["ListRoutes": [.success(routes)]]).out == JSONValue.object(routes).serializedString() + "\n")
    }
}
