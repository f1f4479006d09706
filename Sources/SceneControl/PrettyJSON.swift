import Varlink

/// --json=pretty: one member per line, nested values indented with a tab, as systemd's
/// json-pretty output. Scalars are written as the compact form writes them.
enum PrettyJSON {
    /// `depth`: the value's nesting where it is written (its inner lines indented one more).
    static func render(_ value: JSONValue, depth: Int = 0) -> String {
        var out = ""
        append(value, depth: depth, to: &out)
        return out
    }

    private static func append(_ value: JSONValue, depth: Int, to out: inout String) {
        let inner = String(repeating: "\t", count: depth + 1)
        let closing = String(repeating: "\t", count: depth)
        switch value {
        case .object(let object) where !object.isEmpty:
            out += "{\n"
            for (index, (key, member)) in object.enumerated() {
                out += inner + JSONValue.string(key).serializedString() + " : "
                append(member, depth: depth + 1, to: &out)
                out += index + 1 < object.count ? ",\n" : "\n"
            }
            out += closing + "}"
        case .array(let elements) where !elements.isEmpty:
            out += "[\n"
            for (index, element) in elements.enumerated() {
                out += inner
                append(element, depth: depth + 1, to: &out)
                out += index + 1 < elements.count ? ",\n" : "\n"
            }
            out += closing + "]"
        default:
            out += value.serializedString()
        }
    }
}
