import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The charts as a person sees them: each rendered to PNG by rsvg-convert (it must render),
/// and its geometry read back: the episode fills most of the plot, usage is drawn well off
/// the axis whatever the budget, the budget is drawn or named, and the title, labels and
/// legend are outside every plot.
@Suite("charts worth looking at", .timeLimit(.minutes(2)))
struct ChartRenderTests {
    /// The README walkthrough: a daemon up for a while with small sessions against the default
    /// 8 GiB budget, `pressure set critical`, then `pressure chart --svg` at once.
    @Test("pressure chart: the episode at once after pressure set, and an ended one; --all draws everything")
    func liveEpisodes() throws {
        let rsvg = try SystemTools.require("rsvg-convert", for: "rendering the charts (librsvg2-bin, packaging/dev-deps)")
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        let ctl = SceneCtlDriver(socketPath: workspace.socketPath, directory: workspace.path)
        _ = try ctl.ctl(["connect", "com.example.mail", "--footprint", "200M"])
        for i in 1...3 { _ = try ctl.ctl(["connect", "com.example.bg\(i)", "--background", "--footprint", "150M"]) }
        sleepMilliseconds(4000)   // a quiet stretch before the episode, as a daemon's life has

        _ = try ctl.ctl(["pressure", "set", "critical", "--for", "2s"])
        let now = try chart(workspace, rsvg, ["pressure", "chart"], name: "ongoing")
        try now.checkAsAPersonWould(episodeShare: 0.6)

        // Once it has ended: the episode with a margin after it too.
        let ended = waitUntil(seconds: 10) {
            (try? daemon.call("GetPressure")["pressure"]?["level"]?.stringValue) == "normal"
        }
        #expect(ended, "the forced level did not lapse")
        sleepMilliseconds(3000)
        let after = try chart(workspace, rsvg, ["pressure", "chart"], name: "ended")
        try after.checkAsAPersonWould(episodeShare: 0.6)
        #expect(after.text.contains("disconnect"), "the disconnect is not named")

        // --all: the whole history, the quiet stretch included, no episode singled out.
        let all = try chart(workspace, rsvg, ["pressure", "chart", "--all"], name: "all")
        try all.checkAsAPersonWould(episodeShare: nil)
        #expect(all.episodes.isEmpty)
        let both = try run([Binaries.scenectl, "--socket", workspace.socketPath, "pressure", "chart", "--svg",
                            workspace.path + "/x.svg", "--all", "--since", "3"], environment: ["SCENED_SOCKET": nil])
        #expect(both.status == 2, "\(both.summary)")
    }

    @Test("simulate --svg: every panel's latest episode; --all")
    func simulatedEpisodes() throws {
        let rsvg = try SystemTools.require("rsvg-convert", for: "rendering the charts (librsvg2-bin, packaging/dev-deps)")
        let workspace = try Workspace()
        let trace = Self.fixture("a-mix-seed1.jsonl")
        let episode = try chart(workspace, rsvg, ["simulate", trace, "--policy", "ours,lru,largest"], name: "sim")
        #expect(episode.plots.count == 3)
        try episode.checkAsAPersonWould(episodeShare: 0.6)
        let all = try chart(workspace, rsvg, ["simulate", trace, "--policy", "ours", "--all"], name: "sim-all")
        try all.checkAsAPersonWould(episodeShare: nil)
        #expect(all.text.contains("terminate") && all.text.contains("warning"))
    }

    static func fixture(_ name: String, _ file: String = #filePath) -> String {
        var path = file
        for _ in 0..<2 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/ReclaimTests/Fixtures/" + name
    }

    /// Runs scenectl with `--svg FILE`, renders FILE with rsvg-convert and reads it back.
    func chart(_ workspace: Workspace, _ rsvg: String, _ arguments: [String], name: String) throws -> ChartGeometry {
        let svg = workspace.path + "/\(name).svg", png = workspace.path + "/\(name).png"
        let drawn = try run([Binaries.scenectl, "--socket", workspace.socketPath] + arguments + ["--svg", svg],
                            environment: ["SCENED_SOCKET": nil], in: workspace.path, timeout: 60)
        guard drawn.status == 0 else { throw TestFailure("scenectl failed: \(drawn.summary)") }
        let rendered = try run([rsvg, "-o", png, svg], timeout: 30)
        guard rendered.status == 0 else { throw TestFailure("rsvg-convert failed: \(rendered.summary)") }
        let geometry = try ChartGeometry(readTextFile(svg))
        let size = try Self.pngSize(png)
        #expect(size.width == Int(geometry.width) && size.height == Int(geometry.height), "\(name): PNG \(size)")
        return geometry
    }

    /// Width and height from the PNG's IHDR chunk.
    static func pngSize(_ path: String) throws -> (width: Int, height: Int) {
        guard let f = fopen(path, "rb") else { throw TestFailure("no PNG at \(path)") }
        defer { fclose(f) }
        var header = [UInt8](repeating: 0, count: 24)
        guard fread(&header, 1, 24, f) == 24, header[1...3] == [0x50, 0x4E, 0x47] else { throw TestFailure("\(path) is not a PNG") }
        func be(_ i: Int) -> Int { header[i..<i + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (be(16), be(20))
    }
}
