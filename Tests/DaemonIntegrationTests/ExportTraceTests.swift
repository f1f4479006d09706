import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// `scenectl export-trace` on the real daemon: a real episode (forced pressure on background
/// scenes, after requested activations, backgrounds, a disconnect, a discard, a launch and a
/// termination), exported and replayed by `scenectl simulate --policy ours`, takes the reclaim
/// actions the daemon's history shows, in the same order.
@Suite("scenectl export-trace")
struct ExportTraceTests {
    struct Action: Equatable, CustomStringConvertible {
        var kind: String
        var target: String
        var description: String { "\(kind) \(target)" }
    }

    @Test("an exported episode replays to the daemon's own reclaim actions; --since shortens it; a bad --since is a usage error")
    func exportedEpisodeReplaysToTheSameActions() throws {
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        let ctl = SceneCtlDriver(socketPath: workspace.socketPath, directory: workspace.path)
        func scenectl(_ arguments: [String]) throws -> Completed {
            try run([Binaries.scenectl, "--socket", workspace.socketPath] + arguments, environment: ["SCENED_SOCKET": nil],
                    in: workspace.path)
        }
        // Distinct sizes and restore costs, so that the ranking has no ties to break.
        for (i, (size, cost)) in [("300M", "900"), ("250M", "100"), ("200M", "400"), ("150M", "700"), ("120M", "50")].enumerated() {
            _ = try ctl.ctl(["connect", "com.example.trace\(i + 1)", "--background", "--footprint", size, "--restore-cost", cost])
        }
        _ = try ctl.ctl(["connect", "com.example.front", "--footprint", "100M"])
        _ = try ctl.ctl(["activate", "s1"])
        _ = try ctl.ctl(["background", "s1"])
        _ = try ctl.ctl(["disconnect", "s2"])
        _ = try ctl.ctl(["discard", "s4"])
        _ = try ctl.ctl(["launch", "com.example.idle"])
        _ = try ctl.ctl(["set-app-footprint", "com.example.idle", "80M"])
        _ = try ctl.ctl(["terminate", "com.example.trace3"])
        _ = try ctl.ctl(["pressure", "set", "critical", "--for", "3s"])
        // The whole episode: the override lapses and the level is back to normal.
        let over = try waitUntil(seconds: 20) {
            let p = try daemon.call("GetPressure")["pressure"]?.objectValue
            return p?["level"]?.stringValue == "normal" && p?["lastEpisode"]?.objectValue != nil
        }
        #expect(over, "the forced episode did not end")
        let history = try daemon.call("GetPressureHistory")
        let daemonActions = (history["actions"]?.arrayValue ?? []).compactMap(\.objectValue).map {
            Action(kind: $0["action"]?.stringValue ?? "?", target: $0["target"]?.stringValue ?? "?")
        }
        let daemonTimes = (history["actions"]?.arrayValue ?? []).compactMap { $0["time"]?.intValue }
        #expect(daemonActions.contains { $0.kind == "disconnect" }, "no disconnect: \(daemonActions)")
        #expect(daemonActions.contains { $0.kind == "terminate" }, "no termination: \(daemonActions)")

        let path = workspace.path + "/episode.jsonl"
        let exported = try scenectl(["export-trace", "-o", path])
        #expect(exported.status == 0 && exported.stdout.isEmpty, "\(exported.summary)")
        let text = readTextFile(path)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains(#""ev":"settings","source":"scened""#) == true, "\(lines.prefix(2))")
        // Every evaluation since the start is known: the replay decides where the daemon did.
        #expect(lines.first?.contains(#""since":1,"#) == true && lines.first?.contains(#""explicit_decisions":true"#) == true)
        #expect(lines.contains { $0.contains(#""ev":"budget","bytes":8589934592"#) }, "the daemon's 8G budget")
        #expect(lines.contains { $0.contains(#""ev":"pressure","level":"critical","for_ms":3000"#) })
        for kind in ["open", "activate", "background", "disconnect", "close", "launch", "terminate", "decide"] {
            #expect(lines.contains { $0.contains(#""ev":"\#(kind)""#) }, "no \(kind) line in the trace")
        }
        #expect(lines.contains { $0.contains(#""scene":"s1","app":"com.example.trace1","mem":314572800,"restore_ms":900"#) })
        // The same trace on standard output.
        let printed = try scenectl(["export-trace"])
        #expect(printed.status == 0 && printed.stdout == text, "\(printed.summary)")

        let simulated = try scenectl(["simulate", path, "--policy", "ours", "--actions"])
        #expect(simulated.status == 0, "\(simulated.summary)")
        var replayActions: [Action] = []
        var replayTimes: [Int64] = []
        for line in simulated.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
            guard parts.count == 4, parts[0] == "ours", let t = Int64(parts[1]) else {
                Issue.record("not an action line: \(line)")
                continue
            }
            replayActions.append(Action(kind: parts[2], target: parts[3]))
            replayTimes.append(t)
        }
        #expect(replayActions == daemonActions, "daemon \(daemonActions), replay \(replayActions)")
        // At the same times from t=0, within a scheduling delay (the daemon's timer fires late).
        let epoch = lines.first.flatMap { try? JSONParser.parse($0) }?["epoch_us"]?.intValue ?? 0
        #expect(epoch > 0)
        for (d, r) in zip(daemonTimes, replayTimes) {
            #expect(abs((d - epoch) / 1000 - r) <= 500, "daemon at \((d - epoch) / 1000) ms, replay at \(r) ms")
        }
        // What if: another policy on the same episode runs and says what it did.
        let lru = try scenectl(["simulate", path, "--policy", "lru", "--actions", "--json"])
        #expect(lru.status == 0 && lru.stdout.contains(#""policy":"lru""#), "\(lru.summary)")

        // --since: only what came after.
        let next = try daemon.call("GetStatus")["status"]?["nextSeq"]?.intValue ?? 0
        _ = try ctl.ctl(["connect", "com.example.late", "--footprint", "10M"])
        let later = try scenectl(["export-trace", "--since", String(next)])
        #expect(later.status == 0, "\(later.summary)")
        let laterLines = later.stdout.split(separator: "\n")
        #expect(laterLines.count >= 3 && laterLines.count < lines.count, "\(laterLines.count) of \(lines.count) lines")
        #expect(laterLines.first?.contains(#""since":\#(next)"#) == true)
        #expect(later.stdout.contains(#""app":"com.example.late""#) && !later.stdout.contains("com.example.trace2"))

        // A stream only: without "more" the call is refused.
        #expect(throws: (any Error).self) { try daemon.call("ExportTrace") }

        // A bad --since: the usage status, a message on stderr, nothing on stdout.
        let bad = try scenectl(["export-trace", "--since", "-3"])
        #expect(bad.status == 2 && bad.stderr.contains("--since") && bad.stdout.isEmpty, "\(bad.summary)")
        let unwritable = try scenectl(["export-trace", "-o", workspace.path + "/no/such/dir/t.jsonl"])
        #expect(unwritable.status == 1 && unwritable.stderr.contains("cannot write"), "\(unwritable.summary)")
        try daemon.stop()
    }

