import Foundation
import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

/// The kinds added for the daemon's own history (`scenectl export-trace`): they round-trip,
/// they replay as the daemon would, and older traces replay exactly as before.
@Suite struct ExportedTraceTests {
    static let settings = TraceSettings(
        source: "scened", since: 12, epochMicros: 1_764_600_000_123_456,
        reclaim: ReclaimConfiguration(watermarks: Watermarks(low: 0.7, high: 0.85, critical: 0.95), aging: .milliseconds(2500),
                                      settle: TimeSpan(microseconds: 1_500_001), maxVictimsPerBatch: 3, defaultRestoreCostMs: 250,
                                      regretWindow: .seconds(30), suspendEarly: false, terminateSuspendedAtCritical: false,
                                      maxSessions: 40, archivedMaxAge: .seconds(3600), maxDiscardsPerDecision: 7),
        engine: EngineConfiguration(suspendDelay: .milliseconds(200), backgroundTaskBudget: .seconds(9), expirationGrace: .milliseconds(300)),
        hold: .milliseconds(1234), gauge: false)

    @Test func theNewKindsRoundTrip() throws {
        let kinds: [TraceEvent.Kind] = [
            .settings(Self.settings), .budget(.bytes(1_000)), .launch(app: "com.example.mail"),
            .open(TraceScene(name: "s3", app: "com.example.mail", bytes: 5, restoreMs: 10)),
            .disconnect("s3"), .activate("s3"), .timedPressure(.critical, durationMs: 3000), .timedPressure(.warning, durationMs: 1),
            .terminate(app: "com.example.mail"), .settings(TraceSettings()),
        ]
        let trace = Trace(events: kinds.enumerated().map { TraceEvent(time: Int64($0.offset) * 7, $0.element) })
        let text = TraceWriter.write(trace)
        var parsed = try TraceParser.parse(text)
        for i in parsed.events.indices { parsed.events[i].line = 0 }
        #expect(parsed.events == trace.events)
        // The last settings line wins, as the last meta line does.
        #expect(parsed.settings == TraceSettings())
        #expect(TraceWriter.write(parsed) == text)
        #expect(text.contains(#""ev":"pressure","level":"critical","for_ms":3000"#))
        #expect(try TraceParser.parse(TraceWriter.write(Trace(events: [TraceEvent(time: 0, .settings(Self.settings))]))).settings
            == Self.settings)
    }

    @Test func badNewLinesAreRefusedWithTheirLine() {
        func message(_ text: String) -> String? {
            do { _ = try TraceParser.parse(text); return nil } catch { return error.description }
        }
        #expect(message(#"{"t":0,"ev":"disconnect","scene":"a"}"#) == #"line 1: scene "a" is not open"#)
        #expect(message(#"{"t":0,"ev":"launch"}"#) == #"line 1: missing "app""#)
        #expect(message(#"{"t":0,"ev":"pressure","level":"normal","for_ms":5}"#)?.contains("warning or critical") == true)
        #expect(message(#"{"t":0,"ev":"pressure","level":"critical","for_ms":-5}"#)?.contains("for_ms") == true)
        #expect(message(#"{"t":0,"ev":"settings","low":0.9,"high":0.8}"#)?.contains("watermarks") == true)
        #expect(message(#"{"t":0,"ev":"settings","aging":5}"#) == #"line 1: unknown field "aging" in a settings event"#)
        // Every member is optional.
        #expect(message(#"{"t":0,"ev":"settings"}"#) == nil)
    }

    /// Metrics of the shipped fixtures by the replayer before the new kinds existed (commit
    /// f5415e3, `scene-replay FIXTURE --json --policy ours,lru`): restores, weighted restore
    /// cost, peak bytes, victims, disconnects, terminations, suspensions, warnings, overkill.
    static let before: [(String, VictimOrder, [UInt64])] = [
        ("a-mix-seed1.jsonl", .ours, [5, 3365, 1251000987, 14, 7, 7, 22, 8, 595163244]),
        ("a-mix-seed1.jsonl", .lru, [8, 4983, 1227492112, 19, 13, 6, 23, 7, 1123914875]),
        ("b-pingpong-seed1.jsonl", .ours, [54, 34823, 1483871925, 68, 59, 9, 120, 24, 1990639835]),
        ("b-pingpong-seed1.jsonl", .lru, [60, 41473, 1497709042, 76, 51, 25, 114, 28, 2436360194]),
        ("c-size-seed1.jsonl", .ours, [30, 30975, 1600000000, 46, 15, 31, 21, 8, 7770000000]),
        ("c-size-seed1.jsonl", .lru, [30, 30975, 1600000000, 46, 15, 31, 21, 8, 7770000000]),
        ("d-spikes-seed1.jsonl", .ours, [2, 1129, 2227338794, 11, 1, 10, 6, 3, 1449241582]),
        ("d-spikes-seed1.jsonl", .lru, [4, 1961, 2123950987, 13, 2, 11, 7, 3, 1383273034]),
        ("e-acks-seed1.jsonl", .ours, [6, 3258, 2097178272, 15, 6, 9, 14, 6, 1303309707]),
        ("e-acks-seed1.jsonl", .lru, [7, 3753, 2095105825, 16, 2, 14, 10, 6, 988954514]),
    ]

    @Test(arguments: before) func shippedFixturesReplayAsBefore(_ file: String, _ order: VictimOrder, _ expected: [UInt64]) throws {
        let text = try String(contentsOfFile: fixturesDirectory() + "/" + file, encoding: .utf8)
        let trace = try TraceParser.parse(text)
        #expect(trace.settings == nil)
        var settings = ReplaySettings(order: order)
        settings.recordActions = true
        let result = Replayer.run(trace, settings: settings)
        let m = result.metrics
        let got: [UInt64] = [UInt64(m.restores), m.weightedRestoreCost, m.peakBytes, UInt64(m.victims), UInt64(m.disconnects),
                             UInt64(m.terminations), UInt64(m.suspensions), UInt64(m.warnings), m.overkillBytes]
        #expect(got == expected, "\(file) \(order)")
        // The action list agrees with the counters it is made from.
        #expect(result.actions.filter { $0.kind == "disconnect" }.count >= m.disconnects)
        #expect(result.actions.filter { $0.kind == "terminate" }.count == m.terminations)
    }

    /// The new lines act: a launch counts the app's own memory, a disconnect frees the scene,
    /// a timed override lapses by itself, a terminate releases the app's scenes.
    @Test func theNewLinesDriveTheEngine() throws {
        let text = """
        {"t":0,"ev":"settings","source":"scened","gauge":true,"aging_us":0,"settle_us":500000,"suspend_delay_us":60000000}
        {"t":0,"ev":"budget","bytes":1000}
        {"t":0,"ev":"app_mem","app":"com.example.a","mem":100}
        {"t":0,"ev":"launch","app":"com.example.a"}
        {"t":10,"ev":"open","scene":"s1","app":"com.example.a","mem":200,"restore_ms":0}
        {"t":20,"ev":"open","scene":"s2","app":"com.example.b","mem":300,"restore_ms":0}
        {"t":30,"ev":"disconnect","scene":"s2"}
        {"t":40,"ev":"pressure","level":"critical","for_ms":2000}
        {"t":5000,"ev":"terminate","app":"com.example.a"}

        """
        let trace = try TraceParser.parse(text)
        var settings = ReplaySettings()
        settings.adopt(try #require(trace.settings))
        #expect(settings.engine.suspendDelay == .seconds(60) && settings.reclaim.settle == .milliseconds(500))
        settings.recordActions = true
        var replayer = Replayer(trace: trace, settings: settings)
        replayer.run()
        #expect(replayer.metrics.traceRefusals == 0, "\(replayer.result.notes)")
        // Real app ids are kept in an exported trace.
        #expect(replayer.engine.apps[AppID("com.example.a")!] != nil)
        // The override made the controller act on s1 (the only live background scene) and lapsed.
        #expect(replayer.result.actions.contains { $0.kind == "disconnect" && $0.target == "s1" }, "\(replayer.result.actions)")
        #expect(replayer.result.actions.allSatisfy { $0.time >= 40 && $0.time < 5000 }, "\(replayer.result.actions)")
        #expect(replayer.controller.override == nil && replayer.controller.level == .normal)
        #expect(replayer.engine.apps[AppID("com.example.a")!]?.process == .notRunning)
        #expect(replayer.engine.residentBytes == 0)
    }
}
