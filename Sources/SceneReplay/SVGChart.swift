import SceneCore

/// An SVG chart of one or more replays: resident bytes against the budget over time, the low and
/// high watermarks, and a mark for each reclaim action (disconnect ▼, terminate ✕, warning ●).
///
/// By default it shows the latest episode with a margin either side (`ChartWindow`), shaded,
/// each panel's bytes axis scaled to what it shows: a budget far above usage is named at the
/// top instead of squashing usage onto the axis. The title, the series' labels and the legend
/// have bands of their own outside the plots.
public enum SVGChart {
    public struct Series {
        public var label: String
        public var result: ReplayResult
        /// Periods known to be under pressure (a live daemon's level), in milliseconds.
        public var pressure: [ClosedRange<Int64>]

        public init(label: String, result: ReplayResult, pressure: [ClosedRange<Int64>] = []) {
            self.label = label
            self.result = result
            self.pressure = pressure
        }
    }

    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

    /// The bands around the plots, in pixels.
    enum Layout {
        static let left = 80.0, right = 24.0
        static let titleBand = 36.0, labelBand = 22.0, axisBand = 20.0, panelGap = 8.0, legendBand = 28.0
    }

    /// One panel per series, stacked, sharing the time axis.
    public static func render(_ series: [Series], title: String, watermarks: (low: Double, high: Double) = (0.8, 0.9),
                              window: ChartWindow = .latestEpisode, width: Int = 1000, panelHeight: Int = 220) -> String {
        let (range, episode) = ChartEpisodes.window(series, window, highWatermark: watermarks.high)
        let slot = Layout.labelBand + Double(panelHeight) + Layout.axisBand + Layout.panelGap
        let height = Int(Layout.titleBand + Double(series.count) * slot + Layout.legendBand)
        var out = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" \
        font-family="sans-serif" font-size="11">
        <rect width="100%" height="100%" fill="white"/>
        <text class="title" x="\(fmt(Layout.left))" y="23" font-size="15">\(escape(title))</text>

        """
        var shown: [TimelineMark] = []
        for (i, s) in series.enumerated() {
            let points = thin(ChartEpisodes.clip(s.result.points, to: range), limit: 4000)
            let marks = s.result.marks.filter { range.contains($0.time) }
            shown += marks
            let top = Layout.titleBand + Double(i) * slot + Layout.labelBand
            let scale = Scale(points: points, marks: marks)
            let panel = Panel(left: Layout.left, width: Double(width) - Layout.left - Layout.right, top: top,
                              height: Double(panelHeight), range: range, maxBytes: scale.maxBytes, tickStep: scale.step)
            out += "<g>\n"
            if let episode { out += band(panel, episode) }
            out += frame(panel, label: s.label, offScaleBudget: scale.offScaleBudget)
            out += budgetLines(panel, points, watermarks: watermarks)
            out += usageLine(panel, points, color: colors[i % colors.count])
            out += self.marks(panel, marks)
            out += "</g>\n"
        }
        out += legend(shown, y: Double(height) - 10, hasEpisode: episode != nil)
        out += "</svg>\n"
        return out
    }

    /// A panel's bytes axis: up to a little above the highest usage shown, and up to the budget
    /// too unless that would leave usage in the lower half (then the budget is named instead).
    /// Ticks fall on multiples of a round step, not necessarily at the top.
    struct Scale {
        var maxBytes: Double
        var offScaleBudget: UInt64?
        var step: Double

        init(points: [TimelinePoint], marks: [TimelineMark]) {
            let usage = Double(max(points.map(\.usage).max() ?? 0, marks.map(\.usage).max() ?? 0))
            maxBytes = max(usage * 1.1, 1)
            if let budget = points.compactMap(\.budget).max() {
                if Double(budget) * 1.03 <= max(usage, 1) * 1.9 {
                    maxBytes = max(maxBytes, Double(budget) * 1.03)
                } else {
                    offScaleBudget = budget
                }
            }
            step = Self.niceStep(maxBytes / 4)
        }

        /// A power of two at least `raw`: ticks read 256M, 512M, 1.0G as byte sizes are
        /// written, rather than 178.2M.
        static func niceStep(_ raw: Double) -> Double {
            var step = 1.0
            while step < raw { step *= 2 }
            return step
        }
    }

    /// Where one series is drawn, and its scales: milliseconds across, bytes up.
    struct Panel {
        var left: Double
        var width: Double
        var top: Double
        var height: Double
        var range: ClosedRange<Int64>
        var maxBytes: Double
        var tickStep: Double

        var bottom: Double { top + height }
        var right: Double { left + width }
        func x(_ t: Int64) -> Double {
            let span = Double(max(range.upperBound - range.lowerBound, 1))
            return left + width * Double(min(max(t, range.lowerBound), range.upperBound) - range.lowerBound) / span
        }
        func y(_ b: UInt64) -> Double { bottom - height * min(Double(b) / maxBytes, 1) }
    }

    /// A coordinate with one decimal.
    static func fmt(_ v: Double) -> String { String(Double(Int((v * 10).rounded())) / 10) }

    /// The episode, shaded behind the lines.
    static func band(_ p: Panel, _ episode: ClosedRange<Int64>) -> String {
        let x0 = p.x(episode.lowerBound), x1 = max(p.x(episode.upperBound), x0 + 2)
        return "<rect class=\"episode\" x=\"\(fmt(x0))\" y=\"\(fmt(p.top))\" width=\"\(fmt(x1 - x0))\" "
            + "height=\"\(fmt(p.height))\" fill=\"#fdebd0\"/>\n"
    }

    /// The box; above it the series' label (and an off-scale budget); bytes at the left; the
    /// time in seconds below.
    static func frame(_ p: Panel, label: String, offScaleBudget: UInt64?) -> String {
        var out = "<rect class=\"plot\" x=\"\(fmt(p.left))\" y=\"\(fmt(p.top))\" width=\"\(fmt(p.width))\" "
        out += "height=\"\(fmt(p.height))\" fill=\"none\" stroke=\"#bbb\"/>\n"
        out += "<text class=\"series-label\" x=\"\(fmt(p.left))\" y=\"\(fmt(p.top - 7))\" font-size=\"12\">\(escape(label))</text>\n"
        if let budget = offScaleBudget {
            out += "<text class=\"off-scale\" x=\"\(fmt(p.right))\" y=\"\(fmt(p.top - 7))\" text-anchor=\"end\">"
            out += "↑ budget \(ByteSize.format(budget)), off the scale</text>\n"
        }
        var tick = 0.0
        while tick <= p.maxBytes {
            let b = UInt64(tick)
            out += "<text x=\"\(fmt(p.left - 6))\" y=\"\(fmt(p.y(b) + 4))\" text-anchor=\"end\">\(ByteSize.format(b))</text>\n"
            tick += p.tickStep
        }
        for i in 0...4 {
            let t = p.range.lowerBound + (p.range.upperBound - p.range.lowerBound) * Int64(i) / 4
            let anchor = i == 0 ? "start" : i == 4 ? "end" : "middle"
            out += "<text x=\"\(fmt(p.x(t)))\" y=\"\(fmt(p.bottom + 14))\" text-anchor=\"\(anchor)\">"
            out += "\(seconds(t, tickMs: (p.range.upperBound - p.range.lowerBound) / 4))</text>\n"
        }
        return out
    }

    /// Seconds with as many decimals as ticks `tickMs` apart need to differ.
    static func seconds(_ ms: Int64, tickMs: Int64) -> String {
        let decimals = tickMs >= 1000 ? 0 : tickMs >= 100 ? 1 : tickMs >= 10 ? 2 : 3
        var scale: Int64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let units = (ms * scale + 500) / 1000
        guard decimals > 0 else { return "\(units) s" }
        var fraction = String(abs(units) % scale)
        while fraction.count < decimals { fraction = "0" + fraction }
        return "\(units / scale).\(fraction) s"
    }

    /// The budget and its watermarks as steps, where they are within the scale; unlimited
    /// stretches are left out.
    static func budgetLines(_ panel: Panel, _ points: [TimelinePoint], watermarks: (low: Double, high: Double)) -> String {
        var out = ""
        for (fraction, style) in [(1.0, "class=\"budget\" stroke=\"#000\" stroke-width=\"1.2\""),
                                  (watermarks.high, "class=\"watermark\" stroke=\"#999\" stroke-dasharray=\"4 3\""),
                                  (watermarks.low, "class=\"watermark\" stroke=\"#bbb\" stroke-dasharray=\"2 3\"")] {
            var path = ""
            var previous: UInt64?
            for p in points {
                guard let b = p.budget, Double(b) * fraction <= panel.maxBytes else {
                    previous = nil
                    continue
                }
                let level = UInt64(Double(b) * fraction)
                if let pb = previous {
                    path += " L\(fmt(panel.x(p.time))),\(fmt(panel.y(pb)))"
                    if pb != level { path += " L\(fmt(panel.x(p.time))),\(fmt(panel.y(level)))" }
                } else {
                    path += " M\(fmt(panel.x(p.time))),\(fmt(panel.y(level)))"
                }
                previous = level
            }
            if let pb = previous { path += " L\(fmt(panel.right)),\(fmt(panel.y(pb)))" }
            if !path.isEmpty { out += "<path d=\"\(path)\" fill=\"none\" \(style)/>\n" }
        }
        return out
    }

    /// Resident bytes as steps, to the end of the window.
    static func usageLine(_ panel: Panel, _ points: [TimelinePoint], color: String) -> String {
        var path = ""
        var last: UInt64?
        for p in points {
            if let l = last {
                path += " L\(fmt(panel.x(p.time))),\(fmt(panel.y(l))) L\(fmt(panel.x(p.time))),\(fmt(panel.y(p.usage)))"
            } else {
                path += "M\(fmt(panel.x(p.time))),\(fmt(panel.y(p.usage)))"
            }
            last = p.usage
        }
        if let l = last { path += " L\(fmt(panel.right)),\(fmt(panel.y(l)))" }
        return "<path class=\"usage\" d=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
    }

    /// Keeps at most about `limit` points: the extremes of usage in each bucket, so spikes stay
    /// visible, and every change of budget.
    static func thin(_ points: [TimelinePoint], limit: Int) -> [TimelinePoint] {
        guard points.count > limit, limit >= 4 else { return points }
        let bucket = (points.count + limit / 2 - 1) / (limit / 2)
        var out: [TimelinePoint] = []
        var start = 0
        while start < points.count {
            let end = min(start + bucket, points.count)
            var lo = start, hi = start
            var keep: [Int] = []
            for i in start..<end {
                if points[i].usage < points[lo].usage { lo = i }
                if points[i].usage > points[hi].usage { hi = i }
                if i > 0 && points[i].budget != points[i - 1].budget { keep.append(i) }
            }
            keep.append(lo)
            keep.append(hi)
            var previous = -1
            for i in keep.sorted() where i != previous {
                out.append(points[i])
                previous = i
            }
            start = end
        }
        return out
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
