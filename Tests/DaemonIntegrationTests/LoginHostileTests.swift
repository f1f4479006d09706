import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// logind or its bus going away, floods of its signals, no bus at all, and logind not followed:
/// scened keeps serving, says so once, and is right again when logind is back.
@Suite("scened when logind misbehaves (dbusmock on a private bus)", .serialized)
struct LoginHostileTests {
    /// GetStatus calls per second of `daemon` and of `control` by their median latency, called
    /// in turn for `seconds`: both share the machine's load at every moment, and the median
    /// leaves out the calls that waited for a core, so their ratio shows `daemon`'s own cost.
    static func callRates(_ daemon: DaemonProcess, against control: DaemonProcess, seconds: Double) throws -> (Double, Double) {
        let a = try daemon.client(timeout: .seconds(10))
        let b = try control.client(timeout: .seconds(10))
        var latenciesA: [Double] = [], latenciesB: [Double] = []
        let start = monotonicSeconds()
        while monotonicSeconds() - start < seconds {
            let t0 = monotonicSeconds()
            _ = try a.call("io.scened.Manager.GetStatus")
            let t1 = monotonicSeconds()
            _ = try b.call("io.scened.Manager.GetStatus")
            latenciesA.append(t1 - t0)
            latenciesB.append(monotonicSeconds() - t1)
        }
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        return (1 / median(latenciesA), 1 / median(latenciesB))
    }

    @Test("logind killed while locked: scened serves on, says so once, frees the apps after ~5 s; restarted locked → held again",
          .timeLimit(.minutes(2)))
    func logindKilledMidLock() throws {
        let rig = try LoginRig(sessions: [LoginFollowTests.me])
        let app = try AttachedApp(rig.daemon, app: "com.example.bystander")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()
        try rig.lock("c1")
        _ = try app.answered(through: "didEnterBackground")

        rig.mock.killMock()
        let gone = monotonicSeconds()
        try rig.waitFor("login unavailable") { try rig.login().hasPrefix("unavailable") }
        #expect(try rig.hold("com.example.bystander") == "background/lock", "kept while logind may be restarting")
        let freed = try app.answered(through: "didBecomeActive", timeout: 10)
        let keptFor = monotonicSeconds() - gone
        print("logind killed mid-lock: scenes freed \(Format.fixed(keptFor, 2)) s after it left the bus")
        #expect(freed.map(\.brief) == ["willEnterForeground \(s) lock", "didBecomeActive \(s) lock"])
        #expect(keptFor > 4 && keptFor < 8, "freed after \(keptFor) s")
        #expect(try rig.locked() == [])
        try rig.daemon.assertServing("without logind")
        #expect(rig.unavailableSaid == 1, "said once:\n\(rig.daemon.stderr.suffix(2000))")

        try rig.mock.startMock(sessions: ["c1:seat0:0:root:1:1"])
        #expect(try app.answered(through: "didEnterBackground").map(\.brief) == ["willResignActive \(s) lock", "didEnterBackground \(s) lock"])
        try rig.waitFor("followed again, inhibitors retaken") {
            try rig.login() == "followed" && rig.mock.inhibitors() == ["shutdown", "sleep"]
        }
        // Resubscribed: the new logind's signals count.
        try rig.setProperty("c1", "LockedHint", false)
        _ = try app.answered(through: "didBecomeActive")
        #expect(rig.unavailableSaid == 1)
    }

    @Test("the dbus-daemon killed: a bystander is served at its usual rate; scened reconnects when the bus returns",
          .timeLimit(.minutes(2)))
    func busKilled() throws {
        let rig = try LoginRig(sessions: [LoginFollowTests.me])
        // The same daemon not following logind, on the same machine at the same moments.
        let control = try DaemonProcess(try Workspace(configuration: Workspace.calmConfiguration + "\n[System]\nFollowLogin=no"))
        defer { try? control.stop() }
        _ = try Self.callRates(rig.daemon, against: control, seconds: 0.5)  // warm-up
        let (withBus, controlWithBus) = try Self.callRates(rig.daemon, against: control, seconds: 2)
        rig.mock.killBus()
        rig.mock.killMock()
        try rig.waitFor("login unavailable") { try rig.login().hasPrefix("unavailable") }
        // Reconnect attempts at +0.5, +1.5, +3.5 s fall in this window.
        let (during, controlDuring) = try Self.callRates(rig.daemon, against: control, seconds: 4)
        let ratio = (during / controlDuring) / (withBus / controlWithBus)
        print("bus down: bystander GetStatus \(Format.fixed(during, 0))/s (control \(Format.fixed(controlDuring, 0))/s); with the bus "
              + "\(Format.fixed(withBus, 0))/s (control \(Format.fixed(controlWithBus, 0))/s): relative rate \(Format.fixed(ratio, 2))")
        #expect(ratio > 0.7, "served at \(ratio) of its rate with the bus, against a daemon without logind")

        let app = try AttachedApp(rig.daemon, app: "com.example.after")
        _ = try app.answered(through: "didFinishLaunching")
        let s = try app.foregroundScene()
        try rig.mock.startBus()
        try rig.mock.startMock(sessions: ["c1:seat0:0:root:1:1"])
        // Backoff doubles to 2 s and more while the bus was away: bounded by 15 s.
        let back = try app.answered(through: "didEnterBackground", timeout: 20).map(\.brief)
        #expect(back == ["willResignActive \(s) lock", "didEnterBackground \(s) lock"])
        try rig.waitFor("followed again") { try rig.login() == "followed" }
        #expect(rig.unavailableSaid == 1, "once for the whole outage:\n\(rig.daemon.stderr.suffix(2000))")
    }

