import SceneCore

extension SVGChart {
    /// A mark per reclaim action, at the usage when it was taken (warnings along the bottom),
    /// and its name above it where there is room: three rows, each label clear of the last one
    /// in its row (at about 5.6 pixels a character).
    static func marks(_ panel: Panel, _ marks: [TimelineMark]) -> String {
        var out = ""
        var rows = [-Double.infinity, -Double.infinity, -Double.infinity]
        var lastOfName: [String: Double] = [:]
        for m in marks {
            let x = panel.x(m.time)
            let y = m.kind == .warning ? panel.bottom - 5 : panel.y(m.usage)
            let mx = fmt(x), my = fmt(y)
            let name: String
            switch m.kind {
            case .disconnect:
                name = "disconnect"
                out += "<path d=\"M\(mx),\(my) m-5,-9 h10 l-5,9 z\" fill=\"#d62728\"><title>disconnect at \(m.time) ms</title></path>\n"
            case .terminate:
                name = "terminate"
                out += "<path d=\"M\(mx),\(my) m-4,-4 l8,8 m0,-8 l-8,8\" stroke=\"#000\" stroke-width=\"1.8\">"
                out += "<title>terminate at \(m.time) ms</title></path>\n"
            case .warning:
                name = "warning"
                out += "<circle cx=\"\(mx)\" cy=\"\(my)\" r=\"4\" fill=\"#ff7f0e\"><title>memory warning at \(m.time) ms</title></circle>\n"
            case .suspend, .discard:
                continue
            }
            let half = Double(name.count) * 2.8 + 3
            // The same name again right beside itself says nothing new.
            if let previous = lastOfName[name], x - previous < 2 * half { continue }
            guard let row = rows.firstIndex(where: { x - half >= $0 }) else { continue }
            rows[row] = x + half
            lastOfName[name] = x
            // Above the mark, or below it when the mark is near the top of the plot.
            let rise = 13 + 12 * Double(row)
            let ly = y - rise >= panel.top + 12 ? y - rise : y + 8 + rise
            let anchor = x > panel.right - 40 ? "end" : x < panel.left + 40 ? "start" : "middle"
            out += "<text class=\"action-label\" x=\"\(mx)\" y=\"\(fmt(ly))\" text-anchor=\"\(anchor)\" font-size=\"10\" "
            out += "fill=\"#444\">\(name)</text>\n"
        }
        return out
    }

    /// The key, below every panel, with how many actions of each kind the chart shows.
    static func legend(_ marks: [TimelineMark], y: Double, hasEpisode: Bool) -> String {
        var counts: [TimelineMark.Kind: Int] = [:]
        for m in marks { counts[m.kind, default: 0] += 1 }
        func n(_ kind: TimelineMark.Kind) -> String { counts[kind].map { " ×\($0)" } ?? " ×0" }
        var text = "— usage   — budget   - - high / low watermark   ▼ disconnect\(n(.disconnect))   "
        text += "✕ terminate\(n(.terminate))   ● warning\(n(.warning))   suspend\(n(.suspend))   discard\(n(.discard))"
        if hasEpisode { text += "   ▮ episode" }
        return "<text class=\"legend\" x=\"\(fmt(Layout.left))\" y=\"\(fmt(y))\">\(text)</text>\n"
    }
}
