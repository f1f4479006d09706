import Foundation
import Glibc
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// open, routes and desktop-entries against the real scened, and the real xdg-open reaching an
/// app attached to it: the URL arrives in the app's events. Hostile: schemes the configuration
/// must refuse, and an app removed behind the desktop entries' back.
@Suite(.serialized) struct RoutingDaemonTests {
    static func scenectl(_ daemon: DaemonProcess, _ arguments: [String], environment: [String: String?] = [:]) throws -> Completed {
        var env = environment
        env["TZ"] = "UTC"
        return try run([try Binaries.require(Binaries.scenectl), "--socket", daemon.socketPath, "--no-pager"] + arguments,
                       environment: env, timeout: 60)
    }

    static func workspace(_ apps: [String: String]) throws -> Workspace {
        let workspace = try Workspace()
        mkdir(workspace.directory.file("apps.d"), 0o755)
        for (app, text) in apps { try writeTextFile(workspace.directory.file("apps.d/\(app).conf"), text) }
        return workspace
    }

    static let notes = "[App]\nURLSchemes=notes Notes2\nActivityTypes=org.example.notes.edit\n"

    @Test(.timeLimit(.minutes(3))) func routesEntriesAndAnAppRemovedBehindTheirBack() throws {
        let xdgOpen = try SystemTools.require("xdg-open", for: "the desktop registration test (xdg-utils)")
        let workspace = try Self.workspace(["org.example.notes": Self.notes, "com.example.maps": "[App]\nURLSchemes=maps\n"])
        let daemon = try DaemonProcess(workspace)
        defer { try? daemon.stop() }
        let appsDirectory = workspace.directory.file("apps.d")

        let routes = try Self.scenectl(daemon, ["routes", "--no-legend"])
        #expect(routes.status == 0, "\(routes.summary)")
        let rows = routes.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.contains(["scheme", "notes", "org.example.notes", appsDirectory + "/org.example.notes.conf"]), "\(routes.stdout)")
        #expect(rows.contains(["scheme", "notes2", "org.example.notes", appsDirectory + "/org.example.notes.conf"]), "lowercased")
        #expect(rows.contains(["scheme", "maps", "com.example.maps", appsDirectory + "/com.example.maps.conf"]))
        #expect(rows.contains(["activityType", "org.example.notes.edit", "org.example.notes", appsDirectory + "/org.example.notes.conf"]))

        let root = TemporaryDirectory(prefix: "scened-xdg")
        defer { root.remove() }
        let env = try XdgOpenTests.environment(root.path), entries = root.path + "/home/.local/share/scened-desktop/applications"
        let written = try Self.scenectl(daemon, ["desktop-entries", "--directory", entries], environment: env)
        #expect(written.status == 0 && written.stdout == "\(entries): 2 entries\n", "\(written.summary)")
        #expect(readTextFile(entries + "/mimeinfo.cache").contains("\nx-scheme-handler/maps=scened-com.example.maps.desktop;\n"))

