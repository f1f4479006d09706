import Glibc
import ScenedTestSupport
import Testing

/// The page's Varlink client and chart model under node, without a browser: frames split at
/// every byte, several in a chunk, garbage, a peer that never answers or goes away, streams
/// that end or are closed mid-chunk, and the chart's scale and episode
/// (Tests/Cockpit/page_scripts_test.js, one "ok:" line per check).
@Suite("Cockpit page scripts")
struct CockpitScriptTests {
    @Test("varlink.js and chart.js against a fake channel and clock", .timeLimit(.minutes(1)))
    func pageScripts() throws {
        let node = "/usr/bin/node"
        guard access(node, X_OK) == 0 else { throw TestFailure("\(node) is missing; run packaging/dev-deps (nodejs)") }
        let script = CockpitPaths.repository + "/Tests/Cockpit/page_scripts_test.js"
        let result = try run([node, script, CockpitPaths.page], timeout: 30)
        #expect(result.status == 0 && result.stdout.hasSuffix("page scripts: passed\n"), "\(result.summary)")
        let checks = result.stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count
        #expect(checks == 16, "\(checks) checks ran, not 16:\n\(result.summary)")
    }
}
