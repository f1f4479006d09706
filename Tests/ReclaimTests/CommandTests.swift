import Foundation
import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

/// `scene-replay` (and `scenectl simulate`) through `ReplayCommand.main` with in-memory I/O.
@Suite struct CommandTests {
    final class Console: @unchecked Sendable {
        var out = ""
        var err = ""
        var files: [String: String] = [:]
        var written: [String: String] = [:]

        var io: ReplayIO {
            ReplayIO(readFile: { path throws(ReplayIOError) in
                         guard let text = self.files[path] else { throw ReplayIOError("No such file or directory") }
                         return Array(text.utf8)
                     },
                     writeFile: { path, text throws(ReplayIOError) in self.written[path] = text },
                     standardOutput: { self.out += $0 }, standardError: { self.err += $0 },
                     clock: { 0 })
        }

        func run(_ arguments: [String]) -> Int32 { ReplayCommand.main(arguments: arguments, io: io) }
    }

    func fixtureText(_ scenario: Scenario) -> String {
        TraceWriter.write(TraceGenerator(scenario: scenario, seed: 1, size: .fixture).generate())
    }

    @Test func jsonHasOneObjectPerPolicyWithTheRequiredKeys() throws {
        let c = Console()
        c.files["t.jsonl"] = fixtureText(.mix)
        #expect(c.run(["t.jsonl", "--budget", "50%", "--json"]) == 0)
        let lines = c.out.split(separator: "\n")
        #expect(lines.count == 6)
        let required = ["policy", "restores", "weighted_restore_cost", "peak_bytes", "overshoot", "foreground_violations",
                        "pressure_discards", "regret_rate", "decision_us_p50", "decision_us_p99", "gap_closed"]
        var policies: [String] = []
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            for key in required { #expect(object[key] != nil, "missing \(key)") }
            policies.append(object["policy"] as? String ?? "")
            #expect(object["foreground_violations"] as? Int == 0)
            #expect(object["pressure_discards"] as? Int == 0)
        }
        #expect(policies == ["ours", "lru", "largest", "chrome", "lmkd", "opt"])
    }

    @Test func aPolicyListAndAnAbsoluteBudget() {
        let c = Console()
        c.files["t.jsonl"] = fixtureText(.pingpong)
        #expect(c.run(["t.jsonl", "--policy", "lru,opt", "--budget", "1G"]) == 0)
        #expect(c.out.contains("budget 1.0G (1.0G)"))
        let rows = c.out.split(separator: "\n").filter { $0.hasPrefix("lru ") || $0.hasPrefix("opt ") || $0.hasPrefix("ours ") }
        #expect(rows.count == 2)
    }

    @Test func generateWritesTheFixtureBytes() {
        let c = Console()
        #expect(c.run(["--generate", "spikes", "--seed", "1", "--size", "fixture", "--out", "x.jsonl"]) == 0)
        #expect(c.written["x.jsonl"] == fixtureText(.spikes))
        let d = Console()
        #expect(d.run(["--generate", "d", "--seed", "1", "--size", "fixture", "--out", "y.jsonl"]) == 0)
        #expect(d.written["y.jsonl"] == c.written["x.jsonl"], "scenario letters work too")
    }

    @Test func svgChartIsWritten() {
        let c = Console()
        c.files["t.jsonl"] = fixtureText(.spikes)
        #expect(c.run(["t.jsonl", "--policy", "ours,lru", "--svg", "chart.svg"]) == 0)
        let svg = c.written["chart.svg"] ?? ""
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.contains("disconnect at") || svg.contains("terminate at"))
        #expect(svg.contains("memory warning at"))
        #expect(svg.components(separatedBy: "<g>").count - 1 == 2, "one panel per policy")
    }

    @Test func usageErrorsExitTwo() {
        for arguments in [[], ["--policy", "fifo", "t"], ["--budget", "lots", "t"], ["t", "u"], ["--bogus"],
                          ["--generate", "nope", "--seed", "1"], ["--seed"]] {
            let c = Console()
            #expect(c.run(arguments) == 2, "\(arguments)")
            #expect(c.err.hasPrefix("scene-replay: ") && c.err.contains("Usage:"))
        }
    }

    @Test func problemsWithTheTraceExitOneAndSayWhere() {
        let c = Console()
        #expect(c.run(["missing.jsonl"]) == 1)
        #expect(c.err == "scene-replay: cannot read missing.jsonl: No such file or directory\n")
        let d = Console()
        d.files["bad.jsonl"] = "{\"t\":0,\"ev\":\"open\",\"scene\":\"a\",\"mem\":1}\n{\"t\":1,\"ev\":\"fly\"}\n"
        #expect(d.run(["bad.jsonl"]) == 1)
        #expect(d.err == "scene-replay: bad.jsonl: line 2: unknown event \"fly\"\n")
    }

    @Test func helpGoesToStandardOutput() {
        let c = Console()
        #expect(c.run(["--help"]) == 0)
        #expect(c.out.hasPrefix("Usage:") && c.err.isEmpty)
    }

    @Test func theDecisionBenchRunsSmall() {
        let c = Console()
        #expect(c.run(["--decision-bench", "--sessions", "200"]) == 0)
        #expect(c.out.contains("200") && c.out.contains("critical"))
    }

    @Test func theSweepCoversBudgetsAndPolicies() {
        let c = Console()
        #expect(c.run(["--sweep", "--scenarios", "b", "--seeds", "1-2", "--size", "fixture", "--json"]) == 0)
        let lines = c.out.split(separator: "\n")
        #expect(lines.count == 3 * 6 * 2)
        #expect(lines.allSatisfy { $0.contains("\"scenario\":\"pingpong\"") })
    }
}