    @Test("a history longer than the daemon keeps in memory comes in bounded pieces, read by the commit thread, all of it")
    func longHistoryComesInPieces() throws {
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        let client = try daemon.client()
        // 1,500 apps of one session each: three events apiece, more than the 4,096 events the
        // daemon keeps in memory, so the start of the log is read from SQLite.
        let count = 1_500
        for i in 0..<count {
            try client.send(oneway: "io.scened.Manager.Connect",
                            ["app": .string("com.example.bulk\(i)"), "background": true, "footprint": 1_000_000])
        }
        let next = try client.call("io.scened.Manager.GetStatus")["status"]?["nextSeq"]?.intValue ?? 0
        #expect(next > 4_096, "only \(next - 1) events")
        var pieces = 0
        var lines = 0
        var opens = 0
        var largest = 0
        try daemon.client(timeout: .seconds(60)).callMore("io.scened.Manager.ExportTrace") { reply in
            pieces += 1
            largest = max(largest, JSONValue.object(reply).serializedString().utf8.count)
            for line in reply["lines"]?.arrayValue ?? [] {
                lines += 1
                if line.stringValue?.contains(#""ev":"open""#) == true { opens += 1 }
            }
            return true
        }
        #expect(opens == count, "\(opens) sessions opened in the trace")
        #expect(pieces >= 3, "\(lines) lines in \(pieces) pieces")
        #expect(largest <= 300 << 10, "a piece of \(largest) bytes")
        // scenectl writes the same lines, and the replay reads them all.
        let path = workspace.path + "/bulk.jsonl"
        let exported = try run([Binaries.scenectl, "--socket", workspace.socketPath, "export-trace", "-o", path],
                               environment: ["SCENED_SOCKET": nil], in: workspace.path)
        #expect(exported.status == 0, "\(exported.summary)")
        #expect(readTextFile(path).split(separator: "\n").count == lines)
        let replayed = try run([Binaries.scenectl, "simulate", path, "--policy", "ours", "--json"],
                               environment: ["SCENED_SOCKET": nil], in: workspace.path)
        #expect(replayed.status == 0 && replayed.stdout.contains(#""trace_refusals":0"#), "\(replayed.summary)")
        try daemon.stop()
    }
}
