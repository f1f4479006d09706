/// A type in a Varlink interface definition.
public indirect enum VarlinkType: Sendable, Equatable {
    case bool
    case int
    case float
    case string
    /// Foreign, untyped JSON object.
    case object
    /// `[]T`
    case array(VarlinkType)
    /// `[string]T`; the string set `[string]()` is a map to the empty struct.
    case map(VarlinkType)
    /// `?T`
    case nullable(VarlinkType)
    /// A `type` declared in the same interface.
    case named(String)
    /// `(name: T, …)`; `()` is the empty struct.
    case structure([VarlinkField])
    /// `(a, b, …)`
    case enumeration([String])
}

/// A struct member, method parameter or error parameter.
public struct VarlinkField: Sendable, Equatable {
    public var name: String
    public var type: VarlinkType
    /// Doc comment lines directly above the field, without the leading '#'.
    public var documentation: String

    public init(name: String, type: VarlinkType, documentation: String = "") {
        self.name = name
        self.type = type
        self.documentation = documentation
    }

    /// Nullable fields may be absent from a message.
    public var isOptional: Bool {
        if case .nullable = type { return true }
        return false
    }
}
