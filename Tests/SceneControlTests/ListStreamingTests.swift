import Testing
import Varlink
@testable import SceneControl

/// `scenectl list` prints each batch as it arrives, not once the listing is over.
@Suite struct ListStreamingTests {
    private func batches(_ sizes: [Int], app: (Int) -> String = { _ in "com.example.mail" })
        -> [Result<JSONObject, VarlinkError>] {
        var next = 1
        return sizes.map { size in
            let sessions: [JSONValue] = (0..<size).map { _ in
                defer { next += 1 }
                return .object(Fixtures.session("s\(next)", app: app(next)))
            }
            return .success(["sessions": .array(sessions)])
        }
    }

    @Test func rowsPrintedBeforeTheNextBatchIsRead() {
        var seen: [Int: String] = [:]
        let result = ctl(["list"], replies: ["ListSessions": batches([4, 4, 4])]) { index, out in seen[index] = out }
        #expect(result.status == 0)
        #expect(seen[0] == "", "nothing before the first batch")
        let first = seen[1]?.split(separator: "\n") ?? []
        #expect(first.count == 5, "the header and the first batch's rows, before the second batch: \(seen[1] ?? "")")
        #expect(first.first?.hasPrefix("SESSION ") == true)
        #expect(first.last?.hasPrefix("s4 ") == true)
        #expect(seen[2]?.split(separator: "\n").count == 9)
        #expect(seen[2]?.contains("listed") == false, "the footer only at the end")
        #expect(result.out.hasSuffix("s12     com.example.mail live      foregroundActive windowApplication     50.0M 2024-11-29 16:35:01\n\n12 sessions listed.\n"))
    }

    @Test func oneBatchPrintsAsTheWholeTable() {
        let replies = batches([3])
        let whole = Verb.sessionTableText(replies)
        #expect(ctl(["list"], replies: ["ListSessions": replies]).out == whole)
        #expect(ctl(["list"], replies: ["ListSessions": [.success(["sessions": []])]]).out
            == "SESSION APP CONDITION STATE ROLE FOOTPRINT LAST ACTIVE\n\n0 sessions listed.\n")
        #expect(ctl(["list", "--no-legend"], replies: ["ListSessions": [.success(["sessions": []])]]).out == "")
    }

    @Test func aWiderCellInALaterBatchWidensItsColumnFromThere() {
        let result = ctl(["list", "--no-legend"], replies: ["ListSessions": batches([2, 2]) { $0 == 3 ? "org.example.a-longer-name" : "com.example.mail" }])
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        // The first batch keeps its own widths; the second is aligned to the wider app.
        #expect(lines[0].hasPrefix("s1 com.example.mail live "))
        #expect(lines[2].hasPrefix("s3 org.example.a-longer-name live "))
        #expect(lines[3].hasPrefix("s4 com.example.mail          live "))
    }

    @Test func jsonStreamsTooAndReadsAsTheWholeObject() throws {
        let replies = batches([2, 0, 3])
        var all: [JSONValue] = []
        for case .success(let batch) in replies { all += batch["sessions"]?.arrayValue ?? [] }
        let whole = JSONObject(["sessions": .array(all)])
        var seen: [Int: String] = [:]
        let short = ctl(["list", "--json"], replies: ["ListSessions": replies]) { index, out in seen[index] = out }
        #expect(short.out == JSONValue.object(whole).serializedString() + "\n")
        #expect(seen[1]?.hasPrefix(#"{"sessions":[{"#) == true, "the first batch's sessions before the second: \(seen[1] ?? "")")
        let pretty = ctl(["list", "--json=pretty"], replies: ["ListSessions": replies])
        #expect(pretty.out == PrettyJSON.render(.object(whole)) + "\n")
        for mode in ["--json", "--json=pretty"] {
            let empty = ctl(["list", mode], replies: ["ListSessions": [.success(["sessions": []])]])
            let expected: JSONValue = .object(["sessions": []])
            #expect(empty.out == (mode == "--json" ? expected.serializedString() : PrettyJSON.render(expected)) + "\n")
        }
    }

    @Test func anErrorFirstPrintsNothingAndKeepsItsStatus() {
        let result = ctl(["list"], replies: ["ListSessions": [.failure(VarlinkError(name: "io.scened.Manager.NoSuchApp", parameters: ["app": "a.b"]))]])
        #expect(result.out == "")
        #expect(result.status != 0)
        #expect(!result.err.isEmpty)
    }
}

extension Verb {
    /// The table as it was printed before streaming: every batch gathered, then rendered.
    static func sessionTableText(_ replies: [Result<JSONObject, VarlinkError>]) -> String {
        var table = Table(sessionColumns, footer: nil)
        var count = 0
        for case .success(let batch) in replies {
            for case .object(let s) in batch["sessions"]?.arrayValue ?? [] {
                table.append(sessionRow(s, time: TimeFormatter(utc: true)))
                count += 1
            }
        }
        table.footer = Table.count(count, "session", "sessions")
        return table.render(legend: true)
    }
}
