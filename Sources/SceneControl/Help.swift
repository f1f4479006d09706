/// `scenectl --help` and `scenectl VERB --help`, generated from the verb table.
enum Help {
    static let column = 30
    /// Help stays within 79 columns, as systemctl's does.
    static let width = 79

    static func main(verbs: [Verb] = Verb.all) -> String {
        var out = """
            scenectl [OPTIONS...] COMMAND ...

            Control scened, the scene session daemon, over Varlink (io.scened.Manager).
            Without a command, lists sessions. 'scenectl help COMMAND' is COMMAND --help.

            """
        for section in Verb.Section.allCases {
            let members = verbs.filter { $0.section == section }
            guard !members.isEmpty else { continue }
            out += "\n\(section.rawValue):\n"
            for verb in members {
                out += entry(verb.synopsis.isEmpty ? verb.name : "\(verb.name) \(verb.synopsis)", verb.summary)
            }
        }
        out += "\nOptions:\n" + GlobalOptions.specs.map { entry($0.synopsis, $0.help) }.joined()
        out += "\nExit status:\n" + ExitStatus.documentation + "\n"
        out += """

            Environment:
              SCENED_SOCKET               The daemon's socket when --socket is not given
              SCENECTL_PAGER, PAGER       The pager on a terminal (first set wins; else less,
                                          else more; empty or "cat": none)
              SCENECTL_LESS               Options for less instead of FRSXMK

            Errors go to stderr as 'scenectl: MESSAGE', with nothing on stdout.
            See 'scenectl COMMAND --help' for a command's options, and scenectl(1).

            """
        return out
    }

    static func verb(_ verb: Verb) -> String {
        var out = "scenectl \(verb.name)\(verb.synopsis.isEmpty ? "" : " " + verb.synopsis)\n\n\(verb.summary).\n"
        if !verb.details.isEmpty { out += "\n" + wrap(verb.details, width: width).joined(separator: "\n") + "\n" }
        if !verb.options.isEmpty {
            out += "\nOptions:\n" + verb.options.map { entry($0.synopsis, $0.help) }.joined()
        }
        out += "\nGlobal options: --socket PATH, -j/--json[=MODE], -v/--verbose, --legend=BOOL,\n"
            + "--no-legend, --no-pager, -q/--quiet, -h/--help (see 'scenectl --help')\n"
        return out
    }

    /// The verbs of a group ("task"), for `scenectl task --help`.
    static func group(_ name: String, verbs: [Verb] = Verb.all) -> String {
        var out = "scenectl \(name) COMMAND ...\n\n"
        for verb in verbs where verb.name.hasPrefix(name + " ") {
            out += entry("\(verb.name) \(verb.synopsis)", verb.summary)
        }
        return out + "\nSee 'scenectl \(name) COMMAND --help' for a command's options.\n"
    }

    /// "  left    help", the help starting at `column` (on the next line if left is too wide)
    /// and wrapped to `width`.
    static func entry(_ left: String, _ help: String) -> String {
        let indent = String(repeating: " ", count: column)
        let lines = wrap(help, width: width - column)
        var out = "  " + left
        if out.count < column {
            out += String(repeating: " ", count: column - out.count) + lines[0] + "\n"
        } else {
            out += "\n" + indent + lines[0] + "\n"
        }
        for line in lines.dropFirst() { out += indent + line + "\n" }
        return out
    }

    /// Word-wraps each line of `text` to `width` columns (a longer word stays whole).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty && line.count + 1 + word.count > width {
                    lines.append(line)
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            lines.append(line)
        }
        return lines
    }
}
