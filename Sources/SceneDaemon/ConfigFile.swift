/// systemd-style INI: `[Section]` headers, `Key=value` lines, `#` and `;` comments, blank lines.
/// A trailing backslash continues a value on the next line; as in systemd, comment lines inside
/// a continuation are skipped. Lines end with LF or CRLF.
struct ConfigFile {
    struct Assignment {
        var section: String
        var key: String
        var value: String
        var line: Int
    }

    let path: String
    var assignments: [Assignment] = []

    static func parse(path: String, text: String) throws(ConfigError) -> ConfigFile {
        var file = ConfigFile(path: path)
        var section: String?
        var pending: (key: String, value: String, line: Int)?
        var number = 0
        // Split on the scalar, not the Character: "\r\n" is one Character (a single grapheme),
        // so splitting a CRLF file on Character "\n" would find no line breaks at all.
        for raw in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            var line = String(String.UnicodeScalarView(raw)).trimmingSpaces
            if var p = pending {
                if line.hasPrefix("#") || line.hasPrefix(";") { continue }
                // Continuation of the previous value.
                let continues = line.hasSuffix("\\")
                if continues { line.removeLast() }
                p.value += " " + line.trimmingSpaces
                if continues {
                    pending = p
                } else {
                    file.assignments.append(Assignment(section: section!, key: p.key, value: p.value.trimmingSpaces, line: p.line))
                    pending = nil
                }
                continue
            }
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    throw ConfigError(path: path, line: number, message: "malformed section header \"\(line)\"")
                }
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigError(path: path, line: number, message: "expected Key=value, found \"\(line)\"")
            }
            guard let current = section else {
                throw ConfigError(path: path, line: number, message: "assignment outside of any [Section]")
            }
            let key = line[..<eq].trimmingSpaces
            var value = line[line.index(after: eq)...].trimmingSpaces
            guard !key.isEmpty else { throw ConfigError(path: path, line: number, message: "empty key") }
            if value.hasSuffix("\\") {
                value.removeLast()
                pending = (key, value, number)
                continue
            }
            file.assignments.append(Assignment(section: current, key: key, value: value, line: number))
        }
        if let p = pending {
            file.assignments.append(Assignment(section: section!, key: p.key, value: p.value.trimmingSpaces, line: p.line))
        }
        return file
    }
}

/// A configuration error, located: "FILE:LINE: message".
struct ConfigError: Error, CustomStringConvertible {
    var path: String
    var line: Int?
    var message: String
    /// Further problems found in the same pass, so that one round of fixes can deal with all.
    var others: [ConfigError] = []

    init(path: String, line: Int?, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    /// The first problem on one line (STATUS=, the journal), counting the rest.
    var description: String {
        let more = others.isEmpty ? "" : " (and \(others.count) more problem\(others.count == 1 ? "" : "s"))"
        return located + more
    }

    /// Every problem, one per line (stderr).
    var report: String { ([self] + others).map(\.located).joined(separator: "\n") }

    private var located: String {
        if let line { return "\(path):\(line): \(message)" }
        return "\(path): \(message)"
    }
}
