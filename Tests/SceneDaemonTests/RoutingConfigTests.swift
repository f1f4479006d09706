import ScenedTestSupport
import Testing
import Varlink
@testable import SceneDaemon
import SceneCore

/// Issue 37: apps.d's URLSchemes= and ActivityTypes=, gathered into the RouteTable at load,
/// [Routing]'s bounds, and the checks an Open's url and activity go through.
@Suite struct RoutingConfigTests {
    private func loader(_ dir: TemporaryDirectory) -> ConfigLoader {
        var l = ConfigLoader()
        l.root = dir.path
        return l
    }

    @Test func schemesAndTypesRouteToTheirAppsCaseInsensitively() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let notes = try dir.write("etc/scened/apps.d/org.example.notes.conf",
                                  "[App]\nURLSchemes=Notes note+x\nActivityTypes=org.example.notes.editing\n")
        try dir.write("etc/scened/apps.d/com.example.maps.conf", "[App]\nURLSchemes=maps geo\n")
        let s = try loader(dir).load().settings
        let notesApp = AppID("org.example.notes")!
        #expect(s.routes.app(forScheme: "notes") == notesApp)
        #expect(s.routes.app(forScheme: "NOTES") == notesApp)
        #expect(s.routes.app(forScheme: "note+x") == notesApp)
        #expect(s.routes.app(forScheme: "geo") == AppID("com.example.maps"))
        #expect(s.routes.app(forScheme: "http") == nil)
        #expect(s.routes.app(forActivityType: "org.example.notes.editing") == notesApp)
        #expect(s.routes.app(forActivityType: "org.example.notes.Editing") == nil, "types are exact")
        #expect(s.apps[notesApp]?.urlSchemes == ["notes", "note+x"])
        #expect(s.routes.routes.map(\.name) == ["geo", "maps", "note+x", "notes", "org.example.notes.editing"])
        #expect(s.routes.routes.first { $0.name == "notes" }?.origin == RouteTable.Origin(path: notes, line: 2))
    }

    @Test func twoAppsClaimingASchemeIsAnErrorNamingBothFilesAndLines() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let a = try dir.write("etc/scened/apps.d/com.example.a.conf", "[App]\nURLSchemes=maps\n")
        let b = try dir.write("etc/scened/apps.d/com.example.b.conf", "[App]\n# comment\nURLSchemes=web MAPS\n")
        do {
            _ = try loader(dir).load()
            Issue.record("two apps claiming maps: was accepted")
        } catch {
            #expect(error.path == b && error.line == 3, "\(error)")
            #expect(error.message.contains("\(a):2") && error.message.contains("\(b):3"), "\(error.message)")
            #expect(error.message.contains("com.example.a") && error.message.contains("com.example.b"))
            #expect(error.message.contains("\"maps:\""))
        }
        // Activity types likewise; a drop-in of the same app repeating its own is no conflict.
        try dir.write("etc/scened/apps.d/com.example.b.conf", "[App]\nActivityTypes=com.example.share\n")
        try dir.write("etc/scened/apps.d/com.example.a.conf.d/more.conf", "[App]\nURLSchemes=maps\n")
        let c = try dir.write("etc/scened/apps.d/com.example.c.conf", "[App]\nActivityTypes=com.example.share\n")
        do {
            _ = try loader(dir).load()
            Issue.record("two apps claiming an activity type was accepted")
        } catch {
            #expect(error.path == c && error.others.isEmpty, "only the type conflicts: \(error.report)")
            #expect(error.message.contains("activity type \"com.example.share\""), "\(error.message)")
        }
    }

    @Test func badSchemesAndTypesAreRefusedWithFileAndLine() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        for bad in ["1abc", "maps:", "ma ps:x", "m_x", "é"] {
            let path = try dir.write("etc/scened/apps.d/com.example.a.conf", "[App]\nURLSchemes=\(bad)\n")
            do {
                _ = try loader(dir).load()
                Issue.record("URLSchemes=\(bad) was accepted")
            } catch {
                #expect(error.path == path && error.line == 2 && error.message.contains("URLSchemes="), "\(error)")
            }
        }
        try dir.write("etc/scened/apps.d/com.example.a.conf", "[App]\nActivityTypes=editing\n")
        #expect(throws: ConfigError.self) { try loader(dir).load() }
        // An empty value resets the list, as systemd's lists.
        try dir.write("etc/scened/apps.d/com.example.a.conf", "[App]\nURLSchemes=a\nURLSchemes=\nURLSchemes=b\n")
        let s = try loader(dir).load().settings
        #expect(s.routes.app(forScheme: "a") == nil && s.routes.app(forScheme: "b") == AppID("com.example.a"))
    }

    @Test func routingSectionBoundsAndTheEngineLimit() throws {
        var s = try ConfigLoader.apply([("x.conf", .success("[Routing]\nMaxURLSize=1K\nMaxActivitySize=2K\nMaxPendingOpens=3\n"))]).settings
        #expect(s.routing == RoutingSettings(maxURLSize: 1024, maxActivitySize: 2048, maxPendingOpens: 3))
        #expect(s.engineConfiguration.maxPendingOpens == 3)
        s = DaemonSettings()
        #expect(s.routing.maxURLSize == 8192 && s.routing.maxActivitySize == 16384 && s.routing.maxPendingOpens == 16)
        for bad in ["MaxURLSize=0", "MaxURLSize=2G", "MaxPendingOpens=0", "MaxActivitySize=x"] {
            #expect(throws: ConfigError.self, "\(bad)") { try ConfigLoader.apply([("x.conf", .success("[Routing]\n\(bad)\n"))]) }
        }
    }

    @Test func theShippedAppExampleLoadsAndRoutes() throws {
        let text = try readExistingTextFile(repositoryRoot + "/config/apps.d/org.example.notes.conf")
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/apps.d/org.example.notes.conf", text)
        let result = try loader(dir).load()
        #expect(result.warnings.isEmpty)
        #expect(result.settings.routes.app(forScheme: "notes") == AppID("org.example.notes"))
    }
}

