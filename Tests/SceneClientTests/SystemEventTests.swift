import Foundation
import SceneClient
import ScenedTestSupport
import Testing
import Varlink

/// SceneClient through what the system drives (issue 35): a lock, an interruption and a
/// shutdown reach the delegates in UIKit's order with their causes, an unknown cause is no
/// error, and willTerminate is answered with the state of every scene still connected. Fed by
/// a scripted stand-in for scened, so the causes come exactly as the wire carries them. The
/// waits are long, as in SceneClientTests: other suites can keep the main actor busy.
@Suite("SceneClient through system events", .serialized)
@MainActor
struct SystemEventTests {
    static func e(_ seq: Int64, _ name: String, _ session: String?, _ state: String, _ cause: String,
                  bounded: Bool = false, extra: JSONObject = [:]) -> JSONObject {
        FakeAppDaemon.event(seq, name, session, state: state, cause: cause, bounded: bounded, extra: extra)
    }

    /// Launch, two scenes, a lock, an interruption, a cause from the future, then a shutdown.
    static let script: [JSONObject] = [
        e(1, "didFinishLaunching", nil, "running", "request"),
        e(2, "configurationForConnecting", "s1", "unattached", "request"),
        e(3, "willConnectTo", "s1", "foregroundInactive", "request"),
        e(4, "willEnterForeground", "s1", "foregroundInactive", "request"),
        e(5, "didBecomeActive", "s1", "foregroundActive", "request"),
        e(6, "configurationForConnecting", "s2", "unattached", "request"),
        e(7, "willConnectTo", "s2", "foregroundInactive", "request"),
        e(8, "willEnterForeground", "s2", "foregroundInactive", "request"),
        e(9, "didBecomeActive", "s2", "foregroundActive", "request"),
        // The screen locks: s1 resigns and goes to the background, and comes back on unlock.
        e(10, "willResignActive", "s1", "foregroundInactive", "lock"),
        e(11, "didEnterBackground", "s1", "background", "lock", bounded: true),
        e(12, "willEnterForeground", "s1", "foregroundInactive", "lock"),
        e(13, "didBecomeActive", "s1", "foregroundActive", "lock"),
        // An interruption: resign active, then didBecomeActive only (R28).
        e(14, "willResignActive", "s1", "foregroundInactive", "interruption"),
        e(15, "didBecomeActive", "s1", "foregroundActive", "interruption"),
        e(16, "willResignActive", "s2", "foregroundInactive", "solarFlare"),
        // The stop (R32): the background chain, willTerminate, terminated (shutdown).
        e(17, "willResignActive", "s1", "foregroundInactive", "shutdown"),
        e(18, "didEnterBackground", "s1", "background", "shutdown", bounded: true),
        e(19, "didEnterBackground", "s2", "background", "shutdown", bounded: true),
        e(20, "willTerminate", nil, "running", "shutdown", bounded: true),
        e(21, "terminated", nil, "notRunning", "shutdown", extra: ["reason": "shutdown", "sessions": ["s1", "s2"]]),
    ]

    @Test("a lock, an interruption and a shutdown: UIKit's order, the causes readable, willTerminate answered with every connected scene's state", .timeLimit(.minutes(10)))
    func lockInterruptionShutdown() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-fake")
        defer { directory.remove() }
        let daemon = try FakeAppDaemon(directory: directory.path, events: Self.script)
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, requestSceneAtLaunch: false)
        #expect(try await running.ending() == .terminated(reason: "shutdown"))

        #expect(running.recorder.callbacks == [
            "didFinishLaunching",
            "configurationForConnecting s1", "willConnectTo s1", "willEnterForeground s1", "didBecomeActive s1",
            "configurationForConnecting s2", "willConnectTo s2", "willEnterForeground s2", "didBecomeActive s2",
            "willResignActive s1", "didEnterBackground s1", "stateRestorationActivity s1",
            "willEnterForeground s1", "didBecomeActive s1",
            "willResignActive s1", "didBecomeActive s1",
            "willResignActive s2",
            "willResignActive s1", "didEnterBackground s1", "stateRestorationActivity s1",
            "didEnterBackground s2", "stateRestorationActivity s2",
            // applicationWillTerminate first, then each connected scene's state, as UIKit asks.
            "willTerminate", "stateRestorationActivity s1", "stateRestorationActivity s2",
        ])
        let resigned = running.recorder.causes.filter { $0.hasPrefix("willResignActive") || $0.hasPrefix("didEnterBackground") }
        #expect(resigned == [
            "willResignActive s1 lock", "didEnterBackground s1 lock", "willResignActive s1 interruption",
            "willResignActive s2 solarFlare", "willResignActive s1 shutdown",
            "didEnterBackground s1 shutdown", "didEnterBackground s2 shutdown",
        ])
        #expect(running.application.lastEventCause == .shutdown && running.application.lastEventCause?.isSystem == true)
        #expect(EventCause(rawValue: "solarFlare").isSystem == false)

        // Every bounded event answered once, in order; willTerminate with both scenes' state.
        let answers = daemon.calls.filter { $0.method == "io.scened.App.Acknowledge" }
        #expect(answers.compactMap { $0.parameters["seq"]?.intValue } == [11, 18, 19, 20])
        let final = answers.last?.parameters
        #expect(final?["restoration"] == nil)
        #expect(final?["restorations"]?.objectValue?.keys == ["s1", "s2"])
        #expect(final?["restorations"]?["s1"]?["json"]?["counter"]?.intValue == 3, "\(String(describing: final))")
        #expect(final?["restorations"]?["s2"]?["json"]?["counter"]?.intValue == 1)
        #expect(daemon.calls.last?.method == "io.scened.App.Detach", "it detaches after terminated")
        #expect(running.recorder.overruns.isEmpty)
    }

    @Test("a willTerminate answer whose state is refused still goes, without the state", .timeLimit(.minutes(10)))
    func refusedStateStillAnswers() async throws {
        let directory = TemporaryDirectory(prefix: "scene-client-fake")
        defer { directory.remove() }
        let script = Array(Self.script[0..<5]) + [
            Self.e(6, "willTerminate", nil, "running", "request", bounded: true),
            Self.e(7, "terminated", nil, "notRunning", "request", extra: ["reason": "requested", "sessions": ["s1"]]),
        ]
        let daemon = try FakeAppDaemon(directory: directory.path, events: script, refuseStateOnce: true)
        defer { daemon.stop() }
        let running = RunningApp(app: "org.example.fake", socketPath: daemon.path, requestSceneAtLaunch: false)
        #expect(try await running.ending() == .terminated(reason: "requested"))
        let answers = daemon.calls.filter { $0.method == "io.scened.App.Acknowledge" }
        #expect(answers.count == 2, "\(answers.map(\.parameters))")
        #expect(answers.first?.parameters["restorations"]?["s1"] != nil, "the state was offered first")
        #expect(answers.last?.parameters["seq"]?.intValue == 6 && answers.last?.parameters["restorations"] == nil)
        #expect(running.logLines.withLock { $0 }.contains { $0.contains("LimitExceeded") }, "the refusal is logged")
    }
}
