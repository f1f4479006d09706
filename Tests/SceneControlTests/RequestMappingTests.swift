import Glibc
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// Each command line becomes exactly one Varlink call with these parameters.
@Suite struct RequestMappingTests {
    /// Where desktop-entries writes its mimeinfo.cache; removed after that case.
    static let mappingScratch = "/tmp/scenectl-mapping-\(getpid())"

    static let mappings: [([String], String, JSONObject, Bool)] = [
        (["status"], "GetStatus", [:], false),
        (["reload"], "Reload", [:], false),
        (["list"], "ListSessions", [:], true),
        (["list", "--app", "com.example.mail", "--state", "foregroundActive", "--condition", "archived"],
         "ListSessions", ["app": "com.example.mail", "condition": "archived", "state": "foregroundActive"], true),
        (["show", "s42", "-n", "0"], "GetSession", ["session": "s42"], false),
        (["show", "42", "-n", "0"], "GetSession", ["session": "s42"], false),
        (["show-app", "com.example.mail"], "GetApp", ["app": "com.example.mail"], false),
        (["apps"], "ListApps", [:], false),
        (["tasks"], "ListApps", [:], false),
        (["launch", "com.example.mail"], "Launch", ["app": "com.example.mail"], false),
        (["terminate", "com.example.mail"], "Terminate", ["app": "com.example.mail"], false),
        (["connect", "com.example.mail"], "Connect", ["app": "com.example.mail"], false),
        (["connect", "com.example.mail", "--role", "carTemplateApplication", "--configuration", "Car",
          "--footprint", "50M", "--background", "--user-info", "{\"doc\":7}", "--protected", "--restore-cost", "120"],
         "Connect", ["app": "com.example.mail", "role": "carTemplateApplication", "configuration": "Car",
                     "userInfo": ["doc": 7], "footprint": 52_428_800, "background": true, "protected": true,
                     "restoreCostMs": 120], false),
        (["activate", "s1"], "Activate", ["session": "s1"], false),
        (["deactivate", "s2"], "Deactivate", ["session": "s2"], false),
        (["background", "s3"], "Background", ["session": "s3"], false),
        (["disconnect", "s4"], "Disconnect", ["session": "s4"], false),
        (["discard", "s5"], "Discard", ["session": "s5"], false),
        (["save-state", "s1", "{\"scroll\":[1,2]}"], "SaveState", ["session": "s1", "restoration": ["json": ["scroll": [1, 2]]]], false),
        (["save-state", "s1", "--base64", "AAEC/w=="], "SaveState", ["session": "s1", "restoration": ["base64": "AAEC/w=="]], false),
        (["save-state", "s1", "--clear"], "SaveState", ["session": "s1"], false),
        (["set-user-info", "s1", "{\"k\":\"v\"}"], "SaveUserInfo", ["session": "s1", "userInfo": ["k": "v"]], false),
        (["set-footprint", "s1", "1.5K"], "SetFootprint", ["session": "s1", "footprint": 1536], false),
        (["set-protected", "s1", "no"], "SetProtected", ["session": "s1", "protected": false], false),
        (["set-app-footprint", "com.example.mail", "4096"], "SetAppFootprint", ["app": "com.example.mail", "footprint": 4096], false),
        (["task", "begin", "s9"], "BeginBackgroundTask", ["session": "s9"], false),
        (["task", "begin", "--app", "com.example.mail", "--name", "upload"], "BeginBackgroundTask", ["app": "com.example.mail", "name": "upload"], false),
        (["task", "end", "t3"], "EndBackgroundTask", ["token": "t3"], false),
        (["task", "end", "3"], "EndBackgroundTask", ["token": "t3"], false),
        (["memory-warning"], "MemoryWarning", [:], false),
        (["memory-warning", "com.example.mail", "com.example.maps"], "MemoryWarning", ["apps": ["com.example.mail", "com.example.maps"]], false),
        (["pressure"], "GetPressure", [:], false),
        (["pressure", "set", "warning"], "SetPressure", ["level": "warning"], false),
        (["pressure", "set", "critical", "--for", "5min"], "SetPressure", ["level": "critical", "duration": 300_000_000], false),
        (["pressure", "clear"], "ClearPressure", [:], false),
        (["pressure", "plan"], "GetReclaimPlan", [:], false),
        (["pressure", "plan", "--level", "critical", "-n", "5"], "GetReclaimPlan", ["level": "critical", "limit": 5], false),
        (["export-trace"], "ExportTrace", [:], true),
        (["export-trace", "--since", "7"], "ExportTrace", ["since": 7], true),
        (["metrics"], "GetMetrics", [:], false),
        (["monitor"], "Monitor", [:], true),
        (["monitor", "--app", "com.example.mail", "--session", "s2", "--since", "100"], "Monitor",
         ["app": "com.example.mail", "session": "s2", "since": 100], true),
        (["end-interruption", "i3"], "EndInterruption", ["token": "i3"], false),
        (["end-interruption", "12"], "EndInterruption", ["token": "i12"], false),
        (["notify", "com.example.mail", "{\"text\":\"hi\"}"], "Notify", ["app": "com.example.mail", "payload": ["text": "hi"]], false),
        (["notify", "com.example.mail", "{}", "--priority", "high"], "Notify", ["app": "com.example.mail", "payload": [:], "priority": "high"], false),
        // An app's own requests, which an operator makes for it: io.scened.App.
        (["schedule", "com.example.mail", "mail.refresh"], "io.scened.App.ScheduleBackgroundTask",
         ["app": "com.example.mail", "identifier": "mail.refresh", "kind": "refresh"], false),
        (["schedule", "com.example.mail", "mail.sync", "--kind", "processing", "--in", "5min"], "io.scened.App.ScheduleBackgroundTask",
         ["app": "com.example.mail", "identifier": "mail.sync", "kind": "processing", "earliestBegin": .int(Int64(testNow) + 300_000_000)], false),
        (["schedule", "com.example.mail", "a", "--at", "2024-11-29 17:00"], "io.scened.App.ScheduleBackgroundTask",
         ["app": "com.example.mail", "identifier": "a", "kind": "refresh", "earliestBegin": 1_732_899_600_000_000], false),
        (["schedule", "com.example.mail", "a", "--at", "2024-11-29T17:00:30 UTC"], "io.scened.App.ScheduleBackgroundTask",
         ["app": "com.example.mail", "identifier": "a", "kind": "refresh", "earliestBegin": 1_732_899_630_000_000], false),
        (["schedule", "com.example.mail", "a", "--at", "@1732899600.5"], "io.scened.App.ScheduleBackgroundTask",
         ["app": "com.example.mail", "identifier": "a", "kind": "refresh", "earliestBegin": 1_732_899_600_500_000], false),
        (["cancel-task", "com.example.mail", "mail.refresh"], "io.scened.App.CancelBackgroundTask",
         ["app": "com.example.mail", "identifier": "mail.refresh"], false),
        (["open", "notes:hello"], "Open", ["url": "notes:hello"], false),
        (["open", "--", "notes:hello"], "Open", ["url": "notes:hello"], false),
        (["open", "Notes://x/y?q=1#f", "--session", "4", "--background"], "Open",
         ["url": "Notes://x/y?q=1#f", "session": "s4", "activate": false], false),
        (["open", "--activity", "org.example.notes.edit"], "Open", ["activity": ["activityType": "org.example.notes.edit"]], false),
        (["open", "--activity", "org.example.notes.edit", "--title", "Edit", "--user-info", "{\"note\":3}", "--target", "note-3",
          "--webpage-url", "https://example.org/n/3", "--session", "s2"], "Open",
         ["activity": ["activityType": "org.example.notes.edit", "title": "Edit", "userInfo": ["note": 3],
                       "targetContentIdentifier": "note-3", "webpageURL": "https://example.org/n/3"], "session": "s2"], false),
        (["routes"], "ListRoutes", [:], false),
        // Writes a mimeinfo.cache into a scratch directory of the test process.
        (["desktop-entries", "--directory", mappingScratch + "/applications", "--exec", "/usr/bin/scenectl"], "ListRoutes", [:], false),
    ]

