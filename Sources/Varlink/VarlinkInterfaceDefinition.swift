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

extension VarlinkInterfaceDefinition {
    /// Checks a call's parameters against the method's input, so a daemon can answer
    /// `InvalidParameter` generically. Returns nil when valid, else the name of the first
    /// offending top-level parameter: unknown keys and wrong types in message order first,
    /// then missing non-nullable fields in declaration order. Nested structs are checked
    /// fully, but the top-level name is reported.
    ///
    /// `method` may be short (`Ping`) or fully qualified. For a method this interface does not
    /// define the result is "" (invalid), so a mismatch between dispatch table and IDL fails closed.
    public func validateParameters(method: String, _ parameters: JSONObject) -> String? {
        guard let definition = self.method(named: method) else { return "" }
        return firstInvalidField(of: parameters, against: definition.input)
    }

    /// Whether `value` is valid for `type` (named types resolved in this interface).
    public func conforms(_ value: JSONValue, to type: VarlinkType) -> Bool {
        switch type {
        case .bool:
            return value.boolValue != nil
        case .int:
            return value.intValue != nil
        case .float:
            return value.doubleValue != nil
        case .string:
            return value.stringValue != nil
        case .object:
            return value.objectValue != nil
        case .array(let element):
            guard case .array(let elements) = value else { return false }
            return elements.allSatisfy { conforms($0, to: element) }
        case .map(let element):
            guard case .object(let members) = value else { return false }
            return members.allSatisfy { conforms($0.value, to: element) }
        case .nullable(let wrapped):
            return value.isNull || conforms(value, to: wrapped)
        case .named(let name):
            guard let definition = self.type(named: name) else { return false }
            return conforms(value, to: definition.type)
        case .structure(let fields):
            guard case .object(let members) = value else { return false }
            return firstInvalidField(of: members, against: fields) == nil
        case .enumeration(let names):
            guard case .string(let name) = value else { return false }
            return names.contains(name)
        }
    }

    private func firstInvalidField(of object: JSONObject, against fields: [VarlinkField]) -> String? {
        for (key, value) in object {
            guard let field = fields.first(where: { $0.name == key }), conforms(value, to: field.type) else { return key }
        }
        for field in fields where !field.isOptional && !object.contains(key: field.name) {
            return field.name
        }
        return nil
    }
}
