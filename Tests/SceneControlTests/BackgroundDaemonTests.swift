import Foundation
import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The scenectl binary's background-work verbs against the real scened: what it prints is
/// what the daemon holds, the daemon's refusals map to their exit statuses, and a flood of
/// notifications is refused at the bound while everyone else is still served.
@Suite(.serialized) struct BackgroundDaemonTests {
    /// Small bounds, to reach them; an app scened would start itself (never launched here).
    static let configuration = Workspace.calmConfiguration + """

        [Background]
        MaxPendingNotifications=3
        MaxNotificationSize=64
        """

    static func scenectl(_ daemon: DaemonProcess, _ arguments: [String]) throws -> Completed {
        try run([try Binaries.require(Binaries.scenectl), "--socket", daemon.socketPath, "--no-pager"] + arguments,
                environment: ["TZ": "UTC"], timeout: 60)
    }

    @Test(.timeLimit(.minutes(5))) func scheduleNotifyListAndCancel() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        mkdir(workspace.directory.file("apps.d"), 0o755)
        try writeTextFile(workspace.directory.file("apps.d/org.example.started.conf"), "[Launch]\nExecStart=/bin/true\n")
        try writeTextFile(workspace.directory.file("apps.d/org.example.bg.conf"), "[App]\nBackgroundModes=audio voip\n")
        let daemon = try DaemonProcess(workspace)
        defer { try? daemon.stop() }
        let app = "org.example.bg"
        let inTwoHours = Int(Date().timeIntervalSince1970) + 7_200

        let scheduled = try Self.scenectl(daemon, ["schedule", app, "bg.refresh", "--in", "1h"])
        #expect(scheduled.status == 0 && scheduled.stdout.isEmpty, "\(scheduled.summary)")
        #expect(try Self.scenectl(daemon, ["schedule", app, "bg.index", "--kind", "processing", "--at", "@\(inTwoHours)"]).status == 0)
        let notified = try Self.scenectl(daemon, ["notify", app, #"{"text":"hi"}"#])
        #expect(notified.status == 0 && notified.stdout.range(of: #"^n[0-9]+\n$"#, options: .regularExpression) != nil,
                "\(notified.summary)")

        let tasks = try Self.scenectl(daemon, ["tasks"])
        #expect(tasks.status == 0, "\(tasks.summary)")
        let lines = tasks.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("org.example.bg bg.refresh refresh ") }, "\(tasks.stdout)")
        #expect(lines.contains { $0.hasPrefix("org.example.bg bg.index   processing ") }, "\(tasks.stdout)")
        #expect(lines.contains("2 scheduled tasks listed.") && lines.contains("1 pending notification listed."), "\(tasks.stdout)")
        let json = try JSONParser.parse(try Self.scenectl(daemon, ["tasks", "--json"]).stdout)
        #expect(json["scheduled"]?.arrayValue?.count == 2 && json["notifications"]?[0]?["size"]?.intValue == 13, "\(json)")
        let at = json["scheduled"]?.arrayValue?.first { $0["identifier"] == "bg.index" }?["earliestBegin"]?.intValue
        #expect(at == Int64(inTwoHours) * 1_000_000)

        let shown = try Self.scenectl(daemon, ["show-app", app]).stdout
        #expect(shown.contains("Background: 2 scheduled, 1 notification pending, not awake"), "\(shown)")
        #expect(shown.contains("Modes: audio voip\n"), "\(shown)")
        let status = try Self.scenectl(daemon, ["status"]).stdout
        #expect(status.contains("Background: 0 apps awake (at most 4), 2 scheduled, 1 notification pending; next due "), "\(status)")

        #expect(try Self.scenectl(daemon, ["cancel-task", app, "bg.refresh"]).status == 0)
        let again = try Self.scenectl(daemon, ["cancel-task", app, "bg.refresh"])
        #expect(again.status == 4 && again.stdout.isEmpty && !again.stderr.isEmpty, "\(again.summary)")
        // An app scened starts takes its own requests only from its attached process.
        let notAttached = try Self.scenectl(daemon, ["schedule", "org.example.started", "s.refresh"])
        #expect(notAttached.status == 1 && notAttached.stderr.contains("no process is attached"), "\(notAttached.summary)")
    }

    @Test(.timeLimit(.minutes(5))) func notificationFloodIsBoundedAndOthersAreServed() throws {
        let daemon = try DaemonProcess(try Workspace(configuration: Self.configuration))
        defer { try? daemon.stop() }
        let app = "org.example.flooded"
        // Notify is for apps scened knows: a scheduled task makes each known.
        for known in [app, "org.example.other"] { #expect(try Self.scenectl(daemon, ["schedule", known, "x", "--in", "1h"]).status == 0) }
        let unknown = try Self.scenectl(daemon, ["notify", "org.example.unknown", "{}"])
        #expect(unknown.status == 4 && unknown.stdout.isEmpty, "\(unknown.summary)")
        let big = try Self.scenectl(daemon, ["notify", app, "{\"text\":\"\(String(repeating: "x", count: 100))\"}"])
        #expect(big.status == 1 && big.stderr.contains("MaxNotificationSize"), "\(big.summary)")
        // Straight to the socket, as a flooding relay would: the first three wait, the rest are refused.
        let client = try daemon.client()
        var refused = 0, accepted = 0
        for i in 0..<200 {
            do {
                _ = try client.call("io.scened.Manager.Notify", ["app": .string(app), "payload": ["i": .int(Int64(i))]])
                accepted += 1
            } catch let error as VarlinkError {
                #expect(error.name == "io.scened.Manager.LimitExceeded" && error.parameters["limit"] == "MaxPendingNotifications",
                        "\(error)")
                refused += 1
            }
        }
        #expect(accepted == 3 && refused == 197)
        let refusedByScenectl = try Self.scenectl(daemon, ["notify", app, "{}"])
        #expect(refusedByScenectl.status == 1 && refusedByScenectl.stdout.isEmpty && !refusedByScenectl.stderr.isEmpty,
                "\(refusedByScenectl.summary)")
        // Another app, and the listing, are served as before.
        #expect(try Self.scenectl(daemon, ["notify", "org.example.other", "{}"]).status == 0)
        let pending = try JSONParser.parse(try Self.scenectl(daemon, ["tasks", "--json"]).stdout)["notifications"]?.arrayValue ?? []
        #expect(pending.filter { $0["app"] == .string(app) }.count == 3)
        #expect(pending.filter { $0["app"] == "org.example.other" }.count == 1)
    }
}