    @Test(arguments: mappings) func commandBecomesCall(_ arguments: [String], _ method: String, _ parameters: JSONObject, _ more: Bool) {
        defer { if arguments.first == "desktop-entries" { removeTree(Self.mappingScratch) } }
        let result = ctl(arguments)
        #expect(result.status == 0, "\(arguments): \(result.err)")
        // A short name is io.scened.Manager's; an app's own requests are named in full.
        let full = method.hasPrefix("io.scened.") ? method : "io.scened.Manager." + method
        #expect(result.calls == [RecordedCall(method: full, parameters: parameters, more: more)], "\(arguments)")
        #expect(result.err.isEmpty)
    }

    @Test func everyDaemonVerbIsMapped() throws {
        var mapped: Set<String> = []
        for (arguments, _, _, _) in Self.mappings {
            if let name = try ArgumentParser.parse(arguments).verb?.name { mapped.insert(name) }
        }
        // logs reads the journal and simulate replays a trace locally: neither calls the daemon;
        // top makes several calls (TopTests), and so does interrupt, its beginning and its end
        // (InterruptTests); pressure chart writes a file (its own test below).
        #expect(mapped == Set(Verb.all.map(\.name)).subtracting(["logs", "simulate", "top", "pressure chart", "interrupt"]))
    }

