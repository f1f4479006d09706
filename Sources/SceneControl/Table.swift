/// A loginctl-style table: an upper-case header, columns one space apart, numbers aligned
/// right, no trailing blanks, and a footer ("3 sessions listed.") after a blank line.
struct Table {
    struct Column {
        var title: String
        var alignRight = false

        init(_ title: String, right: Bool = false) {
            self.title = title
            alignRight = right
        }
    }

    var columns: [Column]
    var rows: [[String]] = []
    var footer: String?

    init(_ columns: [Column], footer: String? = nil) {
        self.columns = columns
        self.footer = footer
    }

    mutating func append(_ row: [String]) {
        precondition(row.count == columns.count, "row has \(row.count) cells for \(columns.count) columns")
        rows.append(row)
    }

    /// The whole table with a final newline; `legend` false omits header and footer, and an
    /// empty table without legend is nothing at all.
    func render(legend: Bool) -> String {
        var stream = TableStream(columns, legend: legend)
        return stream.text(for: rows) + stream.finish(footer: footer)
    }

    /// "1 session listed." / "3 sessions listed." / "2 events."
    static func count(_ n: Int, _ singular: String, _ plural: String, _ verb: String? = "listed") -> String {
        "\(n) \(n == 1 ? singular : plural)\(verb.map { " " + $0 } ?? "")."
    }
}
