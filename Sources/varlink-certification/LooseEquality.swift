import Varlink

/// JSON equality as JSON means it: numbers compare by value (`1` equals `1.0`, which other
/// implementations may send for a float), objects ignore member order, and a null member
/// equals an absent one where `optional` says the type is nullable.
enum LooseEquality {
    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return equal(x, y)
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        default:
            if let x = a.doubleValue, let y = b.doubleValue { return x == y }
            return a == b
        }
    }

    static func equal(_ a: JSONObject, _ b: JSONObject, nullable: Set<String> = []) -> Bool {
        let keys = Set(a.keys).union(b.keys)
        for key in keys {
            switch (a[key], b[key]) {
            case (let x?, let y?):
                if !equal(x, y) { return false }
            case (nil, .null?), (.null?, nil):
                if !nullable.contains(key) { return false }
            default:
                return false
            }
        }
        return true
    }
}