/// What an Open's url and activity must be, before the engine sees them.
@Suite struct OpenInputTests {
    private let bounds = RoutingSettings(maxURLSize: 64, maxActivitySize: 200, maxPendingOpens: 4)

    private func parse(_ fields: [(String, JSONValue)]) throws(VarlinkError) -> OpenInput {
        try OpenInput.parse(CallParameters(object: JSONObject(fields)), source: AppID("com.example.src"), bounds)
    }

    private func failure(_ fields: [(String, JSONValue)]) -> VarlinkError? {
        do {
            _ = try parse(fields)
            return nil
        } catch {
            return error
        }
    }

    @Test func aURLIsRoutedByItsLowercasedSchemeAndCarriesItsSource() throws {
        let input = try parse([("url", .string("Notes:///n/42?x=1"))])
        #expect(input.route == .scheme("notes"))
        #expect(input.payload.urlContexts == [URLContext(url: "Notes:///n/42?x=1", sourceApplication: AppID("com.example.src"))])
    }

    @Test func malformedURLsNameTheParameterAndOversizedOnesTheLimit() {
        for bad in ["", "no-scheme", "1x:y", ":x", "a b:c", "notes:a b", "notes:\u{7}", "notes:\n", "notes:\u{7F}"] {
            let e = failure([("url", .string(bad))])
            #expect(e?.name == "io.scened.Manager.InvalidArgument", "\(bad.debugDescription): \(String(describing: e))")
            #expect(e?.parameters["parameter"]?.stringValue == "url")
        }
        let long = failure([("url", .string("notes:" + String(repeating: "x", count: 59)))])
        #expect(long?.name == "io.scened.Manager.LimitExceeded")
        #expect(long?.parameters["limit"]?.stringValue == "MaxURLSize" && long?.parameters["maximum"]?.intValue == 64)
        #expect(failure([("url", .string("notes:" + String(repeating: "x", count: 58)))]) == nil, "64 bytes fit")
    }

    @Test func exactlyOneOfURLAndActivity() {
        #expect(failure([])?.parameters["parameter"]?.stringValue == "url")
        let both = failure([("url", .string("a:b")), ("activity", .object(["activityType": "com.example.x"]))])
        #expect(both?.name == "io.scened.Manager.InvalidArgument")
    }

