import Varlink

/// `{"NAME":[…]}` printed element by element as batches arrive, in the --json mode's form: the
/// same text as `Invocation.json` makes of the whole object, but the first elements out at
/// once. The opening waits for the first element, since an empty array is written apart
/// (`[]`) in the pretty form.
struct JSONArrayStream {
    let name: String
    let pretty: Bool
    private var count = 0

    init(name: String, pretty: Bool) {
        self.name = name
        self.pretty = pretty
    }

    /// The text for the next batch of elements.
    mutating func text(for elements: [JSONValue]) -> String {
        var out = ""
        for element in elements {
            if count == 0 {
                out += pretty ? "{\n\t" + JSONValue.string(name).serializedString() + " : [\n\t\t"
                    : "{" + JSONValue.string(name).serializedString() + ":["
            } else {
                out += pretty ? ",\n\t\t" : ","
            }
            out += pretty ? PrettyJSON.render(element, depth: 2) : element.serializedString()
            count += 1
        }
        return out
    }

    /// The end of the object and its newline (the whole object if there were no elements).
    func finish() -> String {
        if count == 0 {
            let empty = JSONValue.object([name: .array([])])
            return (pretty ? PrettyJSON.render(empty) : empty.serializedString()) + "\n"
        }
        return pretty ? "\n\t]\n}\n" : "]}\n"
    }
}
