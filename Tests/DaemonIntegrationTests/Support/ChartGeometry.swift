import ScenedTestSupport
import Testing

/// What a chart's SVG draws where: the plot rectangles, the usage lines, the episode bands,
/// the budget lines and every text with an estimated box (sans-serif at 0.62 em a character
/// is wider than most glyphs, so overlaps are found rather than missed).
struct ChartGeometry {
    struct Box: CustomStringConvertible {
        var x0, y0, x1, y1: Double
        func intersects(_ o: Box) -> Bool { x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1 }
        var description: String { "(\(x0),\(y0))–(\(x1),\(y1))" }
    }

    struct Element {
        var tag: String
        var attributes: [String: String]
        var text: String
        func number(_ name: String) -> Double { Double(attributes[name] ?? "") ?? .nan }
    }

    var elements: [Element] = []
    var width = 0.0, height = 0.0
    let text: String

    init(_ svg: String) throws {
        text = svg
        for chunk in svg.split(separator: "<") {
            guard let close = chunk.firstIndex(of: ">") else { continue }
            let inside = chunk[..<close]
            guard let tag = inside.split(separator: " ").first, !tag.hasPrefix("/") else { continue }
            elements.append(Element(tag: String(tag), attributes: Self.attributes(inside),
                                    text: String(chunk[chunk.index(after: close)...])))
        }
        guard let root = elements.first, root.tag == "svg" else { throw TestFailure("not an SVG") }
        width = root.number("width")
        height = root.number("height")
    }

    static func attributes(_ s: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var rest = s
        while let eq = rest.firstIndex(of: "=") {
            let key = rest[..<eq].split(separator: " ").last.map(String.init) ?? ""
            let afterQuote = rest.index(eq, offsetBy: 2, limitedBy: rest.endIndex) ?? rest.endIndex
            guard afterQuote <= rest.endIndex, let end = rest[afterQuote...].firstIndex(of: "\"") else { break }
            out[key] = String(rest[afterQuote..<end])
            rest = rest[rest.index(after: end)...]
        }
        return out
    }

    func ofClass(_ name: String) -> [Element] { elements.filter { $0.attributes["class"] == name } }

    var plots: [Box] {
        ofClass("plot").map { Box(x0: $0.number("x"), y0: $0.number("y"), x1: $0.number("x") + $0.number("width"),
                                  y1: $0.number("y") + $0.number("height")) }
    }

    var episodes: [Box] {
        ofClass("episode").map { Box(x0: $0.number("x"), y0: $0.number("y"), x1: $0.number("x") + $0.number("width"),
                                     y1: $0.number("y") + $0.number("height")) }
    }

    /// The points of a path's M and L commands.
    static func points(_ d: String) -> [(x: Double, y: Double)] {
        d.split(whereSeparator: { $0 == "M" || $0 == "L" }).compactMap { part in
            let xy = String(part).trimmingCharacters(in: " ").split(separator: ",")
            guard xy.count == 2, let x = Double(xy[0]), let y = Double(xy[1]) else { return nil }
            return (x, y)
        }
    }

    func textBox(_ e: Element) -> Box {
        let size = Double(e.attributes["font-size"] ?? "11") ?? 11
        let width = Double(e.text.count) * size * 0.62
        let x = e.number("x"), y = e.number("y")
        let x0 = e.attributes["text-anchor"] == "end" ? x - width : e.attributes["text-anchor"] == "middle" ? x - width / 2 : x
        return Box(x0: x0, y0: y - size, x1: x0 + width, y1: y + size * 0.3)
    }

    /// The checks a person makes at a glance. `episodeShare`: the share of each plot's width
    /// the episode must fill (nil: no episode is expected to be singled out).
    func checkAsAPersonWould(episodeShare: Double?, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let plots = self.plots
        #expect(!plots.isEmpty, "no plot", sourceLocation: sourceLocation)
        if let share = episodeShare {
            #expect(episodes.count == plots.count, "one episode band per plot", sourceLocation: sourceLocation)
            for (band, plot) in zip(episodes, plots) {
                let filled = (band.x1 - band.x0) / (plot.x1 - plot.x0)
                #expect(filled >= share, "the episode fills \(Int(filled * 100)) % of the plot", sourceLocation: sourceLocation)
            }
        }
        // Usage: its highest point at least half the plot's height above the axis.
        let lines = ofClass("usage")
        #expect(lines.count == plots.count, sourceLocation: sourceLocation)
        for (line, plot) in zip(lines, plots) {
            let ys = Self.points(line.attributes["d"] ?? "").map(\.y)
            let lift = (plot.y1 - (ys.min() ?? plot.y1)) / (plot.y1 - plot.y0)
            #expect(lift >= 0.5 && lift <= 1.0001, "usage rises to \(Int(lift * 100)) % of the plot", sourceLocation: sourceLocation)
        }
        // The budget: a line within the plot, or named at the top.
        let budgets = ofClass("budget").count + ofClass("off-scale").filter { $0.text.contains("budget") }.count
        #expect(budgets >= plots.count, "a budget neither drawn nor named", sourceLocation: sourceLocation)
        // Titles, series labels, the legend and off-scale notes: never over a plot, never off the picture.
        for name in ["title", "series-label", "legend", "off-scale"] {
            for e in ofClass(name) {
                let box = textBox(e)
                for plot in plots {
                    #expect(!box.intersects(plot), "\(name) '\(e.text)' \(box) is over the plot \(plot)", sourceLocation: sourceLocation)
                }
                #expect(box.x0 >= 0 && box.x1 <= width && box.y0 >= 0 && box.y1 <= height,
                        "\(name) '\(e.text)' \(box) leaves the picture", sourceLocation: sourceLocation)
            }
        }
        #expect(!ofClass("title").isEmpty && !ofClass("legend").isEmpty, sourceLocation: sourceLocation)
    }
}
