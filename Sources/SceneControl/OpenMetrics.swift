/// Writes the OpenMetrics text exposition format: each family's TYPE and HELP (and UNIT)
/// before its samples, label values escaped, `# EOF` last. The `prometheus` flavour is the
/// older text format that node-exporter's textfile collector parses: there a counter's TYPE
/// names the `_total` series itself, and there is no UNIT or EOF line.
struct OpenMetricsWriter {
    enum Flavor: String, Sendable, CaseIterable {
        case openMetrics = "openmetrics"
        case prometheus
    }

    enum Kind: String, Sendable {
        case gauge, counter, histogram
    }

    let flavor: Flavor
    private(set) var text = ""

    init(flavor: Flavor = .openMetrics) {
        self.flavor = flavor
    }

    /// Starts a family. `name` is without `_total`, which counters' samples add.
    mutating func family(_ name: String, _ kind: Kind, help: String, unit: String? = nil) {
        let typed = kind == .counter && flavor == .prometheus ? name + "_total" : name
        text += "# TYPE \(typed) \(kind.rawValue)\n"
        if let unit, flavor == .openMetrics { text += "# UNIT \(typed) \(unit)\n" }
        text += "# HELP \(typed) \(Self.escapeHelp(help))\n"
    }

    mutating func sample(_ name: String, labels: KeyValuePairs<String, String> = [:], _ value: UInt64) {
        sample(name, Array(labels), text: String(value))
    }

    mutating func sample(_ name: String, labels: KeyValuePairs<String, String> = [:], seconds value: Double) {
        sample(name, Array(labels), text: Self.number(value))
    }

    mutating func sample(_ name: String, _ labels: [(key: String, value: String)], text value: String) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.key)=\"\(Self.escapeLabel($0.value))\"" }.joined(separator: ",") + "}"
        }
        text += " " + value + "\n"
    }

    /// A histogram of microsecond durations in seconds: cumulative buckets, +Inf, sum, count.
    mutating func histogram(_ name: String, help: String, bounds: [UInt64], counts: [UInt64], overflow: UInt64,
                            sumMicroseconds: UInt64) {
        family(name, .histogram, help: help, unit: "seconds")
        var cumulative: UInt64 = 0
        for (bound, count) in zip(bounds, counts) {
            cumulative &+= count
            sample(name + "_bucket", labels: ["le": Self.number(Double(bound) / 1e6)], cumulative)
        }
        cumulative &+= overflow
        sample(name + "_bucket", labels: ["le": "+Inf"], cumulative)
        sample(name + "_sum", seconds: Double(sumMicroseconds) / 1e6)
        sample(name + "_count", cumulative)
    }

    /// The text, ended as the flavour requires.
    mutating func finish() -> String {
        if flavor == .openMetrics { text += "# EOF\n" }
        return text
    }

    /// Label values escape backslash, double quote and newline.
    static func escapeLabel(_ value: String) -> String { escape(value, quotes: true) }

    /// HELP text escapes backslash and newline only: the older format has no escaped quote,
    /// and OpenMetrics no bare one, so HELP texts are written without quotes.
    static func escapeHelp(_ value: String) -> String { escape(value, quotes: false) }

    private static func escape(_ value: String, quotes: Bool) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"" where quotes: out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// A float as both formats read it: integral values keep a ".0" off (1e-05 style is fine).
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