        // notes is not running (it attaches on its own): the open is stored, its id printed.
        let stored = try Self.scenectl(daemon, ["open", "notes:later"])
        #expect(stored.status == 0 && stored.stdout.range(of: #"^org\.example\.notes o[0-9]+\n$"#, options: .regularExpression) != nil,
                "\(stored.summary)")
        let unknown = try Self.scenectl(daemon, ["open", "gopher:x"])
        #expect(unknown.status == 6 && unknown.stdout.isEmpty && unknown.stderr.hasPrefix("scenectl: ") && unknown.stderr.contains("gopher"),
                "\(unknown.summary)")

        // maps goes, and only scenectl reload runs: its entry is still there, and leads nowhere.
        unlink(appsDirectory + "/com.example.maps.conf")
        #expect(try Self.scenectl(daemon, ["reload"]).status == 0)
        let gone = try run([xdgOpen, "maps:somewhere"], environment: env, in: root.path)
        #expect(gone.status == 4 && gone.stderr.contains("scenectl: ") && gone.stderr.contains("maps"), "\(gone.summary)")
        let again = try Self.scenectl(daemon, ["desktop-entries", "--directory", entries], environment: env)
        #expect(again.status == 0 && again.stdout == "\(entries): 1 entry, removed scened-com.example.maps.desktop\n", "\(again.summary)")
    }

    /// What the entries could not carry never gets that far: the configuration refuses it,
    /// naming the file, and the configuration in force stays.
    @Test(.timeLimit(.minutes(3))) func schemesTheConfigurationRefuses() throws {
        let workspace = try Self.workspace(["org.example.notes": Self.notes])
        let daemon = try DaemonProcess(workspace)
        defer { try? daemon.stop() }
        let bad = workspace.directory.file("apps.d/org.example.bad.conf")
        for schemes in ["no;tes", "1abc", "x\"y", "a%b", "with:colon"] {
            try writeTextFile(bad, "[App]\nURLSchemes=\(schemes)\n")
            let reload = try Self.scenectl(daemon, ["reload"])
            #expect(reload.status == 1 && reload.stderr.contains(bad), "\(schemes): \(reload.summary)")
            let check = try run([try Binaries.require(Binaries.scened), "--check-config", "--config", workspace.configPath], timeout: 30)
            #expect(check.status != 0 && (check.stdout + check.stderr).contains(bad), "\(schemes): \(check.summary)")
        }
        // Two apps claiming one scheme: both files named.
        try writeTextFile(bad, "[App]\nURLSchemes=NOTES\n")
        let claimed = try Self.scenectl(daemon, ["reload"])
        #expect(claimed.status == 1 && claimed.stderr.contains("org.example.bad.conf") && claimed.stderr.contains("org.example.notes.conf"),
                "\(claimed.summary)")
        let routes = try Self.scenectl(daemon, ["routes", "--json"])
        #expect(routes.status == 0 && !routes.stdout.contains("org.example.bad"), "the old configuration stays: \(routes.summary)")
    }

    /// The whole way: xdg-open, the entry, scenectl open, scened, and the app attached to it,
    /// which gets the URL in a new scene's willConnectTo, then in openURLContexts.
    @Test(.timeLimit(.minutes(3))) func xdgOpenDeliversTheURLToTheAttachedApp() throws {
        let xdgOpen = try SystemTools.require("xdg-open", for: "the desktop registration test (xdg-utils)")
        let daemon = try DaemonProcess(try Self.workspace(["org.example.notes": Self.notes]))
        defer { try? daemon.stop() }
        let app = try RoutedApp(daemon, app: "org.example.notes")
        _ = try app.events(through: "didFinishLaunching")

        let root = TemporaryDirectory(prefix: "scened-xdg")
        defer { root.remove() }
        let env = try XdgOpenTests.environment(root.path), entries = root.path + "/home/.local/share/scened-desktop/applications"
        #expect(try Self.scenectl(daemon, ["desktop-entries", "--directory", entries], environment: env).status == 0)

        let first = try run([xdgOpen, "notes:hello?x=1&y=2"], environment: env, in: root.path)
        #expect(first.status == 0, "\(first.summary)")
        let connected = try app.events(through: "willConnectTo").last!
        #expect(connected.urls == ["notes:hello?x=1&y=2"], "\(connected.object)")
        let session = try #require(connected.object["session"]?.stringValue)

        let second = try run([xdgOpen, "notes:again"], environment: env, in: root.path)
        #expect(second.status == 0, "\(second.summary)")
        let opened = try app.events(through: "openURLContexts").last!
        #expect(opened.urls == ["notes:again"] && opened.object["session"]?.stringValue == session, "\(opened.object)")

        // Schemes are case-insensitive to scened (xdg-open 1.1.3 looks the type up as written,
        // so through it only the lowercase spelling that the entries declare is found).
        let upper = try Self.scenectl(daemon, ["open", "-v", "NOTES:Upper"])
        #expect(upper.status == 0 && upper.stdout.hasPrefix("org.example.notes \(session)\n"), "\(upper.summary)")
        #expect(upper.stdout.contains(" openURLContexts ") && upper.stdout.contains(" NOTES:Upper\n"), "-v shows the URL: \(upper.stdout)")
        #expect(try app.events(through: "openURLContexts").last!.urls == ["NOTES:Upper"])
    }
}

/// An app attached over io.scened.App.Attach, reading its event stream.
final class RoutedApp {
    struct Event {
        var object: JSONObject
        var name: String { object["event"]?.stringValue ?? "?" }
        var urls: [String] { object["urlContexts"]?.arrayValue?.compactMap { $0["url"]?.stringValue } ?? [] }
    }

    let stream: RawConnection

    init(_ daemon: DaemonProcess, app: String) throws {
        stream = try RawConnection(path: daemon.socketPath)
        try stream.sendCall("io.scened.App.Attach", ["app": .string(app)], more: true)
        let first = try stream.receiveObject(timeout: 10)
        guard first.errorName == nil, first.parametersObject["attached"] != nil else { throw TestFailure("Attach \(app) failed: \(first)") }
    }

    /// Events until (and with) the first named `name`, within `timeout` seconds.
    func events(through name: String, timeout: Double = 10) throws -> [Event] {
        var out: [Event] = []
        while true {
            let reply = try stream.receiveObject(timeout: timeout)
            if let error = reply.errorName { throw TestFailure("the attach ended with \(error): \(reply)") }
            guard let event = reply.parametersObject["event"]?.objectValue else { throw TestFailure("not an event: \(reply)") }
            out.append(Event(object: event))
            if out.last!.name == name { return out }
        }
    }
}
