import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// While scened stops (R32), what would start something the stop ends is refused with
/// Stopping, the reads go on, and the apps' own answers (what the stop waits for) are taken.
@Suite("Calls during a stop")
struct StopRefusalTests {
    static let configuration = """
        [Lifecycle]
        DidEnterBackgroundTimeoutSec=2s
        [Store]
        Durability=normal
        """

    // The limit only catches a wedge: under ThreadSanitizer beside the whole suite the test
    // can wait minutes for a CPU.
    @Test("changes are refused with Stopping until the slow app answers; reads and the answer go on", .timeLimit(.minutes(5)))
    func changesRefusedReadsServed() throws {
        let workspace = try Workspace(configuration: Self.configuration)
        let daemon = try DaemonProcess(workspace)
        let attached = try AttachedApp(daemon, app: "com.example.slow")
        _ = try attached.events(through: "didFinishLaunching")
        let session = try attached.call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?"
        _ = try attached.events(through: "didBecomeActive")

        daemon.child.signal(SIGTERM)
        let background = try attached.events(through: "didEnterBackground").last!
        #expect(background.object["cause"]?.stringValue == "shutdown")
        // The app has not answered: the stop waits, and serves reads meanwhile.
        let status = try daemon.call("GetStatus")
        #expect(status["status"]?["system"]?["stopping"]?.boolValue == true)
        do {
            try daemon.call("Connect", ["app": "com.example.late"])
            Issue.record("Connect during the stop was accepted")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.Stopping")
            #expect(error.parameters["message"]?.stringValue?.contains("stopping") == true)
        }
        // The answer is what the stop waits for: taken, its data saved, then scened exits.
        try attached.call("Acknowledge", ["seq": .int(Int64(background.seq)), "restoration": ["json": ["page": 3]]])
        #expect(daemon.child.wait(seconds: 10), "scened did not exit once the app answered")
        let again = try DaemonProcess(workspace)
        let saved = try again.call("GetSession", ["session": .string(session)])
        #expect(saved["session"]?["restoration"]?["json"]?["page"]?.intValue == 3)
        #expect(saved["session"]?["state"]?.stringValue == "background")
        try again.stop()
    }
}
