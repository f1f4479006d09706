import SceneCore

/// An SVG chart of one or more replays: resident bytes against the budget over time, the low and
/// high watermarks, and a mark for each reclaim action (disconnect ▼, terminate ✕, warning ●).
public enum SVGChart {
    public struct Series {
        public var label: String
        public var result: ReplayResult

        public init(label: String, result: ReplayResult) {
            self.label = label
            self.result = result
        }
    }

    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

    /// One panel per series, stacked, sharing the time axis.
    public static func render(_ series: [Series], title: String, watermarks: (low: Double, high: Double) = (0.8, 0.9),
                              width: Int = 1000, panelHeight: Int = 220) -> String {
        let left = 70.0, right = 20.0, top = 40.0, gap = 40.0
        let height = Int(top + Double(series.count) * (Double(panelHeight) + gap))
        var maxTime: Int64 = 1
        var maxBytes: UInt64 = 1
        for s in series {
            for p in s.result.points {
                maxTime = max(maxTime, p.time)
                maxBytes = max(maxBytes, p.usage, p.budget ?? 0)
            }
        }
        var out = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" \
        font-family="sans-serif" font-size="11">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(left)" y="20" font-size="14">\(escape(title))</text>

        """
        for (i, s) in series.enumerated() {
            let panel = Panel(left: left, width: Double(width) - left - right,
                              top: top + Double(i) * (Double(panelHeight) + gap), height: Double(panelHeight),
                              maxTime: maxTime, maxBytes: Double(maxBytes) * 1.05)
            let points = thin(s.result.points, limit: 4000)
            out += "<g>\n"
            out += frame(panel, label: s.label)
            out += budgetLines(panel, points, watermarks: watermarks)
            out += usageLine(panel, points, color: colors[i % colors.count])
            out += marks(panel, s.result.marks)
            out += "</g>\n"
        }
        out += """
        <g transform="translate(\(Int(left)),\(height - 8))">
        <text>— usage   — budget   - - high / low watermark   ▼ disconnect   ✕ terminate   ● warning</text>
        </g>
        </svg>

        """
        return out
    }

    /// Where one series is drawn, and its scales: milliseconds across, bytes up.
    struct Panel {
        var left: Double
        var width: Double
        var top: Double
        var height: Double
        var maxTime: Int64
        var maxBytes: Double

        func x(_ t: Int64) -> Double { left + width * Double(t) / Double(maxTime) }
        func y(_ b: UInt64) -> Double { top + height - height * Double(b) / maxBytes }
    }

    /// A coordinate with one decimal.
    static func fmt(_ v: Double) -> String { String(Double(Int((v * 10).rounded())) / 10) }

    /// The box, the series' label, bytes at the bottom, middle and top, the time at the end.
    static func frame(_ p: Panel, label: String) -> String {
        var out = "<rect x=\"\(fmt(p.left))\" y=\"\(fmt(p.top))\" width=\"\(fmt(p.width))\" height=\"\(fmt(p.height))\" "
        out += "fill=\"none\" stroke=\"#ccc\"/>\n"
        out += "<text x=\"\(fmt(p.left + 4))\" y=\"\(fmt(p.top + 14))\">\(escape(label))</text>\n"
        for frac in [0.0, 0.5, 1.0] {
            let b = UInt64(p.maxBytes * frac)
            out += "<text x=\"\(fmt(p.left - 6))\" y=\"\(fmt(p.y(b) + 4))\" text-anchor=\"end\">\(ByteSize.format(b))</text>\n"
        }
        out += "<text x=\"\(fmt(p.left + p.width))\" y=\"\(fmt(p.top + p.height + 14))\" text-anchor=\"end\">"
        out += "\(fmt(Double(p.maxTime) / 1000)) s</text>\n"
        return out
    }

    /// The budget and its watermarks as steps; unlimited stretches are left out.
    static func budgetLines(_ panel: Panel, _ points: [TimelinePoint], watermarks: (low: Double, high: Double)) -> String {
        var out = ""
        for (fraction, style) in [(1.0, "stroke=\"#000\" stroke-width=\"1.2\""),
                                  (watermarks.high, "stroke=\"#999\" stroke-dasharray=\"4 3\""),
                                  (watermarks.low, "stroke=\"#bbb\" stroke-dasharray=\"2 3\"")] {
            var path = ""
            var previous: UInt64?
            for p in points {
                guard let b = p.budget else {
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
            if let pb = previous { path += " L\(fmt(panel.x(panel.maxTime))),\(fmt(panel.y(pb)))" }
            if !path.isEmpty { out += "<path d=\"\(path)\" fill=\"none\" \(style)/>\n" }
        }
        return out
    }

    /// Resident bytes as steps.
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
        if let l = last { path += " L\(fmt(panel.x(panel.maxTime))),\(fmt(panel.y(l)))" }
        return "<path d=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\"/>\n"
    }

    /// A mark per reclaim action, on the usage line after it (warnings along the bottom).
    static func marks(_ panel: Panel, _ marks: [TimelineMark]) -> String {
        var out = ""
        for m in marks {
            let mx = fmt(panel.x(m.time)), my = fmt(panel.y(m.usage))
            switch m.kind {
            case .disconnect:
                out += "<path d=\"M\(mx),\(my) m-3,-6 h6 z\" fill=\"#d62728\"><title>disconnect at \(m.time) ms</title></path>\n"
            case .terminate:
                out += "<path d=\"M\(mx),\(my) m-3,-3 l6,6 m0,-6 l-6,6\" stroke=\"#000\" stroke-width=\"1.5\">"
                out += "<title>terminate at \(m.time) ms</title></path>\n"
            case .warning:
                out += "<circle cx=\"\(mx)\" cy=\"\(fmt(panel.top + panel.height - 4))\" r=\"3\" fill=\"#ff7f0e\">"
                out += "<title>memory warning at \(m.time) ms</title></circle>\n"
            case .suspend, .discard:
                break
            }
        }
        return out
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
