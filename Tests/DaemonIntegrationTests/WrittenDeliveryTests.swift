import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Under Durability=full an attached app gets a batch's events once the batch is written (in
/// the log), before it is synced; replies and Monitors still wait for the sync. What that must
/// not break: exactly-once delivery across a kill -9 of scened, and a daemon that never waits
/// for an app that does not read.
@Suite("Events to attached apps once written (Durability=full)", .serialized)
struct WrittenDeliveryTests {
    static let hooks: [String: String?] = ["SCENED_TEST_HOOKS": "1"]

    static func configuration(_ extra: String = "") -> String {
        """
        [Lifecycle]
        SuspendDelaySec=60s
        [Store]
        Durability=full
        \(extra)
        """
    }

    @Test("a notification the app got once its batch was written, while the sync stalled (no Notify reply, nothing on a Monitor yet), is not handed over again after a kill -9 of scened",
          .timeLimit(.minutes(2)))
    func writtenDeliveryIsOnceAcrossAKill() throws {
        let workspace = try Workspace(configuration: Self.configuration())
        let name = "com.example.early"
        var daemon = try DaemonProcess(workspace, environment: Self.hooks)
        var app = try AttachedApp(daemon, app: name)
        _ = try app.events(through: "didFinishLaunching")
        let monitor = try RawConnection(path: daemon.socketPath)
        try monitor.sendCall("io.scened.Manager.Monitor", [:], more: true)
        #expect(try monitor.receiveObject(timeout: 10).errorName == nil)

        // The next commit with changes is the Notify's: it is written, then its sync waits 5 s.
        _ = try daemon.client().call("io.scened.Testing.StallSync", ["seconds": 5])
        let sender = try RawConnection(path: daemon.socketPath)
        let sent = monotonicSeconds()
        try sender.sendCall("io.scened.Manager.Notify", ["app": .string(name), "payload": ["n": 1]])
        let got = try #require(try app.next(timeout: 4), "no event while the sync stalls")
        let early = monotonicSeconds() - sent
        #expect(got.event == "didReceiveNotification", "\(got)")
        #expect(early < 3, "handed over \(early) s after Notify: after the stalled sync, not once written")
        // Durable not yet: the reply and the Monitor's event wait for the sync.
        #expect(try sender.staysQuiet(milliseconds: 300), "the Notify reply came before the sync")
        #expect(try monitor.staysQuiet(milliseconds: 0), "a Monitor saw the event before the sync")
        daemon.crash()

        daemon = try DaemonProcess(workspace, environment: Self.hooks)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        app = try AttachedApp(daemon, app: name, since: got.seq + 1)
        var again: [ObservedEvent] = []
        while let e = try app.next(timeout: 2) { again.append(e) }
        #expect(!again.contains { $0.event == "didReceiveNotification" }, "handed over again: \(again)")
        let waiting = try Wakes.listWork(daemon, name)["notifications"]?.arrayValue ?? []
        #expect(waiting.isEmpty, "still stored after the kill: \(waiting)")
        let logged = try StopSupport.events(daemon, since: 0).filter { $0.event == "didReceiveNotification" }
        #expect(logged.map(\.seq) == [got.seq], "in the event log once, as handed over: \(logged)")
        print("written delivery: didReceiveNotification \(Format.fixed(early * 1000, 1)) ms after Notify with the sync stalled 5 s; once across the kill -9")
    }

    @Test("hostile: an attached app that never reads while 60 KiB notifications flow to it: scened never waits for it, cuts it off at MaxOutputPerConnection, and a reading app and other clients are served within bounds",
          .timeLimit(.minutes(3)))
    func appThatNeverReads() throws {
        let workspace = try Workspace(configuration: Self.configuration("""
            [Limits]
            MaxOutputPerConnection=512K
            [Background]
            MaxNotificationSize=64K
            NotificationBudgetSec=1s
            """))
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let deafName = "com.example.deaf", readerName = "com.example.reader"
        let deaf = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
        try deaf.sendCall("io.scened.App.Attach", ["app": .string(deafName)], more: true)
        let reader = try AttachedApp(daemon, app: readerName)
        _ = try reader.events(through: "didFinishLaunching")
        let sender = try RawConnection(path: daemon.socketPath)
        let probe = try daemon.client(timeout: .seconds(10))
        let payload: JSONValue = .string(String(repeating: "x", count: 60_000))

        var outcomes: [String: Int] = [:]
        var readerLatency: [Double] = []
        var probeLatency: [Double] = []
        let began = monotonicSeconds()
        for round in 0..<40 {
            // Eight to the deaf app, pipelined, then one to the reader and a status call.
            for _ in 0..<8 { try sender.sendCall("io.scened.Manager.Notify", ["app": .string(deafName), "payload": ["blob": payload]]) }
            for _ in 0..<8 { outcomes[try sender.receiveObject(timeout: 10).errorName ?? "accepted", default: 0] += 1 }
            let sent = monotonicSeconds()
            _ = try daemon.call("Notify", ["app": .string(readerName), "payload": ["round": .int(Int64(round))]])
            // Answered, it is suspended again; the next one resumes it first.
            let got = try #require(try reader.events(through: "didReceiveNotification", timeout: 5).last,
                                   "the reading app got nothing in round \(round)")
            readerLatency.append(monotonicSeconds() - sent)
            #expect(got.event == "didReceiveNotification")
            _ = try reader.call("Acknowledge", ["seq": .int(Int64(got.seq))])
            let asked = monotonicSeconds()
            _ = try probe.call("io.scened.Manager.GetStatus")
            probeLatency.append(monotonicSeconds() - asked)
        }
        let elapsed = monotonicSeconds() - began
        // Cut off: what the kernel held (the error queued after it found no room while the
        // connection lingered), then the end of the stream; its process taken for dead.
        var messages = 0
        while let message = try deaf.receiveMessage(timeout: 10) {
            messages += 1
            let reply = try JSONParser.parse(message)
            #expect(messages > 1 || reply["parameters"]?["attached"] != nil, "the first message is not Attach's reply")
        }
        #expect(deaf.sawEOF)
        #expect(daemon.stderr.contains("MaxOutputPerConnection exceeded"), "not cut off for its unread output")
        #expect(daemon.stderr.contains("\(deafName)'s process"), "the cut-off app was not taken for dead")
        #expect((outcomes["accepted"] ?? 0) > 8, "the deaf app was refused from the start: \(outcomes)")
        #expect(Set(outcomes.keys).isSubset(of: ["accepted", "io.scened.Manager.LimitExceeded"]), "\(outcomes)")
        let readerMax = readerLatency.max() ?? 0, probeMax = probeLatency.max() ?? 0
        #expect(readerMax < 1.0, "the reading app waited \(readerMax) s for a notification")
        #expect(probeMax < 1.0, "GetStatus took \(probeMax) s during the flood")
        try daemon.assertServing("after an attached app that never read")
        let rss = readTextFile("/proc/\(daemon.pid)/status").split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        let kilobytes = Int(rss.split(separator: " ").dropFirst().first ?? "") ?? 0
        #expect(kilobytes < 200_000, "daemon RSS \(kilobytes) kB")
        print("never-reading app: \(outcomes) in \(Format.fixed(elapsed, 2)) s, \(messages) messages reached it before the cut; reading app max \(Format.fixed(readerMax * 1000, 1)) ms, GetStatus max \(Format.fixed(probeMax * 1000, 1)) ms; RSS \(kilobytes / 1024) MiB")
    }
}
