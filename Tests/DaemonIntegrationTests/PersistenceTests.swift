import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Sessions live in SQLite: a SIGKILL and a restart on the same state directory restore
/// everything, the event log included, and numbering continues.
@Suite("Persistence across a crash")
struct PersistenceTests {
    @Test("SIGKILL, restart: same sessions and states, Monitor since 1 replays the old events, seq and ids never reused")
    func crashAndRestore() throws {
        let workspace = try Workspace()
        let first = try DaemonProcess(workspace)
        let monitor = try EventMonitor(first)
        let ctl = VarlinkDriver(socketPath: workspace.socketPath)
        _ = try ctl.connect("com.example.mail")                       // s1 foregroundActive
        _ = try ctl.connect("com.example.mail")                       // s2
        _ = try ctl.saveState("s1", json: #"{"scroll":42}"#)
        _ = try ctl.background("s2")
        _ = try ctl.disconnect("s2")                                  // s2 archived
        _ = try ctl.connect("com.example.maps", background: true)     // s3 background
        _ = try ctl.deactivate("s1")                                  // s1 foregroundInactive
        _ = try ctl.connect("com.example.notes")                      // s4
        _ = try ctl.discard("s4")                                     // s4 gone
        let statusBefore = try first.call("GetStatus")["status"]?.objectValue ?? [:]
        let nextSeq = statusBefore["nextSeq"]?.intValue ?? 0
        var before: [ObservedEvent] = []
        while let e = try monitor.next(timeout: 0.5) { before.append(e) }
        #expect(before.count == Int(nextSeq - 1), "the monitor saw \(before.count) events, nextSeq is \(nextSeq)")
        let sessionsBefore = try first.call("ListSessions")["sessions"]
        let appsBefore = try first.call("ListApps")["apps"]?.arrayValue ?? []
        monitor.close()

        first.crash()

        let second = try DaemonProcess(workspace)
        #expect(try second.call("ListSessions")["sessions"] == sessionsBefore, "sessions differ after the restart")
        let appsAfter = try second.call("ListApps")["apps"]?.arrayValue ?? []
        #expect(appsAfter.count == appsBefore.count)
        for (a, b) in zip(appsBefore, appsAfter) {
            for key in ["id", "process", "state", "sessions", "liveSessions", "foregroundActiveScenes", "pendingDiscards", "launches"] {
                #expect(a[key] == b[key], "app \(a["id"] ?? .null): \(key) was \(a[key] ?? .null), is \(b[key] ?? .null)")
            }
        }
        let statusAfter = try second.call("GetStatus")["status"]?.objectValue ?? [:]
        #expect(statusAfter["nextSeq"]?.intValue == nextSeq)
        #expect(statusAfter["sessions"] == statusBefore["sessions"])
        do {
            _ = try second.call("GetSession", ["session": "s4"])
            Issue.record("a discarded session came back")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.SessionDiscarded")
        }

        // The whole history, from the log, then live; checked as one stream across the restart.
        let replay = try EventMonitor(second, parameters: ["since": 1])
        var replayed: [ObservedEvent] = []
        for _ in 0..<before.count {
            guard let e = try replay.next(timeout: 10) else { break }
            replayed.append(e)
        }
        #expect(replayed.map(\.object) == before.map(\.object), "Monitor since 1 did not replay the old events exactly")
        // New work continues the numbering: the next session is s5, the next event nextSeq.
        let connect = try VarlinkDriver(socketPath: workspace.socketPath).activate("s2")
        let seqs = connect["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
        #expect(seqs.first == nextSeq, "events after the restart start at \(seqs.first ?? -1), expected \(nextSeq)")
        let fresh = try VarlinkDriver(socketPath: workspace.socketPath).connect("com.example.notes")
        #expect(try fresh.sessionID == "s5", "session ids must never be reused")
        let live = try replay.expect([Step(event: "willConnectTo", app: "com.example.mail", session: "s2", state: "unattached"),
                                      Step(event: "willEnterForeground", app: "com.example.mail", session: "s2", state: "foregroundInactive"),
                                      Step(event: "didBecomeActive", app: "com.example.mail", session: "s2", state: "foregroundActive")],
                                     "live events after the replay")
        #expect(live.first?.seq == UInt64(nextSeq))
        #expect(live.first?.object["scene"]?.intValue == 2)
        try replay.assertConformant("history across the restart")
        replay.close()
        try second.stop()
    }
}
