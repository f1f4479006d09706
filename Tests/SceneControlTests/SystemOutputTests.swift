import Testing
import Varlink
@testable import SceneControl

/// What status, show-app, apps and top show of the system's holds (interruptions, logind, sleep
/// and stop), for canned replies (UTC, at `testNow` = 16:40:01).
@Suite struct SystemOutputTests {
    static let held: JSONObject = [
        "interruptions": [
            ["token": "i1", "reason": "incoming call", "since": .int(Fixtures.now - 12_000_000)],
            ["token": "i3", "reason": "app switcher", "since": .int(Fixtures.now - 2_000_000)],
        ],
        "login": "followed",
        "locked": [
            ["uid": 1000, "user": "alice", "cause": "lock", "since": .int(Fixtures.now - 300_000_000)],
            ["uid": 1234, "user": "1234", "cause": "session", "since": .int(Fixtures.now - 60_000_000)],
        ],
        "sleeping": false, "stopping": true,
    ]
    static let quiet: JSONObject = ["interruptions": [], "login": "unavailable: no system bus", "locked": [],
                                    "sleeping": false, "stopping": false]

    static func status(_ system: JSONObject) -> [String: [Result<JSONObject, VarlinkError>]] {
        var status = Fixtures.status.object("status")!
        status["system"] = .object(system)
        return ["GetStatus": [.success(["status": .object(status)])]]
    }

    @Test func statusShowsWhatTheSystemHolds() {
        let result = ctl(["status"], replies: Self.status(Self.held))
        #expect(result.status == 0)
        #expect(result.out.contains("""
                     Tasks: 1 background
                     Login: followed
                    Locked: alice (uid 1000): lock since Fri 2024-11-29 16:35:01 UTC; 5min ago
                            uid 1234: session since Fri 2024-11-29 16:39:01 UTC; 1min 0s ago
               Interrupted: i1 "incoming call" since Fri 2024-11-29 16:39:49 UTC; 12s ago
                            i3 "app switcher" since Fri 2024-11-29 16:39:59 UTC; 2s ago
                    System: stopping (scenes saved, then started apps terminated)
                  Next seq: 1042
            """), "\(result.out)")
    }

    @Test func statusWithNothingHeldSaysOnlyHowLogindIsFollowed() {
        let out = ctl(["status"], replies: Self.status(Self.quiet)).out
        #expect(out.contains("Tasks: 1 background\n      Login: unavailable: no system bus\n   Next seq: 1042\n"), "\(out)")
        for absent in ["Locked", "Interrupted", "System"] { #expect(!out.contains(absent + ":")) }
        var sleeping = Self.quiet
        sleeping["sleeping"] = true
        #expect(ctl(["status"], replies: Self.status(sleeping)).out
            .contains("System: sleeping (scenes in the background, apps frozen)\n"))
    }

    static func app(hold: String, cause: String?) -> JSONObject {
        var app = Fixtures.apps.objects("apps")[0]
        app["follows"] = "alice"
        app["hold"] = .string(hold)
        if let cause { app["holdCause"] = .string(cause) }
        return app
    }

    @Test func showAppShowsWhomItFollowsAndItsHold() {
        let held = ctl(["show-app", "com.example.mail"], replies: ["GetApp": [.success(["app": .object(Self.app(hold: "inactive", cause: "interruption"))])]])
        #expect(held.out.contains("""
                   State: active
                 Follows: alice
                    Hold: inactive (interruption)
                Launches: 1
            """), "\(held.out)")
        let free = ctl(["show-app", "com.example.mail"], replies: ["GetApp": [.success(["app": .object(Self.app(hold: "none", cause: nil))])]])
        #expect(free.out.contains("   Hold: none\n"), "\(free.out)")
        // A daemon without the system's holds: neither line.
        let old = ctl(["show-app", "com.example.mail"], replies: ["GetApp": [.success(["app": Fixtures.apps["apps"]!.arrayValue![0]])]])
        #expect(!old.out.contains("Follows") && !old.out.contains("Hold"))
    }

    @Test func appsHasAHoldColumnOnlyWhileSomethingIsHeld() {
        let other = Fixtures.apps.objects("apps")[1]
        var free = other
        free["hold"] = "none"
        let held: JSONObject = ["apps": [.object(Self.app(hold: "background", cause: "lock")), .object(free)]]
        let out = ctl(["apps"], replies: ["ListApps": [.success(held)]]).out
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines[0].hasSuffix("ATTACHED HOLD"), "\(out)")
        #expect(lines[1].hasSuffix("pid 4242 background (lock)"), "\(out)")
        #expect(lines[2].hasSuffix("- -"), "\(out)")
        let none: JSONObject = ["apps": [.object(Self.app(hold: "none", cause: nil)), .object(free)]]
        #expect(!ctl(["apps"], replies: ["ListApps": [.success(none)]]).out.contains("HOLD"))
    }

    @Test func topHeaderShowsInterruptionsAndLocks() {
        var screen = TopScreen()
        screen.status = Fixtures.status.object("status")!
        screen.status["system"] = .object(Self.held)
        let lines = screen.render(width: 200, height: 24, time: TimeFormatter(utc: true), now: testNow)
        #expect(lines[1] == #"System:   STOPPING; 2 interruptions: i1 "incoming call" 12s ago, i3 "app switcher" 2s ago; "#
                + "locked: alice (lock, 5min ago), 1234 (session, 1min 0s ago); login followed", "\(lines[1])")
        #expect(lines[2].hasPrefix("Apps:") && lines[4].hasPrefix("Pressure:"), "the rest moves down one line")
        #expect(lines.count == 24)

        screen.status["system"] = .object(Self.quiet)
        let quiet = screen.render(width: 80, height: 24, time: TimeFormatter(utc: true), now: testNow)
        #expect(quiet[1] == "System:   no interruption; nobody locked; login unavailable: no system bus")
    }
}