    @Test func pressureChartAsksForTheHistoryAndWritesTheChart() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/episode.svg"
        let history: JSONObject = [
            "samples": [["time": 1_000_000, "seq": 5, "usage": 100, "budget": 1000, "level": "normal"],
                        ["time": 3_000_000, "seq": 9, "usage": 950, "budget": 1000, "level": "critical"]],
            "actions": [["time": 3_000_000, "seq": 9, "action": "disconnect", "target": "s2", "usage": 950]],
            "lowWatermark": 0.8, "highWatermark": 0.9, "droppedSamples": 0, "droppedActions": 0,
        ]
        let result = ctl(["pressure", "chart", "--svg", path, "--since", "5"], replies: ["GetPressureHistory": [.success(history)]])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.calls == [RecordedCall(method: "io.scened.Manager.GetPressureHistory", parameters: ["since": 5], more: false)])
        #expect(result.out == "Wrote \(path): 2 samples over 2s from event 5; 1 disconnect.\n")
        let svg = readTextFile(path)
        #expect(svg.contains("<title>disconnect at 2000 ms</title>"), "the action is marked 2 s after the first sample")

        let empty = ctl(["pressure", "chart", "--svg", path], replies: ["GetPressureHistory": [.success(["samples": [], "actions": []])]])
        #expect(empty.status == 1 && empty.err.contains("no pressure history"))
        withExtendedLifetime(directory) {}
    }

    @Test func exportTraceWritesEveryPieceAndRefusesABadSince() throws {
        let pieces: [Result<JSONObject, VarlinkError>] = [
            .success(["lines": [#"{"t":0,"ev":"budget","bytes":100}"#, #"{"t":0,"ev":"launch","app":"a.b"}"#]]),
            .success(["lines": [#"{"t":5,"ev":"terminate","app":"a.b"}"#]]),
        ]
        let out = ctl(["export-trace"], replies: ["ExportTrace": pieces])
        #expect(out.status == 0, "\(out.err)")
        #expect(out.out == #"{"t":0,"ev":"budget","bytes":100}"# + "\n" + #"{"t":0,"ev":"launch","app":"a.b"}"# + "\n"
            + #"{"t":5,"ev":"terminate","app":"a.b"}"# + "\n")

        let directory = TemporaryDirectory()
        let path = directory.path + "/t.jsonl"
        let file = ctl(["export-trace", "-o", path, "--since", "3"], replies: ["ExportTrace": pieces])
        #expect(file.status == 0 && file.out.isEmpty, "\(file.err)")
        #expect(readTextFile(path).split(separator: "\n").count == 3)
        let unwritable = ctl(["export-trace", "-o", directory.path + "/no/such/t.jsonl"], replies: ["ExportTrace": pieces])
        #expect(unwritable.status == 1 && unwritable.err.contains("cannot write") && unwritable.calls.isEmpty)

        let bad = ctl(["export-trace", "--since", "x"])
        #expect(bad.status == 2 && bad.err.contains("--since") && bad.calls.isEmpty)
        withExtendedLifetime(directory) {}
    }

    @Test func mutatingVerbsAreQuietUnlessAsked() {
        let events: JSONObject = ["events": [
            ["seq": 10, "time": 0, "event": "willEnterForeground", "app": "com.example.mail", "session": "s1", "state": "foregroundInactive"],
            ["seq": 11, "time": 0, "event": "didBecomeActive", "app": "com.example.mail", "session": "s1", "state": "foregroundActive"],
        ]]
        let quiet = ctl(["activate", "s1"], replies: ["Activate": [.success(events)]])
        #expect(quiet.status == 0)
        #expect(quiet.out.isEmpty)

        let verbose = ctl(["-v", "activate", "s1"], replies: ["Activate": [.success(events)]])
        #expect(verbose.out == """
            SEQ EVENT               APP              SESSION STATE
             10 willEnterForeground com.example.mail s1      foregroundInactive
             11 didBecomeActive     com.example.mail s1      foregroundActive

            2 events.

            """)

        let json = ctl(["activate", "s1", "--json"], replies: ["Activate": [.success(events)]])
        #expect(json.out == JSONValue.object(events).serializedString() + "\n")
        #expect(!json.out.dropLast().contains("\n"), "one line")
    }

    @Test func connectAndTaskBeginPrintWhatTheyCreated() {
        let session: JSONObject = ["session": ["id": "s77", "app": "com.example.mail"], "events": [
            ["seq": 1, "time": 0, "event": "didFinishLaunching", "app": "com.example.mail", "state": "running"],
        ]]
        #expect(ctl(["connect", "com.example.mail"], replies: ["Connect": [.success(session)]]).out == "s77\n")
        let verbose = ctl(["connect", "com.example.mail", "-v", "--no-legend"], replies: ["Connect": [.success(session)]])
        #expect(verbose.out == "s77\n1 didFinishLaunching com.example.mail - running\n")

        let task: JSONObject = ["task": ["token": "t5", "app": "com.example.mail", "name": "", "beganAt": 0], "events": []]
        #expect(ctl(["task", "begin", "s1"], replies: ["BeginBackgroundTask": [.success(task)]]).out == "t5\n")
        #expect(ctl(["task", "begin", "s1", "--json"], replies: ["BeginBackgroundTask": [.success(task)]]).out
            == JSONValue.object(task).serializedString() + "\n")
    }
}
