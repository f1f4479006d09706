import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Issue 35 item 4: scene-notes, started by scened, saves its count on the way down when scened
/// stops, and the next start restores it.
@Suite("scene-notes through a stop of scened")
struct SceneNotesStopTests {
    static let app = "org.example.notes"

    @Test("kill -TERM of scened with scene-notes in the foreground: resign, background, willTerminate, terminated (shutdown); the next start restores the count", .timeLimit(.minutes(3)))
    func countSurvivesAStop() throws {
        let workspace = try Workspace()
        let notes = try Binaries.require(Binaries.directory + "/scene-notes")
        mkdir(workspace.directory.file("apps.d"), 0o755)
        try writeTextFile(workspace.directory.file("apps.d/\(Self.app).conf"),
                          "[Launch]\nExecStart=\(notes) --app \(Self.app) --socket \(workspace.socketPath)\n")
        var daemon = try DaemonProcess(workspace)
        let session = try #require(try daemon.call("Connect", ["app": .string(Self.app)])["session"]?["id"]?.stringValue)
        // Resigning and coming back counts (2); the scene never went home, so nothing is saved.
        try daemon.call("Deactivate", ["session": .string(session)])
        try daemon.call("Activate", ["session": .string(session)])
        let pid = try #require(try daemon.call("GetApp", ["app": .string(Self.app)])["app"]?["startedPid"]?.intValue)
        #expect(try daemon.call("GetSession", ["session": .string(session)])["session"]?["restoration"] == nil)

        try daemon.stop()
        #expect(waitUntil(seconds: 10) { kill(pid_t(pid), 0) != 0 }, "the started app ended with scened")

        daemon = try DaemonProcess(workspace)
        let saved = try daemon.call("GetSession", ["session": .string(session)])["session"]
        #expect(saved?["condition"]?.stringValue == "archived")
        #expect(saved?["restoration"]?["json"]?["counter"]?.intValue == 2, "the count it had in the foreground: \(String(describing: saved))")
        let monitor = try EventMonitor(daemon, parameters: ["app": .string(Self.app), "since": 0], consecutive: false)
        var history: [ObservedEvent] = []
        while let e = try monitor.next(timeout: 1) { history.append(e) }
        let stop = history.drop { !($0.event == "willResignActive" && $0.object["cause"]?.stringValue == "shutdown") }
        #expect(stop.map(\.event) == ["willResignActive", "didEnterBackground", "willTerminate", "terminated"], "\(history.map(\.event))")
        #expect(stop.last?.object["reason"]?.stringValue == "shutdown")

        // Activating the session starts the app again, restored from the saved count.
        _ = try daemon.call("Activate", ["session": .string(session)])
        #expect(try daemon.call("GetApp", ["app": .string(Self.app)])["app"]?["process"]?.stringValue == "running")
        try daemon.stop()
    }
}
