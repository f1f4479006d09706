import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// A real scened following logind: python-dbusmock's logind template on a private
/// dbus-daemon, named to scened by DBUS_SYSTEM_BUS_ADDRESS. Locks, session switches, sleep,
/// and logind or its bus going away. Fails (never skips) without dbus-daemon or dbusmock.
@Suite("scened follows logind (dbusmock on a private bus)", .serialized)
struct LoginFollowTests {
    static let me = "c1:seat0:0:root:1:0"

    @Test("a lock resigns and backgrounds the active scenes (cause lock); activations stay inactive; unlock brings back exactly those",
          .timeLimit(.minutes(3)))
    func lockAndUnlock() throws {
        let rig = try LoginRig(sessions: [Self.me])
        let app = try AttachedApp(rig.daemon, app: "com.example.locked")
        _ = try app.answered(through: "didFinishLaunching")
        let s1 = try app.foregroundScene()
        let s2 = try app.foregroundScene()
        try rig.daemon.call("Background", ["session": .string(s2)])
        _ = try app.drain()
        #expect(try rig.hold("com.example.locked") == "none")

        let ways: [(String, () throws -> Void, () throws -> Void)] = [("Lock signal", { try rig.lock("c1") }, { try rig.unlock("c1") }),
                                    ("LockedHint", { try rig.setProperty("c1", "LockedHint", true) },
                                     { try rig.setProperty("c1", "LockedHint", false) })]
        for (how, lock, unlock) in ways {
            try lock()
            let down = try app.answered(through: "didEnterBackground").map(\.brief)
            #expect(down == ["willResignActive \(s1) lock", "didEnterBackground \(s1) lock"], "\(how): \(down)")
            #expect(try rig.locked() == ["root:lock"], "\(how)")
            #expect(try rig.hold("com.example.locked") == "background/lock", "\(how)")
            #expect(try rig.app("com.example.locked")["follows"]?.stringValue == "root")

            // While locked: an operator's Activate and the app's own request stop at foregroundInactive.
            let activated = try rig.daemon.call("Activate", ["session": .string(s2)])
            #expect(activated["session"]?["state"]?.stringValue == "foregroundInactive", "\(how): \(activated)")
            let s3 = try app.call("RequestSceneSessionActivation")["session"]?.stringValue ?? "?"
            let held = try app.drain().map(\.brief)
            #expect(!held.contains { $0.hasPrefix("didBecomeActive") }, "\(how): \(held)")
            #expect(held.contains { $0.hasPrefix("willEnterForeground \(s2) ") }, "\(how): \(held)")
            #expect(held.contains { $0.hasPrefix("willEnterForeground \(s3)") }, "\(how): \(held)")

            try unlock()
            let up = try app.drain()
            let s1Up = up.filter { $0.session == s1 }.map(\.brief)
            #expect(s1Up == ["willEnterForeground \(s1) lock", "didBecomeActive \(s1) lock"], "\(how): \(s1Up)")
            #expect(Set(up.filter { $0.session != s1 }.map(\.event)) == ["didBecomeActive"], "\(how): \(up.map(\.brief))")
            #expect(Set(up.compactMap(\.session)) == [s1, s2, s3], "exactly the held and waiting scenes")
            #expect(try rig.locked() == [])
            #expect(try rig.hold("com.example.locked") == "none")
            // Back to the starting point for the next way of locking.
            for s in [s2, s3] { try rig.daemon.call("Background", ["session": .string(s)]) }
            _ = try app.drain()
        }
        try rig.daemon.assertServing("after the locks")
    }

    @Test("LockedBackgroundSec=2s: a lock first resigns only, the background follows 2 s later", .timeLimit(.minutes(2)))
    func lockedBackgroundDelay() throws {
        let rig = try LoginRig(sessions: [Self.me], system: "LockedBackgroundSec=2s")
        let app = try AttachedApp(rig.daemon, app: "com.example.slow")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()
        let lockedAt = monotonicSeconds()
        try rig.lock("c1")
        let resign = try app.answered(through: "willResignActive")
        #expect(resign.map(\.brief) == ["willResignActive \(s) lock"])
        #expect(try rig.hold("com.example.slow") == "inactive/lock")
        let background = try app.answered(through: "didEnterBackground", timeout: 6)
        let after = monotonicSeconds() - lockedAt
        #expect(background.map(\.brief) == ["didEnterBackground \(s) lock"])
        #expect(after > 1.8 && after < 4, "background \(after) s after the lock")
        print("LockedBackgroundSec=2s: didEnterBackground \(Format.fixed(after, 2)) s after the Lock signal")
        try rig.unlock("c1")
        #expect(try app.answered(through: "didBecomeActive").map(\.brief) == ["willEnterForeground \(s) lock", "didBecomeActive \(s) lock"])
    }

