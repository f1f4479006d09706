/// One option a verb (or scenectl itself) accepts.
public struct OptionSpec: Sendable {
    /// Without the dashes: "app" for `--app`.
    public var long: String
    public var short: Character?
    /// The value's placeholder in help ("APP"); nil for a flag.
    public var value: String?
    public var help: String

    public init(_ long: String, short: Character? = nil, value: String? = nil, _ help: String) {
        self.long = long
        self.short = short
        self.value = value
        self.help = help
    }

    var takesValue: Bool { value != nil }

    /// "-n, --lines N" as help shows it.
    var synopsis: String {
        var text = short.map { "-\($0), " } ?? "    "
        text += "--" + long
        if let value { text += " " + value }
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

/// Options that apply to every verb; accepted before or after the verb.
public struct GlobalOptions: Sendable, Equatable {
    public var socket: String?
    public var json = false
    public var verbose = false
    public var noLegend = false
    public var help = false
    public var version = false

    public init() {}

    static let specs: [OptionSpec] = [
        OptionSpec("socket", value: "PATH", "Talk to the daemon at PATH (default: $SCENED_SOCKET, else the first that exists of $XDG_RUNTIME_DIR/scened/io.scened.Manager, /run/scened/io.scened.Manager and /tmp/scened-UID/io.scened.Manager)"),
        OptionSpec("json", "Print machine-readable JSON: the reply as one compact object; for monitor and logs one object per line"),
        OptionSpec("verbose", short: "v", "After a change, print the events it caused (reclaim that pressure sets off follows on its own: see monitor)"),
        OptionSpec("no-legend", "Omit table headers and footers"),
        OptionSpec("help", short: "h", "Show this help (COMMAND --help: the command's)"),
        OptionSpec("version", "Show scenectl's version"),
    ]

    /// Records a global option; false if `spec` is not one.
    mutating func apply(_ spec: OptionSpec, value: String?) -> Bool {
        switch spec.long {
        case "socket": socket = value
        case "json": json = true
        case "verbose": verbose = true
        case "no-legend": noLegend = true
        case "help": help = true
        case "version": version = true
        default: return false
        }
        return true
    }
}
