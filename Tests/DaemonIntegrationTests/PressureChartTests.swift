import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// `scenectl pressure chart`: the live daemon's own history drawn as `simulate --svg` draws a
/// trace, for a real episode (forced pressure on background scenes).
@Suite("scenectl pressure chart")
struct PressureChartTests {
    @Test("a forced episode: its samples and reclaim actions are in the history and drawn; --since cuts it; bad use is an error")
    func chartOfAnEpisode() throws {
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        let ctl = SceneCtlDriver(socketPath: workspace.socketPath, directory: workspace.path)
        for i in 1...4 {
            _ = try ctl.ctl(["connect", "com.example.chart\(i)", "--background", "--footprint", "300M"])
        }
        let before = try daemon.call("GetPressureHistory")
        let startSeq = before["samples"]?.arrayValue?.last?["seq"]?.intValue ?? 0
        _ = try ctl.ctl(["pressure", "set", "critical", "--for", "3s"])
        var history: JSONObject = [:]
        let acted = try waitUntil(seconds: 10) {
            history = try daemon.call("GetPressureHistory")
            return history["actions"]?.arrayValue?.contains { $0["action"]?.stringValue == "disconnect" } ?? false
        }
        #expect(acted, "no disconnect in the history: \(history)")
        let samples = history["samples"]?.arrayValue ?? []
        #expect(samples.contains { $0["level"]?.stringValue == "critical" }, "the critical level was not sampled")
        #expect(samples.contains { ($0["usage"]?.intValue ?? 0) >= 4 * 300 << 20 }, "the 1.2 GB in use was not sampled")
        let seqs = samples.compactMap { $0["seq"]?.intValue }
        #expect(seqs == seqs.sorted(), "samples out of order: \(seqs)")

        let svg = workspace.path + "/episode.svg"
        let drawn = try ctl.ctl(["pressure", "chart", "--svg", svg])
        #expect(drawn["samples"]?.intValue == Int64(samples.count))
        let text = readTextFile(svg)
        #expect(text.hasPrefix("<svg") && text.contains("</svg>"))
        #expect(text.contains("<title>disconnect at"), "no disconnect marked in the chart")

        // From the episode's start only: the sample in force then, and what followed.
        let later = try ctl.ctl(["pressure", "chart", "--svg", svg, "--since", String(startSeq + 1)])
        #expect((later["samples"]?.intValue ?? 0) < Int64(samples.count) && (later["samples"]?.intValue ?? 0) >= 2)

        let missing = try run([Binaries.scenectl, "--socket", workspace.socketPath, "pressure", "chart"],
                              environment: ["SCENED_SOCKET": nil], in: workspace.path)
        #expect(missing.status == 2 && missing.stderr.contains("--svg"), "\(missing.summary)")
        let unwritable = try run([Binaries.scenectl, "--socket", workspace.socketPath, "pressure", "chart",
                                  "--svg", workspace.path + "/no/such/dir/x.svg"],
                                 environment: ["SCENED_SOCKET": nil], in: workspace.path)
        #expect(unwritable.status == 1 && unwritable.stderr.contains("cannot write"), "\(unwritable.summary)")
        let badSeq = try run([Binaries.scenectl, "--socket", workspace.socketPath, "pressure", "chart", "--svg", svg, "--since", "-3"],
                             environment: ["SCENED_SOCKET": nil], in: workspace.path)
        #expect(badSeq.status == 2, "\(badSeq.summary)")
    }
}