    @Test("Active=false holds with cause session; two sessions hold only when both do; IdleHint is ignored by default",
          .timeLimit(.minutes(2)))
    func sessionsAndIdle() throws {
        let rig = try LoginRig(sessions: [Self.me, "c2:seat1:0:root:1:0"])
        let app = try AttachedApp(rig.daemon, app: "com.example.vt")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()

        try rig.setProperty("c1", "Active", false)
        #expect(try app.drain(quiet: 0.7).isEmpty, "c2 is still active")
        try rig.setProperty("c2", "Active", false)
        #expect(try app.answered(through: "didEnterBackground").map(\.brief) == ["willResignActive \(s) session", "didEnterBackground \(s) session"])
        #expect(try rig.locked() == ["root:session"])
        try rig.setProperty("c2", "Active", true)
        #expect(try app.answered(through: "didBecomeActive").map(\.cause) == ["session", "session"])

        // One locked and one inactive: held, and the lock is the cause named.
        try rig.lock("c1")
        #expect(try app.drain(quiet: 0.7).isEmpty, "c2 is active and unlocked")
        try rig.setProperty("c2", "Active", false)
        #expect(try app.answered(through: "didEnterBackground").map(\.cause) == ["lock", "lock"])
        try rig.setProperty("c2", "Active", true)
        _ = try app.answered(through: "didBecomeActive")

        try rig.setProperty("c1", "IdleHint", true)
        try rig.setProperty("c2", "IdleHint", true)
        #expect(try app.drain(quiet: 0.7).isEmpty, "FollowIdle= is off")
        #expect(try rig.locked() == [])
    }

    @Test("FollowIdle=yes: idle sessions hold with cause idle", .timeLimit(.minutes(2)))
    func followIdle() throws {
        let rig = try LoginRig(sessions: [Self.me], system: "FollowIdle=yes")
        let app = try AttachedApp(rig.daemon, app: "com.example.idle")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()
        try rig.setProperty("c1", "IdleHint", true)
        #expect(try app.answered(through: "didEnterBackground").map(\.brief) == ["willResignActive \(s) idle", "didEnterBackground \(s) idle"])
        #expect(try rig.locked() == ["root:idle"])
        try rig.setProperty("c1", "IdleHint", false)
        #expect(try app.answered(through: "didBecomeActive").map(\.cause) == ["idle", "idle"])
    }

    @Test("an app with User= follows that user's sessions, not scened's", .timeLimit(.minutes(2)))
    func appOfAnotherUser() throws {
        let user = "scenedlt\(getpid() % 10_000)"
        let added = try run(["/usr/sbin/useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user], timeout: 30)
        #expect(added.status == 0, "\(added.summary)")
        defer { _ = try? run(["/usr/sbin/userdel", user], timeout: 30) }
        guard let pw = getpwnam(user) else { throw TestFailure("useradd did not create \(user)") }
        let uid = pw.pointee.pw_uid
        let rig = try LoginRig(sessions: [Self.me, "c7:seat1:\(uid):\(user):1:0"],
                               apps: [("com.example.theirs", "[App]\nUser=\(user)")])
        let mine = try AttachedApp(rig.daemon, app: "com.example.mine")
        let theirs = try AttachedApp(rig.daemon, app: "com.example.theirs")
        for a in [mine, theirs] { _ = try a.answered(through: "didFinishLaunching") }
        let sm = try mine.foregroundScene()
        let st = try theirs.foregroundScene()
        #expect(try rig.app("com.example.theirs")["follows"]?.stringValue == user)

        try rig.lock("c1")
        #expect(try mine.answered(through: "didEnterBackground").map(\.brief).last == "didEnterBackground \(sm) lock")
        #expect(try theirs.drain(quiet: 0.7).isEmpty, "root's lock is not \(user)'s")
        #expect(try rig.hold("com.example.theirs") == "none")
        try rig.lock("c7")
        #expect(try theirs.answered(through: "didEnterBackground").map(\.brief).last == "didEnterBackground \(st) lock")
        #expect(try rig.locked() == ["root:lock", "\(user):lock"])
        try rig.unlock("c1")
        _ = try mine.answered(through: "didBecomeActive")
        #expect(try theirs.drain(quiet: 0.7).isEmpty, "\(user) is still locked")
        #expect(try rig.hold("com.example.theirs") == "background/lock")
    }
}
