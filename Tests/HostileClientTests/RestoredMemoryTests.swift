import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// The state scened restores at start-up is held once. A second reference to the engine's
    /// tables anywhere (the start-up code kept one for the daemon's whole life) makes the first
    /// change to any session copy them all: 100 MB at a million sessions, for as long as the
    /// daemon runs, caused by one Activate from anyone.
    @Suite("Restored state")
    struct RestoredState {
        static let count = 60_000

        @Test("60,000 restored sessions: the first change after a restart does not copy the tables")
        func firstChangeCopiesNothing() throws {
            let workspace = try Workspace(configuration: HostileConfiguration.text(limits: []))
            let first = try DaemonProcess(workspace)
            try LargeListings.populate(first, count: Self.count)
            try first.stop()

            let daemon = try DaemonProcess(workspace, readyTimeout: 60)
            defer { try? daemon.stop() }
            #expect(try daemon.status()["sessions"]?["total"]?.intValue == Int64(Self.count), "all restored")
            sleepMilliseconds(300)
            let atReady = daemon.residentBytes
            _ = try daemon.call("Activate", ["session": "s1"])
            _ = try daemon.call("Background", ["session": "s1"])
            sleepMilliseconds(300)
            let grown = daemon.residentBytes - atReady
            // The sessions alone are 96 bytes each (5.5 MiB here), the candidate index 56 more:
            // a copy is about 10 MiB. One call's own memory is well under 1 MiB.
            #expect(grown < 3 << 20, "RSS grew by \(grown >> 10) KiB with the first change (from \(atReady >> 20) MiB)")
            try daemon.assertServing("after the first change")
        }
    }
}
