import Glibc
import SceneCore
import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SystemdKit

/// RSS of this process in KiB (the second field of /proc/self/statm, in pages).
private func residentKiB() -> Int {
    guard let f = fopen("/proc/self/statm", "r") else { return -1 }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 128)
    guard fgets(&line, 128, f) != nil else { return -1 }
    let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// CPU time of the calling thread (the loop's) in µs.
private func threadCPUMicroseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
}

/// Fails (never skips) without dbus-daemon, dbus-send or python3-dbusmock: packaging/dev-deps
/// installs them.
@Suite("LogindClient against python-dbusmock's logind on a private bus", .serialized)
struct LogindClientTests {
    @Test("sessions listed at start give the verdicts; the delay inhibitors are taken")
    func listedAtStart() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:1", "c2:seat1:1001:bob:1:0", "c3:seat0:1002:carol:0:0"])
        let h = try LogindHarness(address: mock.address)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 && h.client.holdsInhibitor(.sleep) && h.client.holdsInhibitor(.shutdown) })
        #expect(h.client.state.sessions.count == 3)
        #expect(h.verdict(1000) == .held(.lock))
        #expect(h.verdict(1001) == .free)
        #expect(h.verdict(1002) == .held(.session), "its one session is inactive")
        #expect(h.verdict(4242) == .held(.lock), "no session of its own: seat0's active one (c1) is locked")
        #expect(h.news == [.available, .verdictsChanged], "one snapshot, not a verdict per session read")
        #expect(try mock.inhibitors() == ["shutdown", "sleep"])
    }

    @Test("Lock, Unlock, LockedHint and Active changes give verdictsChanged with the right verdict")
    func lockAndUnlock() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:0"])
        let h = try LogindHarness(address: mock.address)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 })
        #expect(h.verdict(1000) == .free)

        func expectAfter(_ what: String, _ want: LoginVerdict, _ action: () throws -> Void) throws {
            let before = h.count(.verdictsChanged)
            try action()
            let arrived = try h.spin(seconds: 5) { h.count(.verdictsChanged) > before }
            #expect(arrived, "no verdictsChanged after \(what)")
            #expect(h.verdict(1000) == want, "after \(what)")
        }
        try expectAfter("Lock", .held(.lock)) { try mock.session("c1", "org.freedesktop.login1.Session.Lock") }
        try expectAfter("Unlock", .free) { try mock.session("c1", "org.freedesktop.login1.Session.Unlock") }
        try expectAfter("LockedHint=true", .held(.lock)) {
            try mock.session("c1", "org.freedesktop.login1.Session.SetLockedHint", ["boolean:true"])
        }
        try expectAfter("LockedHint=false", .free) {
            try mock.session("c1", "org.freedesktop.login1.Session.SetLockedHint", ["boolean:false"])
        }
        try expectAfter("Active=false", .held(.session)) {
            try mock.session("c1", "org.freedesktop.DBus.Properties.Set",
                             ["string:org.freedesktop.login1.Session", "string:Active", "variant:boolean:false"])
        }
        // A new active session of the same user frees it; its removal holds it again.
        try expectAfter("SessionNew", .free) {
            try mock.mockCall("AddSession", ["string:c9", "string:seat1", "uint32:1000", "string:alice", "boolean:true"])
            try mock.mockCall("EmitSessionNew", ["string:c9"])
        }
        try expectAfter("SessionRemoved", .held(.session)) { try mock.mockCall("EmitSessionRemoved", ["string:c9"]) }
        #expect(h.unavailableCount == 0)
    }

    @Test("PrepareForSleep: news, the sleep inhibitor held until released, taken again after resume")
    func sleepInhibitor() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:0"])
        let h = try LogindHarness(address: mock.address)
        #expect(try h.spin(seconds: 10) { h.client.holdsInhibitor(.sleep) && h.client.holdsInhibitor(.shutdown) })
        #expect(try mock.inhibitors() == ["shutdown", "sleep"])

        try mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:true"])
        #expect(try h.spin(seconds: 5) { h.count(.prepareForSleep(true)) == 1 })
        #expect(h.client.state.sleeping)
        #expect(try mock.inhibitors() == ["shutdown", "sleep"], "held while the daemon gets its apps ready")

        h.client.releaseInhibitor(.sleep)
        #expect(!h.client.holdsInhibitor(.sleep))
        #expect(waitUntil(seconds: 5) { (try? mock.inhibitors()) == ["shutdown"] }, "logind sees the fd closed")

        try mock.mockCall("EmitPrepare", ["string:Sleep", "boolean:false"])
        #expect(try h.spin(seconds: 5) { h.count(.prepareForSleep(false)) == 1 && h.client.holdsInhibitor(.sleep) })
        #expect(!h.client.state.sleeping)
        #expect(try mock.inhibitors() == ["shutdown", "sleep"], "retaken for the next sleep")

        try mock.mockCall("EmitPrepare", ["string:Shutdown", "boolean:true"])
        #expect(try h.spin(seconds: 5) { h.count(.prepareForShutdown(true)) == 1 })
        h.client.releaseInhibitor(.shutdown)
        #expect(waitUntil(seconds: 5) { (try? mock.inhibitors()) == ["sleep"] })
    }

    @Test("hostile: logind killed mid-lock → unavailable once; restarted → read again, verdict right")
    func logindKilledMidLock() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:0"])
        let h = try LogindHarness(address: mock.address, keepSessionsUSec: 1_000_000)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 })
        try mock.session("c1", "org.freedesktop.login1.Session.Lock")
        #expect(try h.spin(seconds: 5) { h.verdict(1000) == .held(.lock) })

        mock.killMock()
        let gone = monotonicSeconds()
        #expect(try h.spin(seconds: 5) { h.unavailableCount == 1 })
        #expect(!h.client.holdsInhibitor(.sleep))
        #expect(h.verdict(1000) == .held(.lock), "kept for a while: logind may be restarting")
        let changes = h.count(.verdictsChanged)
        #expect(try h.spin(seconds: 5) { h.verdict(1000) == .free }, "then forgotten: run as without logind")
        let keptFor = monotonicSeconds() - gone
        #expect(keptFor > 0.9 && keptFor < 3, "kept \(keptFor) s")
        #expect(h.count(.verdictsChanged) == changes + 1)
        #expect(h.unavailableCount == 1, "said once")
        #expect(h.client.connectAttempts == 1, "the bus is fine: no reconnecting")

        // logind comes back with the session still locked (as a restarted logind keeps it).
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:1"])
        #expect(try h.spin(seconds: 10) { h.count(.available) == 2 && h.client.holdsInhibitor(.sleep) })
        #expect(h.verdict(1000) == .held(.lock))
        // Resubscribed: the new owner's signals are followed.
        try mock.session("c1", "org.freedesktop.login1.Session.SetLockedHint", ["boolean:false"])
        #expect(try h.spin(seconds: 5) { h.verdict(1000) == .free })
        #expect(h.unavailableCount == 1)
    }

    @Test("logind restarted within the keep time: locked apps never see a free verdict")
    func logindRestartedQuickly() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:1"])
        let h = try LogindHarness(address: mock.address)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 })
        #expect(h.verdict(1000) == .held(.lock))
        let changes = h.count(.verdictsChanged)
        mock.killMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:1"])
        #expect(try h.spin(seconds: 10) { h.count(.available) == 2 && h.client.holdsInhibitor(.sleep) })
        #expect(h.verdict(1000) == .held(.lock))
        #expect(h.count(.verdictsChanged) == changes, "no flicker through free")
        #expect(h.unavailableCount == 1)
    }

    @Test("hostile: the dbus-daemon killed and restarted → reconnect with backoff, read again")
    func busRestarted() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:1"])
        let h = try LogindHarness(address: mock.address, keepSessionsUSec: 0)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 })
        #expect(h.verdict(1000) == .held(.lock))

        mock.killBus()
        mock.killMock()
        #expect(try h.spin(seconds: 5) { h.unavailableCount == 1 })
        #expect(h.verdict(1000) == .free)
        // Down for 2 s: attempts at +0.5, +1.5 (and +3.5) s, not a busy loop.
        try h.spin(seconds: 2)
        let attemptsWhileDown = h.client.connectAttempts
        #expect(attemptsWhileDown >= 2 && attemptsWhileDown <= 4, "\(attemptsWhileDown) attempts")

        try mock.startBus()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:1", "c2:seat0:1001:bob:0:0"])
        #expect(try h.spin(seconds: 15) { h.count(.available) == 2 })
        #expect(h.verdict(1000) == .held(.lock))
        #expect(h.client.state.sessions.count == 2)
        #expect(try h.spin(seconds: 5) { h.client.holdsInhibitor(.sleep) })
        #expect(h.unavailableCount == 1, "once for the whole outage")
        print("logind bus restart: \(h.client.connectAttempts) connection attempts in all")
    }

    @Test("hostile: 10,000 PropertiesChanged → bounded CPU, memory and reads", arguments: [false, true])
    func flood(invalidating: Bool) throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:0"])
        let h = try LogindHarness(address: mock.address)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 && h.client.holdsInhibitor(.shutdown) })
        let readsBefore = h.client.propertyReads
        // A marker after the flood (LockedHint ends false): held for `session` only once every
        // flood signal before it was handled.
        let cpu0 = threadCPUMicroseconds()
        let rss0 = residentKiB()
        let start = monotonicSeconds()
        try mock.mockCall("Flood", ["string:c1", "uint32:10000", "string:LockedHint", "boolean:\(invalidating)"])
        try mock.session("c1", "org.freedesktop.DBus.Properties.Set",
                         ["string:org.freedesktop.login1.Session", "string:Active", "variant:boolean:false"])
        #expect(try h.spin(seconds: 25) { h.verdict(1000) == .held(.session) && h.client.reading.isEmpty })
        let cpuMS = Double(threadCPUMicroseconds() - cpu0) / 1000
        let rssGrowth = residentKiB() - rss0
        let reads = h.client.propertyReads - readsBefore
        print("logind flood (invalidating: \(invalidating)): 10,000 PropertiesChanged in \(Format.fixed(monotonicSeconds() - start, 2)) s wall, "
              + "loop CPU \(Format.fixed(cpuMS, 1)) ms (\(Format.fixed(cpuMS * 1000 / 10_000, 1)) µs/signal), "
              + "RSS growth \(rssGrowth) KiB, GetAll reads \(reads), news \(h.news.count)")
        #expect(cpuMS < 5_000, "CPU for 10,000 signals")
        #expect(rssGrowth < 64 * 1024 + AddressSanitizerAllowance.kiB, "memory for 10,000 signals")
        if invalidating {
            #expect(reads <= 200, "reads coalesce: one in flight and one owed per session")
            #expect(reads >= 1)
        } else {
            #expect(reads == 0)
            // Toggling LockedHint: each change is a verdict change, no more news than signals.
            #expect(h.count(.verdictsChanged) <= 10_002)
        }
        #expect(h.unavailableCount == 0)
    }

    @Test("hostile: no bus at all → unavailable once, and no busy retry")
    func noBus() throws {
        let dir = TemporaryDirectory(prefix: "scened-nobus")
        defer { dir.remove() }
        let h = try LogindHarness(address: "unix:path=\(dir.file("absent"))")
        #expect(h.unavailableCount == 1, "said at once")
        try h.spin(seconds: 3)
        // Backoff 0.5, 1, 2 s: the start and retries at +0.5 and +1.5 s (and +3.5 s).
        print("logind no bus: \(h.client.connectAttempts) connection attempts in 3 s")
        #expect(h.client.connectAttempts >= 2 && h.client.connectAttempts <= 4)
        #expect(h.unavailableCount == 1)
        #expect(h.news.count == 1)
        #expect(h.verdict(1000) == .free)
    }

    @Test("hostile: signals from another peer than logind are ignored")
    func spoofedSignals() throws {
        let mock = try LogindMock()
        try mock.startMock(sessions: ["c1:seat0:1000:alice:1:0"])
        let h = try LogindHarness(address: mock.address)
        #expect(try h.spin(seconds: 10) { h.count(.available) == 1 })
        guard let me = h.client.connection?.uniqueName else {
            Issue.record("no unique name")
            return
        }
        // dbus-send from its own connection, addressed to scened: not logind's unique name.
        let done = try run(["/usr/bin/dbus-send", "--bus=\(mock.address)", "--type=signal", "--dest=\(me)",
                            "/org/freedesktop/login1/session/c1", "org.freedesktop.login1.Session.Lock"], timeout: 10)
        #expect(done.status == 0, "\(done.summary)")
        let sleep = try run(["/usr/bin/dbus-send", "--bus=\(mock.address)", "--type=signal", "--dest=\(me)",
                             "/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForSleep", "boolean:true"], timeout: 10)
        #expect(sleep.status == 0)
        try h.spin(seconds: 1)
        #expect(h.verdict(1000) == .free)
        #expect(h.count(.prepareForSleep(true)) == 0)
    }
}
