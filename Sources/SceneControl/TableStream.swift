/// A `Table` printed batch by batch as the rows arrive (a listing streamed by the daemon), so
/// that the first rows show at once however many follow. Column widths are those of the
/// header and the rows so far: a later batch with a wider cell widens its column from there
/// on, never narrows it. One batch prints exactly as `Table.render` does.
struct TableStream {
    let columns: [Table.Column]
    let legend: Bool
    private var widths: [Int]
    private var started = false

    init(_ columns: [Table.Column], legend: Bool) {
        self.columns = columns
        self.legend = legend
        widths = columns.map { legend ? $0.title.count : 0 }
    }

    /// The lines for the next batch of rows: the header first, before the first batch.
    mutating func text(for rows: [[String]]) -> String {
        for row in rows {
            precondition(row.count == columns.count, "row has \(row.count) cells for \(columns.count) columns")
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var out = ""
        if !started {
            started = true
            if legend { out += line(columns.map(\.title)) }
        }
        for row in rows { out += line(row) }
        return out
    }

    /// What ends the table: the header if no batch came, then the footer (with the legend).
    mutating func finish(footer: String?) -> String {
        var out = text(for: [])
        if legend, let footer { out += "\n" + footer + "\n" }
        return out
    }

    private func line(_ cells: [String]) -> String {
        var line = ""
        for (index, cell) in cells.enumerated() {
            if index > 0 { line += " " }
            let padding = String(repeating: " ", count: widths[index] - cell.count)
            line += columns[index].alignRight ? padding + cell : cell + padding
        }
        while line.last == " " { line.removeLast() }
        return line + "\n"
    }
}
