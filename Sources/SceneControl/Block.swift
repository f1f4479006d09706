/// A systemctl-status-like block: a title line, then "Label: value" lines with the labels
/// right-aligned so the colons line up. Values with newlines continue under their first line.
struct Block {
    var title: String
    var fields: [(label: String, value: String)] = []

    init(_ title: String) {
        self.title = title
    }

    mutating func add(_ label: String, _ value: String) {
        fields.append((label, value))
    }

    func render() -> String {
        // systemctl indents its labels; "Main PID" and friends end at column 11.
        let width = max(fields.map(\.label.count).max() ?? 0, 8) + 3
        let continuation = String(repeating: " ", count: width + 2)
        var out = title + "\n"
        for (label, value) in fields {
            out += String(repeating: " ", count: width - label.count) + label + ": "
            out += value.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + continuation) + "\n"
        }
        return out
    }
}
