import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

@Suite struct TraceFormatTests {
    /// The example of reclaim-policy.md §3.7, as written there (comments on their own lines).
    static let example = """
    {"t":0,"ev":"open","scene":"a","mem":180e6,"restore_ms":900,"state_bytes":40e3,"flags":[]}
    # -> FG_ACTIVE; others: deactivate/background/suspend/close
    {"t":1200,"ev":"activate","scene":"a"}
    {"t":5000,"ev":"mem","scene":"a","mem":220e6}
    {"t":9000,"ev":"budget","bytes":1.5e9}
    {"t":9100,"ev":"pressure","level":"warn"}
    {"t":9200,"ev":"ack_profile","scene":"a","latency_ms":120,"defer":false}

    """

    @Test func theReferenceExampleParses() throws {
        let trace = try TraceParser.parse(Self.example)
        #expect(trace.events.count == 6)
        #expect(trace.events[0].kind == .open(TraceScene(name: "a", bytes: 180_000_000, restoreMs: 900,
                                                         stateBytes: 40_000, flags: [])))
        #expect(trace.events[0].line == 1)
        #expect(trace.events[1] == TraceEvent(time: 1_200, .activate("a"), line: 3))
        #expect(trace.events[2].kind == .mem(scene: "a", bytes: 220_000_000))
        #expect(trace.events[3].kind == .budget(.bytes(1_500_000_000)))
        #expect(trace.events[4].kind == .pressure(.warning))
        #expect(trace.events[5].kind == .ackProfile(AckProfile(scene: "a", latencyMs: 120, defers: false)))
    }

    @Test func everyEventKindRoundTrips() throws {
        let events: [TraceEvent.Kind] = [
            .meta(scenario: "mix", seed: 7),
            .budget(.bytes(2_000_000_000)), .budget(.scale(0.7)), .budget(.unlimited),
            .open(TraceScene(name: "a \"q\"", app: "mail", bytes: 5, restoreMs: 10, stateBytes: 3, flags: ["protected", "x"])),
            .open(TraceScene(name: "b", bytes: 1, restoreMs: 0)),
            .activate("a \"q\""), .deactivate("a \"q\""), .background("a \"q\""), .suspend("b"), .mem(scene: "b", bytes: 9),
            .appMem(app: "mail", bytes: 4), .protect(scene: "b", on: true), .pressure(.critical), .pressure(nil),
            .ackProfile(AckProfile(scene: "b", latencyMs: nil, defers: true)), .close("b"),
        ]
        let trace = Trace(events: events.enumerated().map { TraceEvent(time: Int64($0.offset) * 10, $0.element) })
        let text = TraceWriter.write(trace)
        var parsed = try TraceParser.parse(text)
        for i in parsed.events.indices { parsed.events[i].line = 0 }
        #expect(parsed.events == trace.events)
        #expect(parsed.scenario == "mix" && parsed.seed == 7)
        #expect(TraceWriter.write(parsed) == text)
    }

    func error(_ text: String) -> TraceError? {
        do {
            _ = try TraceParser.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func errorsNameTheLine() {
        let open = #"{"t":0,"ev":"open","scene":"a","mem":1}"#
        let cases: [(String, Int, String)] = [
            (open + "\n{\"t\":1,\"ev\":\"activate\",\"scene\":\"a\"\n", 2, "invalid JSON"),
            (open + "\n\n{\"t\":1,\"ev\":\"jump\"}", 3, "unknown event \"jump\""),
            (open + "\n{\"t\":1,\"ev\":\"activate\"}", 2, "missing \"scene\""),
            (open + "\n{\"ev\":\"activate\",\"scene\":\"a\"}", 2, "missing \"t\""),
            (open + "\n{\"t\":-1,\"ev\":\"activate\",\"scene\":\"a\"}", 2, "non-negative"),
            (#"{"t":5,"ev":"budget","bytes":1}"# + "\n" + #"{"t":4,"ev":"budget","bytes":1}"#, 2, "time goes backwards"),
            (#"{"t":0,"ev":"activate","scene":"z"}"#, 1, "scene \"z\" is not open"),
            (open + "\n" + open, 2, "already open"),
            (open + "\n{\"t\":1,\"ev\":\"close\",\"scene\":\"a\"}\n{\"t\":2,\"ev\":\"mem\",\"scene\":\"a\",\"mem\":3}", 3, "not open"),
            (#"{"t":0,"ev":"open","scene":"a","mem":-4}"#, 1, "must not be negative"),
            (#"{"t":0,"ev":"open","scene":"a","mem":"big"}"#, 1, "non-negative number"),
            (#"{"t":0,"ev":"open","scene":"a","mem":1,"memory":2}"#, 1, "unknown field \"memory\""),
            (#"{"t":0,"ev":"pressure","level":"panic"}"#, 1, "unknown pressure level"),
            (#"{"t":0,"ev":"budget","bytes":1,"scale":0.5}"#, 1, "exactly one"),
            (#"{"t":0,"ev":"budget","scale":0}"#, 1, "positive"),
            (#"[1,2]"#, 1, "must be a JSON object"),
            // Found by Fuzz/trace: a latency past Int64 milliseconds trapped in the conversion.
            (#"{"t":0,"ev":"ack_profile","scene":"a","latency_ms":1e300}"#, 1, "below 9e15"),
            (#"{"t":0,"ev":"ack_profile","scene":"a","latency_ms":9.3e18}"#, 1, "below 9e15"),
        ]
        for (text, line, message) in cases {
            let e = error(text)
            #expect(e?.line == line, "\(text)")
            #expect(e?.message.contains(message) == true, "\(e?.description ?? "no error") for \(text)")
            #expect(e?.description.hasPrefix("line \(line): ") == true)
        }
    }

    @Test func annotationsAndCommentsAreAllowed() throws {
        let text = "# a comment\n\n  \n{\"t\":0,\"ev\":\"open\",\"scene\":\"a\",\"mem\":1,\"_note\":\"mine\"}\r\n"
        let trace = try TraceParser.parse(text)
        #expect(trace.events.count == 1 && trace.events[0].line == 4)
    }

    @Test func byteCountsAndBudgets() {
        #expect(ByteSize.parse("1500000000") == 1_500_000_000)
        #expect(ByteSize.parse("1.5G") == 1_610_612_736)
        #expect(ByteSize.parse("800M") == 838_860_800)
        #expect(ByteSize.parse("64K") == 65_536)
        #expect(ByteSize.parse("x") == nil && ByteSize.parse("") == nil && ByteSize.parse("-1") == nil)
        #expect(BudgetOption.parse("50%") == .percent(50))
        #expect(BudgetOption.parse("0%") == nil)
        #expect(BudgetOption.percent(30).resolve(workingSet: 1_000) == 300)
        #expect(ByteSize.format(1_610_612_736) == "1.5G")
        #expect(ByteSize.format(512) == "512B")
        // What `format` writes reads back (found by Fuzz/bytesize: "1023B" was refused).
        #expect(ByteSize.parse("512B") == 512 && ByteSize.parse("64KB") == 65_536)
        #expect(ByteSize.parse(ByteSize.format(1023)) == 1023)
        #expect(ByteSize.parse("B") == nil && ByteSize.parse("KB") == nil)
        #expect(Format.fixed(2.345, 2) == "2.35" && Format.fixed(-0.5, 0) == "-1" && Format.fixed(3, 1) == "3.0")
    }
}