    @Test("10,000 Lock/Unlock signals: the daemon's CPU and memory bounded, the final state right", .timeLimit(.minutes(3)))
    func lockFlood() throws {
        let rig = try LoginRig(sessions: [LoginFollowTests.me])
        let connected = try rig.daemon.call("Connect", ["app": "com.example.flooded"])
        let session = try #require(connected["session"]?["id"]?.stringValue)
        let seq0 = try rig.daemon.call("GetStatus")["status"]?["nextSeq"]?.intValue ?? 0
        let cpu0 = try rig.cpuMilliseconds()
        let rss0 = rig.rssKiB()
        let start = monotonicSeconds()
        // Lock, Unlock, … (ends unlocked), then a marker of another cause: the session made
        // inactive. Held for `session` only once every flood signal before it was handled.
        try rig.mock.mockCall("FloodLocks", ["string:c1", "uint32:10000"])
        try rig.setProperty("c1", "Active", false)
        try rig.waitFor("held for the marker after the flood", seconds: 60) { try rig.hold("com.example.flooded") == "background/session" }
        let wall = monotonicSeconds() - start
        let cpu = try rig.cpuMilliseconds() - cpu0
        let rssGrowth = rig.rssKiB() - rss0
        let events = (try rig.daemon.call("GetStatus")["status"]?["nextSeq"]?.intValue ?? 0) - seq0
        print("logind Lock/Unlock flood: 10,000 signals and a marker in \(Format.fixed(wall, 2)) s, scened CPU \(Format.fixed(cpu, 0)) ms "
              + "(\(Format.fixed(cpu * 1000 / 10_000, 1)) µs/signal), RSS growth \(rssGrowth) KiB, \(events) events")
        #expect(try rig.locked() == ["root:session"], "scened stderr:\n\(rig.daemon.stderr.suffix(3000))")
        #expect(cpu < 20_000, "CPU for 10,000 signals")
        #expect(rssGrowth < 64 * 1024, "memory for 10,000 signals")
        #expect(events <= 20_004, "no more than a resignation and a return per signal")
        // The flood ended unlocked: the session active again frees the scene; a lock holds it.
        try rig.setProperty("c1", "Active", true)
        try rig.waitFor("free: the flood ended with Unlock") {
            try rig.daemon.call("GetSession", ["session": .string(session)])["session"]?["state"]?.stringValue == "foregroundActive"
        }
        try rig.lock("c1")
        try rig.waitFor("held by the next Lock") { try rig.hold("com.example.flooded") == "background/lock" }
        try rig.daemon.assertServing("after the flood")
    }

    @Test("FollowLogin=no: no bus connection, status off, a lock changes nothing", .timeLimit(.minutes(2)))
    func followLoginOff() throws {
        let rig = try LoginRig(sessions: [LoginFollowTests.me], system: "FollowLogin=no", waitFollowed: false)
        #expect(try rig.login() == "off")
        let names = try rig.mock.send(dest: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames")
        var peers: [Int32] = []
        for line in names.split(separator: "\n") {
            guard let q = line.firstIndex(of: "\""), line.contains("string \":") else { continue }
            let name = String(line[line.index(after: q)...].dropLast())
            // dbus-send's own earlier connections are gone by now.
            guard let pid = try? rig.mock.send(dest: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               "org.freedesktop.DBus.GetConnectionUnixProcessID", ["string:\(name)"]) else { continue }
            if let last = pid.split(separator: " ").last, let n = Int32(String(last).trimmingCharacters(in: " \n")) { peers.append(n) }
        }
        #expect(!peers.isEmpty, "the bus's peers were read: \(names)")
        #expect(!peers.contains(rig.daemon.pid), "scened is not on the bus")
        #expect(try rig.mock.inhibitors() == [])
        let connected = try rig.daemon.call("Connect", ["app": "com.example.free"])
        let session = try #require(connected["session"]?["id"]?.stringValue)
        try rig.lock("c1")
        sleepMilliseconds(700)
        #expect(try rig.daemon.call("GetSession", ["session": .string(session)])["session"]?["state"]?.stringValue == "foregroundActive")
        #expect(rig.unavailableSaid == 0)
    }

    @Test("no system bus at all: unavailable, said once, scened works as without logind", .timeLimit(.minutes(2)))
    func noBus() throws {
        let rig = try LoginRig(sessions: [], busAddress: "unix:path=/nonexistent", waitFollowed: false)
        try rig.waitFor("login unavailable") { try rig.login().hasPrefix("unavailable") }
        let connected = try rig.daemon.call("Connect", ["app": "com.example.alone"])
        #expect(connected["session"]?["state"]?.stringValue == "foregroundActive")
        sleepMilliseconds(3_000)
        #expect(rig.unavailableSaid == 1, "said once despite the retries:\n\(rig.daemon.stderr.suffix(2000))")
        try rig.daemon.assertServing("with no bus")
        #expect(try rig.locked() == [])
        // Nothing to wait for: the stop does not sit out StopTimeoutSec= (20 s by default).
        let stopping = monotonicSeconds()
        try rig.daemon.stop(timeout: 30)
        let took = monotonicSeconds() - stopping
        print("SIGTERM to exit with one foreground scene of an app with no process: \(Format.fixed(took * 1000, 0)) ms")
        #expect(took < 5, "stopped in \(took) s")
    }
}
