import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// Issue 16 item 1 under load: saved data read back from the store is not kept. 2,000
    /// archived sessions of 16 KiB of restoration data each are 32 MiB if held; after a
    /// restart, reconnecting every one of them (each reads its data back and hands it on) and
    /// a pipelined flood of GetSession over all of them must leave the daemon near where it
    /// started.
    @Suite("Saved data read back")
    struct SavedDataReadBack {
        static let count = 2_000
        static let restoration: JSONObject = ["json": ["s": .string(String(repeating: "r", count: 16_000))]]

        static func run(_ daemon: DaemonProcess, _ calls: [[UInt8]], total: Int, _ what: String) throws {
            let load = BackgroundLoad.pipeline(socket: daemon.socketPath, calls: calls, window: 64, total: total, seconds: 120)
            let report = load.finish(within: 130)
            guard report.replies == total, report.errorReplies == 0, report.failure == nil else {
                throw TestFailure("\(what): \(report)")
            }
        }

        static func each(_ method: String, _ range: ClosedRange<Int> = 1...count, _ extra: JSONObject = [:]) -> [[UInt8]] {
            range.map { n in
                var p = extra
                p["session"] = .string("s\(n)")
                return framed(method, p)
            }
        }

        /// Reconnects the sessions of `range` (each reads its data back and hands it on),
        /// archives them again and reads each five times.
        static func round(_ daemon: DaemonProcess, _ range: ClosedRange<Int>) throws {
            try run(daemon, each("Activate", range), total: range.count, "reconnecting")
            try run(daemon, each("Disconnect", range), total: range.count, "archiving again")
            try run(daemon, each("GetSession", range), total: 5 * range.count, "reading")
            sleepMilliseconds(300)
        }

        // The first half fills what is bounded whatever the data (SQLite's page caches, the
        // reply buffer pool, the recent events' 4 MiB); the second half, other sessions, must
        // then add next to nothing. Held, its 1,000 payloads alone would be 16 MiB.
        @Test("2,000 sessions of 16 KiB saved each: reconnecting and reading the second 1,000 after the first 1,000 grows RSS by under 6 MiB (16 MiB if kept)")
        func readsAreNotKept() throws {
            let workspace = try Workspace(configuration: HostileConfiguration.text(limits: []))
            let first = try DaemonProcess(workspace)
            try Self.run(first, (0..<10).map { framed("Connect", ["app": .string("org.saved.mem\($0)"), "background": true]) },
                         total: Self.count, "connecting")
            try Self.run(first, Self.each("SaveState", 1...Self.count, ["restoration": .object(Self.restoration)]),
                         total: Self.count, "saving")
            try Self.run(first, Self.each("Disconnect"), total: Self.count, "archiving")
            try first.stop()

            let daemon = try DaemonProcess(workspace, readyTimeout: 60)
            defer { try? daemon.stop() }
            sleepMilliseconds(300)
            let atReady = daemon.residentBytes
            try Self.round(daemon, 1...(Self.count / 2))
            let half = daemon.residentBytes
            try Self.round(daemon, (Self.count / 2 + 1)...Self.count)
            let grown = daemon.residentBytes - half
            #expect(grown < 6 << 20, "RSS grew by \(grown >> 10) KiB in the second half (READY \(atReady >> 20) MiB, first half \(half >> 20) MiB)")
            let shown = try daemon.call("GetSession", ["session": .string("s\(Self.count)")])["session"]
            #expect(shown?["restoration"]?["json"] == Self.restoration["json"])
            #expect(shown?["restores"]?.intValue == 1 && shown?["condition"] == "archived")
            try daemon.assertServing("after the reads")
        }
    }
}
