/// A JSON value as parsed by `JSONParser` or built by hand.
///
/// Integers that fit `Int64` are kept exact in `.int`; every other number is a `.double`.
/// Equality is structural: `.int(1)` and `.double(1)` are different values.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

extension JSONValue {
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The value as an exact integer. A double is accepted when it is integral and within
    /// `Int64`, because other JSON producers may write `3.0` or `1e3` for integers.
    public var intValue: Int64? {
        switch self {
        case .int(let i):
            return i
        case .double(let d):
            // 2^63 is exactly representable; the range is half-open because Int64.max is not.
            guard d.rounded(.towardZero) == d, d >= -9_223_372_036_854_775_808.0, d < 9_223_372_036_854_775_808.0 else {
                return nil
            }
            return Int64(d)
        default:
            return nil
        }
    }

    /// The value as a floating-point number; integers are converted.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The member `key` if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The element at `index` if this is an array and the index is in range.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }
}

extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { serializedString() }
}
