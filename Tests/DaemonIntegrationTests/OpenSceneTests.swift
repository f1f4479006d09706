import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Issue 37 item 5 against the real scened: which scene an Open reaches by activation
/// conditions among several, the order of its events, and what is refused (bad URLs, unknown
/// schemes, oversized payloads, two apps claiming one scheme).
@Suite("Open: routing to the right scene (issue 37)", .serialized)
struct OpenSceneTests {
    static let notes = "com.example.notes"
    static let editType = "com.example.notes.edit"

    /// scened with the notes app routed (notes:, its edit activity), the app attached and
    /// `count` background scenes connected.
    static func notesApp(scenes count: Int, routing: [String] = []) throws -> (DaemonProcess, AttachedApp, [String]) {
        let workspace = try Workspace(configuration: Routes.configuration(suspendDelay: "60s", routing: routing))
        try Routes.appFile(workspace, notes, schemes: ["notes"], types: [editType])
        let daemon = try DaemonProcess(workspace)
        let app = try AttachedApp(daemon, app: notes)
        _ = try app.events(through: "didFinishLaunching")
        var sessions: [String] = []
        for _ in 0..<count {
            sessions.append(try Routes.sessionID(try daemon.call("Connect", ["app": .string(notes), "background": true])))
        }
        _ = try app.drain()
        return (daemon, app, sessions)
    }

    static func conditions(_ app: AttachedApp, _ session: String, can: [String]?, prefers: [String]?) throws {
        var p: JSONObject = ["session": .string(session)]
        if let can { p["canActivateFor"] = .array(can.map { .string($0) }) }
        if let prefers { p["prefersToActivateFor"] = .array(prefers.map { .string($0) }) }
        try app.call("SetActivationConditions", p)
    }

    @Test("three scenes with conditions: prefers beats can beats a more foreground scene; no match connects a new scene with the URL in willConnectTo; an activity follows its targetContentIdentifier, and one without any reaches only a scene accepting any",
          .timeLimit(.minutes(2)))
    func conditionsChooseTheScene() throws {
        let (daemon, app, s) = try Self.notesApp(scenes: 3)
        defer { try? daemon.stop() }
        let (inbox, work, archive) = (s[0], s[1], s[2])
        try Self.conditions(app, inbox, can: ["notes:inbox/*", "notes:work/*"], prefers: ["notes:inbox/urgent/*"])
        try Self.conditions(app, work, can: ["notes:work/*"], prefers: ["notes:work/*"])
        try Self.conditions(app, archive, can: ["notes:archive/?"], prefers: nil)
        try daemon.call("Activate", ["session": .string(inbox)])
        _ = try app.drain()

        // (url, the scene expected): activate false keeps every scene where it is.
        let cases: [(String, String)] = [
            ("notes:work/42", work),              // prefers, over the foregroundActive inbox that can
            ("notes:inbox/urgent/1", inbox),      // prefers
            ("notes:archive/7", archive),         // can ("?": one character)
            ("notes:inbox/plain", inbox),         // can
        ]
        for (url, expected) in cases {
            let reply = try Routes.open(daemon, url: url, activate: false)
            #expect(reply["app"]?.stringValue == Self.notes && reply["session"]?.stringValue == expected && reply["open"] == nil,
                    "\(url): \(reply)")
            #expect(Routes.briefs(reply) == ["openURLContexts \(expected)"], "\(url): \(Routes.briefs(reply))")
            let got = try #require(try app.next(), "the app got nothing for \(url)")
            #expect(got.event == "openURLContexts" && got.session == expected && Routes.urls(got) == [url], "\(url): \(got.object)")
        }

