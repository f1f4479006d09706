/// A `type` declaration: a named struct or enum.
public struct VarlinkTypeDefinition: Sendable, Equatable {
    public var name: String
    /// `.structure` or `.enumeration`.
    public var type: VarlinkType
    public var documentation: String
}

public struct VarlinkMethodDefinition: Sendable, Equatable {
    public var name: String
    public var input: [VarlinkField]
    public var output: [VarlinkField]
    public var documentation: String
}

public struct VarlinkErrorDefinition: Sendable, Equatable {
    public var name: String
    public var parameters: [VarlinkField]
    public var documentation: String
}

/// A parsed `.varlink` interface definition.
public struct VarlinkInterfaceDefinition: Sendable, Equatable {
    public let name: String
    public let documentation: String
    /// Members in declaration order.
    public let types: [VarlinkTypeDefinition]
    public let methods: [VarlinkMethodDefinition]
    public let errors: [VarlinkErrorDefinition]

    private let typeIndex: [String: Int]
    private let methodIndex: [String: Int]
    private let errorIndex: [String: Int]

    init(name: String, documentation: String, types: [VarlinkTypeDefinition], methods: [VarlinkMethodDefinition], errors: [VarlinkErrorDefinition]) {
        self.name = name
        self.documentation = documentation
        self.types = types
        self.methods = methods
        self.errors = errors
        typeIndex = Dictionary(uniqueKeysWithValues: types.enumerated().map { ($1.name, $0) })
        methodIndex = Dictionary(uniqueKeysWithValues: methods.enumerated().map { ($1.name, $0) })
        errorIndex = Dictionary(uniqueKeysWithValues: errors.enumerated().map { ($1.name, $0) })
    }

    public func type(named name: String) -> VarlinkTypeDefinition? {
        typeIndex[name].map { types[$0] }
    }

    /// Looks a method up by its short name (`Ping`) or fully qualified name (`io.example.Ping`).
    public func method(named name: String) -> VarlinkMethodDefinition? {
        guard let short = shortName(name) else { return nil }
        return methodIndex[short].map { methods[$0] }
    }

    /// Looks an error up by its short or fully qualified name.
    public func error(named name: String) -> VarlinkErrorDefinition? {
        guard let short = shortName(name) else { return nil }
        return errorIndex[short].map { errors[$0] }
    }

    /// Strips this interface's prefix; nil if the name is qualified with another interface.
    private func shortName(_ name: String) -> String? {
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")) else { return name }
        guard name[..<dot] == self.name else { return nil }
        return String(name[name.utf8.index(after: dot)...])
    }
}
