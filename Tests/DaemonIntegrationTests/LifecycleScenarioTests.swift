import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Every scenario of §2 of the lifecycle reference, driven through the real scenectl binary
/// against the real scened, and checked against the Monitor stream event by event (and with
/// ConformanceChecker on the whole stream). Each test has its own daemon.
@Suite("§2 scenarios through scenectl, checked on the Monitor stream")
struct LifecycleScenarioTests {
    let mail = Expect(app: "com.example.mail")
    let maps = Expect(app: "com.example.maps")

    @Test("§2.1 cold launch (a) new session, (b) relaunch with an archived session")
    func coldLaunch() throws {
        let sc = try Scenario()
        let first = try sc.step("2.1(a) cold launch", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) {
            try $0.connect(mail.app)
        }
        #expect(try first.sessionID == "s1")
        #expect(first["session"]?["state"]?.stringValue == "foregroundActive")
        #expect(try sc.app(mail.app)["state"]?.stringValue == "active")

        // The process dies; the session stays, archived.
        // R33: the foreground scene goes through the background chain before willTerminate.
        try sc.step("terminate", [mail.willResignActive("s1"), mail.didEnterBackground("s1"), mail.willTerminate, mail.terminated]) {
            try $0.terminate(mail.app)
        }
        #expect(try sc.session("s1")["condition"]?.stringValue == "archived")

        // (b) no configurationForConnecting: the remembered session reconnects.
        let relaunch = try sc.step("2.1(b) relaunch",
                                   [mail.didFinishLaunching, mail.willConnect("s1"), mail.willEnterForeground("s1"), mail.didBecomeActive("s1")]) {
            try $0.activate("s1")
        }
        let connect = relaunch["events"]?[1]
        #expect(connect?["reconnect"]?.boolValue == true)
        #expect(connect?["scene"]?.intValue == 2, "a reconnection is a new scene instance")
        try sc.finish("2.1")
    }

