/// One option a verb (or scenectl itself) accepts.
public struct OptionSpec: Sendable {
    /// Without the dashes: "app" for `--app`.
    public var long: String
    public var short: Character?
    /// The value's placeholder in help ("APP"); nil for a flag.
    public var value: String?
    /// The value may be left out (`--json` or `--json=pretty`, never `--json pretty`), as with
    /// getopt's optional_argument; the short form then takes none.
    public var optionalValue: Bool
    public var help: String

    public init(_ long: String, short: Character? = nil, value: String? = nil, optionalValue: Bool = false, _ help: String) {
        self.long = long
        self.short = short
        self.value = value
        self.optionalValue = optionalValue
        self.help = help
    }

    /// Whether the next word is taken as the value when none follows a `=`.
    var takesValue: Bool { value != nil && !optionalValue }

    /// "-n, --lines N" (or "-j, --json[=MODE]") as help shows it.
    var synopsis: String {
        var text = short.map { "-\($0), " } ?? "    "
        text += "--" + long
        if let value { text += optionalValue ? "[=\(value)]" : " " + value }
        return text
    }
}

/// The verb's own options as given on the command line; the last occurrence wins, as with getopt.
public struct ParsedOptions: Sendable, Equatable {
    var values: [String: String] = [:]
    var flags: Set<String> = []

    public init() {}

    public func value(_ long: String) -> String? { values[long] }
    public func flag(_ long: String) -> Bool { flags.contains(long) }
}

/// How --json prints: `short` is one compact object per line, `pretty` indented; `auto` (-j)
/// becomes pretty on a terminal and short otherwise once the output is known.
public enum JSONMode: String, Sendable, Equatable {
    case off, short, pretty, auto
}

/// Options that apply to every verb; accepted before or after the verb.
public struct GlobalOptions: Sendable, Equatable {
    public var socket: String?
    public var jsonMode = JSONMode.off
    public var verbose = false
    /// --legend=BOOL / --no-legend; tables have their header and footer by default.
    public var legend = true
    public var pager = true
    public var quiet = false
    public var help = false
    public var version = false

    public init() {}

    public var json: Bool { jsonMode != .off }
    public var noLegend: Bool { !legend }

    static let specs: [OptionSpec] = [
        OptionSpec("socket", value: "PATH", "Talk to the daemon at PATH (default: $SCENED_SOCKET, else the first that exists of $XDG_RUNTIME_DIR/scened/io.scened.Manager, /run/scened/io.scened.Manager and /tmp/scened-UID/io.scened.Manager)"),
        OptionSpec("json", short: "j", value: "MODE", optionalValue: true, "Print machine-readable JSON: short (one compact object per line, also bare --json), pretty (indented) or off; -j is pretty on a terminal, short otherwise. For monitor and logs one object per event or entry"),
        OptionSpec("verbose", short: "v", "After a change, print the events it caused (reclaim that pressure sets off follows on its own: see monitor)"),
        OptionSpec("legend", value: "BOOL", "Whether tables have their header and footer (default: yes)"),
        OptionSpec("no-legend", "Omit table headers and footers (--legend=no)"),
        OptionSpec("no-pager", "Do not pipe output into a pager"),
        OptionSpec("quiet", short: "q", "Print nothing for a change that succeeded (no new id, no -v events), nor '-- No entries --'"),
        OptionSpec("help", short: "h", "Show this help (COMMAND --help: the command's)"),
        OptionSpec("version", "Show scenectl's version"),
    ]

    /// Records a global option; false if `spec` is not one. `value` is nil for a flag, and for
    /// an optional-value option given without one ("" for its short form).
    mutating func apply(_ spec: OptionSpec, value: String?) throws(ControlError) -> Bool {
        switch spec.long {
        case "socket": socket = value
        case "json":
            switch value {
            case nil: jsonMode = .short  // bare --json, as scripts written before --json=MODE use it
            case "": jsonMode = .auto  // -j
            case let text?:
                guard let mode = JSONMode(rawValue: text), mode != .auto else {
                    throw .usage("invalid --json '\(text)'; expected short, pretty or off")
                }
                jsonMode = mode
            }
        case "verbose": verbose = true
        case "legend": legend = try Check.boolean(value ?? "", option: "--legend")
        case "no-legend": legend = false
        case "no-pager": pager = false
        case "quiet": quiet = true
        case "help": help = true
        case "version": version = true
        default: return false
        }
        return true
    }
}
