import CSystemd

/// A basic value for a method call's arguments.
public enum BusArgument: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case uint32(UInt32)
    case int32(Int32)
    case uint64(UInt64)

    /// Appends the value to `message` (sd_bus_message_append_basic).
    func append(to message: OpaquePointer) -> Int32 {
        switch self {
        case .string(let text): text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        case .objectPath(let path): path.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }
        case .bool(let value): Self.appendFixed(message, "b", Int32(value ? 1 : 0))
        case .uint32(let value): Self.appendFixed(message, "u", value)
        case .int32(let value): Self.appendFixed(message, "i", value)
        case .uint64(let value): Self.appendFixed(message, "t", value)
        }
    }

    private static func appendFixed<T>(_ message: OpaquePointer, _ type: Character, _ value: T) -> Int32 {
        var copy = value
        return withUnsafePointer(to: &copy) { sd_bus_message_append_basic(message, CChar(type.asciiValue!), $0) }
    }
}

/// A method call to make: where it goes and its basic arguments.
public struct BusMethodCall: Equatable, Sendable {
    public var destination: String?
    public var path: String
    public var interface: String?
    public var member: String
    public var arguments: [BusArgument]

    public init(destination: String?, path: String, interface: String?, member: String, arguments: [BusArgument] = []) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A match rule for signals (see "Match Rules" in the D-Bus specification). Values must not
/// contain a quote; `init` refuses them rather than escaping, as no caller needs one.
public struct BusMatchRule: Equatable, Sendable, CustomStringConvertible {
    public private(set) var description: String

    public init?(sender: String? = nil, path: String? = nil, pathNamespace: String? = nil, interface: String? = nil,
                 member: String? = nil, arg0: String? = nil) {
        var parts = ["type='signal'"]
        for (key, value) in [("sender", sender), ("path", path), ("path_namespace", pathNamespace),
                             ("interface", interface), ("member", member), ("arg0", arg0)] {
            guard let value else { continue }
            if value.contains("'") || value.contains("\\") { return nil }
            parts.append("\(key)='\(value)'")
        }
        description = parts.joined(separator: ",")
    }
}