        // Nothing accepts notes:archive/77 ("?" is one character): a new scene is connected,
        // in the background as activate is false, with the URL in willConnectTo.
        let fresh = try Routes.open(daemon, url: "notes:archive/77", activate: false)
        let newSession = try #require(fresh["session"]?.stringValue)
        #expect(!s.contains(newSession), "a new scene, not one of \(s): \(fresh)")
        let freshBriefs = Routes.briefs(fresh)
        #expect(freshBriefs.prefix(2) == ["configurationForConnecting \(newSession)", "willConnectTo \(newSession)"]
                && !freshBriefs.contains("openURLContexts \(newSession)") && !freshBriefs.contains("didBecomeActive \(newSession)"),
                "\(freshBriefs)")
        let connect = try #require(try app.events(through: "willConnectTo").last)
        #expect(Routes.urls(connect) == ["notes:archive/77"] && connect.object["reconnect"]?.boolValue == false, "\(connect.object)")
        _ = try app.drain()
        #expect(try daemon.call("GetSession", ["session": .string(newSession)])["session"]?["state"]?.stringValue == "background")

        // The new scene declared nothing: it accepts any, and takes what the others refuse.
        let drafts = try Routes.open(daemon, url: "notes:drafts/1", activate: false)
        #expect(drafts["session"]?.stringValue == newSession && Routes.briefs(drafts) == ["openURLContexts \(newSession)"], "\(drafts)")
        _ = try app.drain()

        // An activity: its targetContentIdentifier decides (work prefers notes:work/*).
        let activity: JSONObject = ["activityType": .string(Self.editType), "title": "Edit",
                                    "userInfo": ["note": 9], "targetContentIdentifier": "notes:work/9"]
        let continued = try Routes.open(daemon, activity: activity, activate: false)
        #expect(continued["session"]?.stringValue == work && Routes.briefs(continued) == ["continueUserActivity \(work)"],
                "\(continued)")
        let cont = try #require(try app.next())
        let handed = cont.object["userActivities"]?.arrayValue?.first
        #expect(cont.event == "continueUserActivity" && handed?["activityType"]?.stringValue == Self.editType
                && handed?["userInfo"]?["note"]?.intValue == 9 && handed?["title"]?.stringValue == "Edit", "\(cont.object)")

        // Without a targetContentIdentifier only a scene accepting any takes it: the new one
        // (default conditions), not the three that declared theirs.
        let anyOne = try Routes.open(daemon, activity: ["activityType": .string(Self.editType)], activate: false)
        #expect(anyOne["session"]?.stringValue == newSession, "nil matches only \"any\": \(anyOne)")
        try Wakes.assertConformant(daemon, "routing by conditions")
    }

    @Test("among scenes accepting any: foregroundActive first, then the most recently active; with activate a background scene gets willEnterForeground, the URL, didBecomeActive; a given session reaches it whatever its conditions",
          .timeLimit(.minutes(2)))
    func orderAndActivation() throws {
        let (daemon, app, s) = try Self.notesApp(scenes: 2)
        defer { try? daemon.stop() }
        let (a, b) = (s[0], s[1])
        try daemon.call("Activate", ["session": .string(a)])
        _ = try app.drain()

        let first = try Routes.open(daemon, url: "notes:1")
        #expect(first["session"]?.stringValue == a && Routes.briefs(first) == ["openURLContexts \(a)"],
                "the foregroundActive scene, nothing else: \(Routes.briefs(first))")
        _ = try app.drain()

        // b, given, with activate: brought forward around the URL.
        let given = try Routes.open(daemon, url: "notes:2", session: b)
        #expect(Routes.briefs(given) == ["willEnterForeground \(b)", "openURLContexts \(b)", "didBecomeActive \(b)"],
                "\(Routes.briefs(given))")
        let seen = try app.drain()
        #expect(seen.map { "\($0.event) \($0.session ?? "-")" }
                == ["willEnterForeground \(b)", "openURLContexts \(b)", "didBecomeActive \(b)"], "\(seen)")
        #expect(seen.first { $0.event == "openURLContexts" }?.state == "foregroundInactive", "the URL before didBecomeActive")

        // Both home, b first: a is the more recently active one.
        for id in [b, a] { try daemon.call("Background", ["session": .string(id)]) }
        _ = try app.drain()
        let recent = try Routes.open(daemon, url: "notes:3", activate: false)
        #expect(recent["session"]?.stringValue == a && Routes.briefs(recent) == ["openURLContexts \(a)"],
                "the most recently active, left in the background: \(Routes.briefs(recent))")
        for step in ["Activate", "Background"] { try daemon.call(step, ["session": .string(b)]) }
        _ = try app.drain()
        let swapped = try Routes.open(daemon, url: "notes:4", activate: false)
        #expect(swapped["session"]?.stringValue == b, "b is now the more recent: \(swapped)")
        #expect(try app.drain().map(\.event) == ["openURLContexts"])

        // A given session ignores conditions that refuse the URL.
        try Self.conditions(app, a, can: ["notes:never"], prefers: nil)
        let forced = try Routes.open(daemon, url: "notes:5", session: a, activate: false)
        #expect(forced["session"]?.stringValue == a, "\(forced)")

        // Another app's session: NotOwnSession naming both.
        let other = try Routes.sessionID(try daemon.call("Connect", ["app": "com.example.other", "background": true]))
        let refused = Routes.refusal("Open in another app's session") { try Routes.open(daemon, url: "notes:6", session: other) }
        #expect(refused?.name == "NotOwnSession" && refused?.parameters["session"]?.stringValue == other
                && refused?.parameters["app"]?.stringValue == Self.notes, "\(String(describing: refused))")
        try Wakes.assertConformant(daemon, "routing order")
    }

    @Test("an app opens another app's URL through io.scened.App.Open: the target's scene gets it with sourceApplication set to the caller; RequestSceneSessionActivation with a url connects a scene holding it",
          .timeLimit(.minutes(2)))
    func appOpensAnotherApp() throws {
        let (daemon, notesApp, s) = try Self.notesApp(scenes: 1)
        defer { try? daemon.stop() }
        let maps = "com.example.maps"
        try Routes.appFile(daemon.workspace, maps, schemes: ["maps"])
        try daemon.call("Reload")
        let mapsApp = try AttachedApp(daemon, app: maps)
        _ = try mapsApp.events(through: "didFinishLaunching")
        let mapsSession = try Routes.sessionID(try daemon.call("Connect", ["app": .string(maps)]))
        _ = try mapsApp.drain()

        let reply = try notesApp.call("Open", ["url": "maps:?q=Museumsinsel"])
        #expect(reply["target"]?.stringValue == maps && reply["session"]?.stringValue == mapsSession, "\(reply)")
        let got = try #require(try mapsApp.next())
        let context = got.object["urlContexts"]?.arrayValue?.first
        #expect(got.event == "openURLContexts" && context?["url"]?.stringValue == "maps:?q=Museumsinsel"
                && context?["sourceApplication"]?.stringValue == Self.notes, "\(got.object)")
        let unknown = Routes.refusal("an app opening an unknown scheme") { try notesApp.call("Open", ["url": "nobody:x"]) }
        #expect(unknown?.name == "NoHandler", "\(String(describing: unknown))")

        // Its own new scene with a URL (UIKit's requestSceneSessionActivation with a userActivity).
        let requested = try notesApp.call("RequestSceneSessionActivation", ["url": "notes:compose"])
        let id = try #require(requested["session"]?.stringValue)
        #expect(!s.contains(id))
        let connect = try #require(try notesApp.events(through: "willConnectTo").last)
        #expect(connect.session == id && Routes.urls(connect) == ["notes:compose"]
                && connect.object["urlContexts"]?.arrayValue?.first?["sourceApplication"]?.stringValue == Self.notes,
                "\(connect.object)")
    }

    @Test("an archived session given: reconnected, its willConnectTo has reconnect and the URL; a Discarded one is refused",
          .timeLimit(.minutes(2)))
    func archivedSessionReconnects() throws {
        let (daemon, app, s) = try Self.notesApp(scenes: 2)
        defer { try? daemon.stop() }
        try daemon.call("Disconnect", ["session": .string(s[0])])
        _ = try app.drain()
        let reply = try Routes.open(daemon, url: "notes:back", session: s[0], activate: false)
        #expect(reply["session"]?.stringValue == s[0], "\(reply)")
        let connect = try #require(try app.events(through: "willConnectTo").last)
        #expect(connect.session == s[0] && connect.object["reconnect"]?.boolValue == true && Routes.urls(connect) == ["notes:back"],
                "\(connect.object)")
        try daemon.call("Discard", ["session": .string(s[1])])
        let gone = Routes.refusal("Open in a discarded session") { try Routes.open(daemon, url: "notes:x", session: s[1]) }
        #expect(gone?.name == "SessionDiscarded" || gone?.name == "NoSuchSession", "\(String(describing: gone))")
    }
}