    @Test("§2.2 home: resign, background, then suspended after SuspendDelaySec; §2.3 return resumes")
    func homeAndReturn() throws {
        let sc = try Scenario(configuration: Workspace.shortTimings, timing: Scenario.shortTiming)
        try sc.step("launch", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        let home = try sc.step("2.2 home", mail.home("s1")) { try $0.background("s1") }
        let suspended = try sc.waitFor("2.2 suspension", [mail.suspended])
        // No callback for suspension; it comes from the timer, no earlier than the delay.
        #expect(suspended[0].object["cause"]?.stringValue == "timer")
        let backgroundAt = home["events"]?[1]?["time"]?.intValue ?? 0
        #expect(suspended[0].time - backgroundAt >= 200_000, "suspended \(suspended[0].time - backgroundAt) µs after didEnterBackground")
        #expect(try sc.app(mail.app)["process"]?.stringValue == "suspended")
        #expect(try sc.session("s1")["condition"]?.stringValue == "live", "UIKit does not disconnect a scene on Home (§2.2)")

        try sc.step("2.3 return from suspension", [mail.resumed] + mail.back("s1")) { try $0.activate("s1") }
        #expect(try sc.app(mail.app)["process"]?.stringValue == "running")
        try sc.finish("2.2/2.3")
    }

    @Test("§2.4 a second scene opens side by side; the first gets no callback")
    func secondSceneSideBySide() throws {
        let sc = try Scenario()
        try sc.step("first scene", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        let second = try sc.step("2.4 second scene", mail.newSceneToForeground("s2")) { try $0.connect(mail.app) }
        #expect(try second.sessionID == "s2")
        // R18: the app stays active in every event of the second scene's connection.
        for event in second["events"]?.arrayValue ?? [] {
            #expect(event["appState"]?.stringValue == "active", "appState during 2.4: \(event)")
        }
        #expect(try sc.session("s1")["state"]?.stringValue == "foregroundActive")
        #expect(try sc.session("s2")["state"]?.stringValue == "foregroundActive")
        let app = try sc.app(mail.app)
        #expect(app["foregroundActiveScenes"]?.intValue == 2)
        #expect(app["state"]?.stringValue == "active")
        try sc.finish("2.4")
    }

    @Test("§2.5 app switcher: resign active, then back (no willEnterForeground) or on to the background; §2.3 return while running")
    func appSwitcher() throws {
        let sc = try Scenario()
        try sc.step("launch", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        try sc.step("2.5 switcher shown", [mail.willResignActive("s1")]) { try $0.deactivate("s1") }
        #expect(try sc.app(mail.app)["state"]?.stringValue == "inactive")
        try sc.step("2.5 back to the same scene", [mail.didBecomeActive("s1")]) { try $0.activate("s1") }
        try sc.step("2.5 switcher again", [mail.willResignActive("s1")]) { try $0.deactivate("s1") }
        try sc.step("2.5 picks another app", [mail.didEnterBackground("s1")]) { try $0.background("s1") }
        #expect(try sc.app(mail.app)["state"]?.stringValue == "background")
        // §2.3 while the process still runs (SuspendDelaySec is long here): no resumed.
        try sc.step("2.3 return while running", mail.back("s1")) { try $0.activate("s1") }
        #expect(try sc.app(mail.app)["state"]?.stringValue == "active")
        try sc.finish("2.5")
    }

    @Test("§2.6/§2.7 reclaim-style disconnect keeps the session; reconnecting restores the saved state")
    func disconnectAndReconnect() throws {
        let sc = try Scenario()
        try sc.step("launch", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        let saved = #"{"draft":"hello","page":7,"selection":[1,2,3]}"#
        let reply = try sc.step("save state", []) { try $0.saveState("s1", json: saved) }
        let expectedData = RestorationData.json(try JSONParser.parse(saved).serializedString())
        #expect(try ObservedEvent.restoration(reply["session"]?["restoration"]) == expectedData)
        sc.monitor.noteSaved(expectedData, for: "s1")

        try sc.step("to the background", mail.home("s1")) { try $0.background("s1") }
        // §2.6: didDisconnect and nothing else; in particular no didDiscardSceneSessions.
        try sc.step("2.6 disconnect", [mail.didDisconnect("s1")]) { try $0.disconnect("s1") }
        let archived = try sc.session("s1")
        #expect(archived["condition"]?.stringValue == "archived")
        #expect(archived["state"]?.stringValue == "unattached")
        #expect(try ObservedEvent.restoration(archived["restoration"]) == expectedData, "the session keeps its restoration data")

        // §2.7: a new scene instance, no configurationForConnecting, the saved data handed back.
        let back = try sc.step("2.7 reconnect", [mail.willConnect("s1"), mail.willEnterForeground("s1"), mail.didBecomeActive("s1")]) {
            try $0.activate("s1")
        }
        let willConnect = back["events"]?[0]
        #expect(willConnect?["reconnect"]?.boolValue == true)
        #expect(willConnect?["scene"]?.intValue == 2)
        #expect(try ObservedEvent.restoration(willConnect?["restoration"]) == expectedData,
                "willConnectTo's restoration must equal what was saved: \(String(describing: willConnect))")
        #expect(try sc.session("s1")["restores"]?.intValue == 1)
        try sc.finish("2.6/2.7")
    }

    @Test("§2.8 case A / §2.9: discarding a connected session while the app runs")
    func discardWhileRunning() throws {
        let sc = try Scenario()
        try sc.step("first scene", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        try sc.step("second scene", mail.newSceneToForeground("s2")) { try $0.connect(mail.app) }
        // Disconnect first (through the resign/background chain), then the discard (R13).
        try sc.step("2.8 discard s1",
                    mail.home("s1") + [mail.didDisconnect("s1"), mail.discarded("s1")]) { try $0.discard("s1") }
        do {
            _ = try sc.session("s1")
            Issue.record("GetSession of a discarded session succeeded")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.SessionDiscarded")
            #expect(error.parameters["session"]?.stringValue == "s1")
        }
        // The process keeps running, the other scene untouched.
        #expect(try sc.app(mail.app)["process"]?.stringValue == "running")
        #expect(try sc.session("s2")["state"]?.stringValue == "foregroundActive")
        try sc.finish("2.8A")
    }

    @Test("§2.8 case C: discarded while not running, delivered after the next didFinishLaunching")
    func discardWhileNotRunning() throws {
        let sc = try Scenario()
        try sc.step("first scene", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        try sc.step("second scene", mail.newSceneToForeground("s2")) { try $0.connect(mail.app) }
        try sc.step("third scene", mail.newSceneToForeground("s3")) { try $0.connect(mail.app) }
        let chain = ["s1", "s2", "s3"].flatMap { [mail.willResignActive($0), mail.didEnterBackground($0)] }
        let terminated = try sc.step("process ends", chain + [mail.willTerminate, mail.terminated]) { try $0.terminate(mail.app) }
        #expect(terminated["events"]?[7]?["sessions"] == ["s1", "s2", "s3"], "terminated archives exactly the connected scenes")

        // Nothing can be told to a process that does not run.
        try sc.step("discard s1 (not running)", []) { try $0.discard("s1") }
        try sc.step("discard s2 (not running)", []) { try $0.discard("s2") }
        try sc.monitor.expectQuiet("after discards of a not-running app")
        #expect(try sc.app(mail.app)["pendingDiscards"] == ["s1", "s2"])

        // Next launch: didFinishLaunching, then didDiscardSceneSessions({s1, s2}) (R14, U4).
        let launch = try sc.step("next launch", [mail.didFinishLaunching, mail.discarded(nil)]) { try $0.launch(mail.app) }
        #expect(launch["events"]?[1]?["sessions"] == ["s1", "s2"])
        #expect(try sc.app(mail.app)["pendingDiscards"] == [])
        // s3 survives and reconnects without configurationForConnecting.
        try sc.step("s3 reconnects", [mail.willConnect("s3"), mail.willEnterForeground("s3"), mail.didBecomeActive("s3")]) {
            try $0.activate("s3")
        }
        try sc.finish("2.8C")
    }

    @Test("§2.12 4a: a background task keeps the app running; ending it lets it be suspended")
    func backgroundTaskEndsNormally() throws {
        // The budget is longer than in the expiry test so that ending the task in time does not
        // depend on how fast the machine is; the suspension delay is the short one.
        let config = """
        [Lifecycle]
        SuspendDelaySec=200ms
        BackgroundTaskBudgetSec=5s
        ExpirationGraceSec=300ms
        """
        let timing = EngineConfiguration(suspendDelay: .milliseconds(200), backgroundTaskBudget: .seconds(5),
                                         expirationGrace: .milliseconds(300))
        let sc = try Scenario(configuration: config, timing: timing)
        try sc.step("launch", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        let begun = try sc.step("2.12(1) begin a task in the foreground", []) { try $0.beginTask(session: "s1", name: "upload") }
        guard let token = begun["task"]?["token"]?.stringValue else { throw TestFailure("no task token: \(begun)") }
        #expect(begun["task"]?["expiresAt"]?.isNull ?? true, "no expiry while in the foreground")
        try sc.step("2.12(2) user leaves", mail.home("s1")) { try $0.background("s1") }
        // 3: still running well past the suspension delay, because the task is open.
        try sc.monitor.expectQuiet("while the task is open", milliseconds: 700)
        #expect(try sc.app(mail.app)["process"]?.stringValue == "running")
        // 4a: ended; suspended shortly after, with no callback.
        try sc.step("2.12(4a) end the task", []) { try $0.endTask(token) }
        let suspended = try sc.waitFor("suspension after the task", [mail.suspended])
        #expect(suspended[0].object["cause"]?.stringValue == "timer")
        try sc.finish("2.12 4a")
    }

    @Test("§2.12 4b/5: a task not ended gets backgroundTaskWillExpire after the budget, then the app is killed without willTerminate")
    func backgroundTaskExpires() throws {
        let sc = try Scenario(configuration: Workspace.shortTimings, timing: Scenario.shortTiming)
        try sc.step("launch", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        let begun = try sc.step("begin a task", []) { try $0.beginTask(session: "s1", name: "sync") }
        let token = begun["task"]?["token"]?.stringValue
        let home = try sc.step("user leaves", mail.home("s1")) { try $0.background("s1") }
        let backgroundAt = home["events"]?[1]?["time"]?.intValue ?? 0
        let expiry = try sc.waitFor("4b expiration handler", [mail.taskWillExpire("s1")])
        #expect(expiry[0].object["task"]?.stringValue == token)
        #expect(expiry[0].object["taskName"]?.stringValue == "sync")
        #expect(expiry[0].time - backgroundAt >= 500_000, "expired \(expiry[0].time - backgroundAt) µs into the background")
        // 5: never ended → killed one grace later: terminated, and no willTerminate (R24).
        let kill = try sc.waitFor("5 watchdog kill", [mail.terminated])
        #expect(kill[0].object["reason"]?.stringValue == "backgroundTaskExpired")
        #expect(kill[0].object["sessions"] == ["s1"])
        #expect(kill[0].time - expiry[0].time >= 300_000, "killed \(kill[0].time - expiry[0].time) µs after the expiration")
        #expect(try sc.app(mail.app)["process"]?.stringValue == "notRunning")
        #expect(try sc.app(mail.app)["tasks"] == [])
        try sc.finish("2.12 4b")
    }

    @Test("§2.10 termination: willTerminate for a running app, none for a suspended one; §2.13 background launch")
    func terminationRunningVersusSuspended() throws {
        let sc = try Scenario(configuration: Workspace.shortTimings, timing: Scenario.shortTiming)
        try sc.step("mail in the foreground", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        // §2.13: launched straight into the background, then suspended.
        try sc.step("2.13 maps launched into the background",
                    [maps.didFinishLaunching, maps.configuration("s2"), maps.willConnect("s2"), maps.didEnterBackground("s2")]) {
            try $0.connect(maps.app, background: true)
        }
        try sc.waitFor("maps suspended", [maps.suspended])

        let running = try sc.step("2.10 terminate running mail",
                                  [mail.willResignActive("s1"), mail.didEnterBackground("s1"), mail.willTerminate, mail.terminated]) {
            try $0.terminate(mail.app)
        }
        #expect(running["events"]?[3]?["reason"]?.stringValue == "requested")
        #expect(running["events"]?[3]?["sessions"] == ["s1"])
        let suspended = try sc.step("2.10 terminate suspended maps: no willTerminate", [maps.terminated]) { try $0.terminate(maps.app) }
        #expect(suspended["events"]?[0]?["sessions"] == ["s2"])
        #expect(try sc.session("s1")["condition"]?.stringValue == "archived")
        #expect(try sc.session("s2")["condition"]?.stringValue == "archived")
        try sc.finish("2.10")
    }

    @Test("§2.11 memory warnings reach running apps only")
    func memoryWarning() throws {
        let sc = try Scenario(configuration: Workspace.shortTimings, timing: Scenario.shortTiming)
        try sc.step("mail in the foreground", [mail.didFinishLaunching] + mail.newSceneToForeground("s1")) { try $0.connect(mail.app) }
        try sc.step("maps in the background",
                    [maps.didFinishLaunching, maps.configuration("s2"), maps.willConnect("s2"), maps.didEnterBackground("s2")]) {
            try $0.connect(maps.app, background: true)
        }
        try sc.waitFor("maps suspended", [maps.suspended])
        try sc.step("2.11 warning to all", [mail.memoryWarning]) { try $0.memoryWarning([]) }
        try sc.step("2.11 warning to the suspended app only", []) { try $0.memoryWarning([maps.app]) }
        try sc.step("2.11 warning to mail by name", [mail.memoryWarning]) { try $0.memoryWarning([mail.app]) }
        try sc.finish("2.11")
    }
}
