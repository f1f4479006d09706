// fuzz-modules: Varlink
// The interface-definition parser: errors point inside the text; a parsed interface printed
// back as IDL parses to the same definition (documentation aside); every declared name is
// found by lookup; parameter validation runs on any JSON value without failing.
@testable import Varlink

/// IDL text for a definition, without comments.
func printed(_ interface: VarlinkInterfaceDefinition) -> String {
    var text = "interface \(interface.name)\n"
    for type in interface.types { text += "type \(type.name) \(printed(type.type, topLevel: true))\n" }
    for method in interface.methods {
        text += "method \(method.name)\(printed(.structure(method.input))) -> \(printed(.structure(method.output)))\n"
    }
    for error in interface.errors { text += "error \(error.name) \(printed(.structure(error.parameters)))\n" }
    return text
}

func printed(_ type: VarlinkType, topLevel: Bool = false) -> String {
    switch type {
    case .bool: "bool"
    case .int: "int"
    case .float: "float"
    case .string: "string"
    case .object: "object"
    case .array(let element): "[]" + printed(element)
    case .map(let element): "[string]" + printed(element)
    case .nullable(let wrapped): "?" + printed(wrapped)
    case .named(let name): name
    case .structure(let fields): "(" + fields.map { "\($0.name): \(printed($0.type))" }.joined(separator: ", ") + ")"
    case .enumeration(let values): "(" + values.joined(separator: ", ") + ")"
    }
}

/// A type with the documentation of its nested fields emptied.
func bare(_ type: VarlinkType) -> VarlinkType {
    switch type {
    case .array(let element): .array(bare(element))
    case .map(let element): .map(bare(element))
    case .nullable(let wrapped): .nullable(bare(wrapped))
    case .structure(let list): .structure(bare(list))
    default: type
    }
}

func bare(_ fields: [VarlinkField]) -> [VarlinkField] {
    fields.map { VarlinkField(name: $0.name, type: bare($0.type)) }
}

/// The definition with every documentation string emptied, for comparing with a reprint.
func undocumented(_ interface: VarlinkInterfaceDefinition) -> VarlinkInterfaceDefinition {
    VarlinkInterfaceDefinition(
        name: interface.name, documentation: "",
        types: interface.types.map { VarlinkTypeDefinition(name: $0.name, type: bare($0.type), documentation: "") },
        methods: interface.methods.map { VarlinkMethodDefinition(name: $0.name, input: bare($0.input), output: bare($0.output), documentation: "") },
        errors: interface.errors.map { VarlinkErrorDefinition(name: $0.name, parameters: bare($0.parameters), documentation: "") })
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIDL(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    // The parser takes a String: invalid UTF-8 arrives as U+FFFD, as from any String source.
    let text = String(decoding: bytes, as: UTF8.self)
    let interface: VarlinkInterfaceDefinition
    do {
        interface = try VarlinkInterfaceDefinition.parse(text)
    } catch {
        let lines = text.utf8.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        require(error.line >= 1 && error.line <= lines && error.column >= 1, "error at \(error.line):\(error.column) outside \(lines) lines")
        return 0
    }
    for type in interface.types { require(interface.type(named: type.name) == type, "type \(type.name) not found by name") }
    for method in interface.methods {
        require(interface.method(named: method.name) == method, "method \(method.name) not found by name")
        require(interface.method(named: interface.name + "." + method.name) == method, "method \(method.name) not found by full name")
        // Any verdict will do: validation of a declared method must only come back.
        _ = interface.validateParameters(method: method.name, JSONObject())
    }
    for error in interface.errors { require(interface.error(named: error.name) == error, "error \(error.name) not found by name") }

    let reprint = printed(interface)
    do {
        let reparsed = try VarlinkInterfaceDefinition.parse(reprint)
        require(undocumented(reparsed) == undocumented(interface), "reprint parses differently:\n\(reprint)")
    } catch {
        require(false, "reprint does not parse (\(error)):\n\(reprint)")
    }
    return 0
}