    @Test func activitiesAreCheckedAndBounded() throws {
        let ok = try parse([("activity", .object(["activityType": "com.example.edit", "title": "T",
                                                  "userInfo": .object(["n": 1]), "targetContentIdentifier": "doc-1",
                                                  "webpageURL": "https://example.com/d"]))])
        #expect(ok.route == .activityType("com.example.edit"))
        #expect(ok.payload.userActivities.first?.userInfo == "{\"n\":1}")
        #expect(ok.payload.targetContentIdentifier == "doc-1")
        let cases: [(JSONObject, String)] = [
            (["activityType": "edit"], "activity.activityType"),
            (["activityType": "com.example.edit", "userInfo": .array([1])], "activity.userInfo"),
            (["activityType": "com.example.edit", "userInfo": "text"], "activity.userInfo"),
            (["activityType": "com.example.edit", "webpageURL": "not a url"], "activity.webpageURL"),
        ]
        for (activity, parameter) in cases {
            let e = failure([("activity", .object(activity))])
            #expect(e?.parameters["parameter"]?.stringValue == parameter, "\(activity): \(String(describing: e))")
        }
        let big = failure([("activity", .object(["activityType": "com.example.edit", "title": .string(String(repeating: "t", count: 200))]))])
        #expect(big?.parameters["limit"]?.stringValue == "MaxActivitySize" && big?.parameters["maximum"]?.intValue == 200)
    }
}

/// Which apps stored Opens make scened start, and how often.
@Suite struct OpenLaunchesTests {
    @Test func onlyStartableIdleAppsAndNotAgainBeforeTheRetry() throws {
        let app = AppID("com.example.notes")!, other = AppID("com.example.attach")!
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        let t0 = Timestamp(microseconds: 1_000_000)
        for a in [app, other] {
            _ = try engine.handle(.open(OpenRequest(app: a, payload: OpenPayload(urlContexts: [URLContext(url: "n:1")]))),
                                  now: t0, effects: &effects)
        }
        var launches = OpenLaunches()
        #expect(launches.due(engine, startable: [app], now: t0) { _ in false } == [app], "the attach-only app is not started")
        #expect(launches.due(engine, startable: [app], now: t0 + .seconds(1)) { _ in false } == [], "asked already")
        #expect(launches.nextRetry == t0 + .seconds(10))
        #expect(launches.due(engine, startable: [app], now: t0 + .seconds(10)) { _ in false } == [app], "its start failed: again")
        #expect(launches.due(engine, startable: [app], now: t0 + .seconds(30)) { _ in true } == [], "busy: starting or attached")
        _ = try engine.handle(.launch(app, cause: .request), now: t0 + .seconds(40), effects: &effects)
        #expect(launches.due(engine, startable: [app], now: t0 + .seconds(40)) { _ in false } == [])
        #expect(launches.asked.isEmpty && launches.nextRetry == nil, "delivered: forgotten")
    }
}

/// An Open's journal entry: the scheme and the length, the URL only at debug.
@Suite struct OpenJournalTests {
    @Test func theURLIsLoggedOnlyAtDebug() {
        let app = AppID("org.example.notes")!
        let url = "notes:///secret?token=hunter2"
        let request = OpenRequest(app: app, payload: OpenPayload(urlContexts: [URLContext(url: url)]))
        let stored = OpenJournal.entry(request, .scheme("notes"), .open(OpenID(3)), withURL: false)
        #expect(stored.messageID == MessageID.routedOpen && stored.priority == .info)
        #expect(!stored.message.contains("hunter2") && !stored.fields.contains { $0.1.contains("hunter2") })
        #expect(stored.fields.contains { $0 == ("SCENED_OPEN", "o3") })
        #expect(stored.fields.contains { $0 == ("SCENED_URL_SIZE", String(url.utf8.count)) })
        let delivered = OpenJournal.entry(request, .scheme("notes"), .session(SessionID(7)), withURL: true)
        #expect(delivered.fields.contains { $0 == ("SCENED_URL", url) })
        #expect(delivered.fields.contains { $0 == ("SCENED_SESSION", SessionID(7).description) })
    }
}
