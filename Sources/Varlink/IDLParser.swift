extension VarlinkInterfaceDefinition {
    /// Parses a `.varlink` interface definition (varlink.org grammar). Named types must be
    /// declared in the same interface; types, methods and errors share one namespace.
    public static func parse(_ text: String) throws(IDLError) -> VarlinkInterfaceDefinition {
        var parser = try IDLParser(text)
        return try parser.parseInterface()
    }
}

/// Recursive-descent parser over `IDLLexer` tokens with one token of lookahead.
struct IDLParser {
    private var lexer: IDLLexer
    private var current: IDLToken
    /// Uses of named types, checked once all declarations are known.
    private var references: [(name: String, token: IDLToken)] = []
    /// How deeply types are nested where the parser is; bounded because each level is a
    /// recursive call, and an unbounded text would overflow the stack.
    private var depth = 0
    static let maxDepth = 128

    init(_ text: String) throws(IDLError) {
        lexer = IDLLexer(text)
        current = try lexer.next()
    }

    mutating func parseInterface() throws(IDLError) -> VarlinkInterfaceDefinition {
        let keyword = try advance()
        guard case .word("interface") = keyword.kind else {
            throw failure("expected 'interface' as the first keyword", at: keyword)
        }
        let nameToken = try advance()
        guard case .word(let name) = nameToken.kind, VarlinkNames.isValidInterfaceName(name) else {
            throw failure("invalid interface name \(describe(nameToken)); expected a reverse-domain name like 'org.example.service'", at: nameToken)
        }

        var types: [VarlinkTypeDefinition] = []
        var methods: [VarlinkMethodDefinition] = []
        var errors: [VarlinkErrorDefinition] = []
        var memberNames: Set<String> = []

        while current.kind != .end {
            let kindToken = try advance()
            guard case .word(let kind) = kindToken.kind, kind == "type" || kind == "method" || kind == "error" else {
                throw failure("expected 'type', 'method' or 'error', found \(describe(kindToken))", at: kindToken)
            }
            let memberToken = try advance()
            guard case .word(let memberName) = memberToken.kind, VarlinkNames.isValidMemberName(memberName) else {
                throw failure("invalid \(kind) name \(describe(memberToken)); names start with an uppercase letter followed by letters or digits", at: memberToken)
            }
            guard memberNames.insert(memberName).inserted else {
                throw failure("duplicate member '\(memberName)'", at: memberToken)
            }
            let documentation = kindToken.documentation
            switch kind {
            case "type":
                types.append(VarlinkTypeDefinition(name: memberName, type: try parseCompound(allowEnum: true), documentation: documentation))
            case "method":
                let input = try parseStructFields()
                let arrow = try advance()
                guard arrow.kind == .arrow else { throw failure("expected '->' after the method's input, found \(describe(arrow))", at: arrow) }
                let output = try parseStructFields()
                methods.append(VarlinkMethodDefinition(name: memberName, input: input, output: output, documentation: documentation))
            default:
                errors.append(VarlinkErrorDefinition(name: memberName, parameters: try parseStructFields(), documentation: documentation))
            }
        }
        guard !memberNames.isEmpty else { throw failure("interface '\(name)' declares no members", at: current) }

        let typeNames = Set(types.map(\.name))
        for reference in references where !typeNames.contains(reference.name) {
            let problem = memberNames.contains(reference.name) ? "'\(reference.name)' is a method or error, not a type" : "unknown type '\(reference.name)'"
            throw failure(problem, at: reference.token)
        }
        return VarlinkInterfaceDefinition(name: name, documentation: keyword.documentation, types: types, methods: methods, errors: errors)
    }

    private mutating func advance() throws(IDLError) -> IDLToken {
        let token = current
        current = try lexer.next()
        return token
    }

    private func failure(_ message: String, at token: IDLToken) -> IDLError {
        IDLError(line: token.line, column: token.column, message: message)
    }

    private func describe(_ token: IDLToken) -> String {
        switch token.kind {
        case .word(let word): return "'\(word)'"
        case .openParen: return "'('"
        case .closeParen: return "')'"
        case .comma: return "','"
        case .colon: return "':'"
        case .question: return "'?'"
        case .arrow: return "'->'"
        case .arrayPrefix: return "'[]'"
        case .mapPrefix: return "'[string]'"
        case .end: return "end of input"
        }
    }

    /// Method input/output and error parameters: a struct, never an enum.
    private mutating func parseStructFields() throws(IDLError) -> [VarlinkField] {
        guard case .structure(let fields) = try parseCompound(allowEnum: false) else { return [] }
        return fields
    }

    /// `( … )`: a struct of `name: type` fields or, where allowed, an enum of bare names.
    /// `()` is the empty struct.
    private mutating func parseCompound(allowEnum: Bool) throws(IDLError) -> VarlinkType {
        let open = try advance()
        guard open.kind == .openParen else { throw failure("expected '(', found \(describe(open))", at: open) }
        if current.kind == .closeParen {
            _ = try advance()
            return .structure([])
        }
        var fields: [VarlinkField] = []
        var enumValues: [String] = []
        var names: Set<String> = []
        while true {
            let nameToken = try advance()
            guard case .word(let name) = nameToken.kind else {
                throw failure("expected a field name, found \(describe(nameToken))", at: nameToken)
            }
            guard VarlinkNames.isValidFieldName(name) else {
                throw failure("invalid field name '\(name)'; names start with a letter, continue with letters or digits, and may contain single '_' inside", at: nameToken)
            }
            guard names.insert(name).inserted else { throw failure("duplicate field '\(name)'", at: nameToken) }
            if current.kind == .colon {
                guard enumValues.isEmpty else { throw failure("cannot mix enum values and typed fields", at: nameToken) }
                _ = try advance()
                let type = try parseType()
                if current.kind == .arrayPrefix {
                    throw failure("the 'T[]' array syntax is not supported; write '[]T'", at: current)
                }
                fields.append(VarlinkField(name: name, type: type, documentation: nameToken.documentation))
            } else {
                guard allowEnum else { throw failure("expected ':' after field '\(name)'", at: current) }
                guard fields.isEmpty else { throw failure("cannot mix enum values and typed fields", at: nameToken) }
                enumValues.append(name)
            }
            let separator = try advance()
            switch separator.kind {
            case .comma: continue
            case .closeParen: return enumValues.isEmpty ? .structure(fields) : .enumeration(enumValues)
            default: throw failure("expected ',' or ')', found \(describe(separator))", at: separator)
            }
        }
    }

    private mutating func parseType() throws(IDLError) -> VarlinkType {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { throw failure("types nest deeper than \(Self.maxDepth) levels", at: current) }
        switch current.kind {
        case .openParen:
            return try parseCompound(allowEnum: true)
        case .question:
            _ = try advance()
            guard current.kind != .question else { throw failure("'?' cannot be repeated", at: current) }
            return .nullable(try parseType())
        case .arrayPrefix:
            _ = try advance()
            return .array(try parseType())
        case .mapPrefix:
            _ = try advance()
            return .map(try parseType())
        case .word(let word):
            let token = try advance()
            switch word {
            case "bool": return .bool
            case "int": return .int
            case "float": return .float
            case "string": return .string
            case "object": return .object
            default:
                guard VarlinkNames.isValidMemberName(word) else {
                    throw failure("unknown type '\(word)'", at: token)
                }
                references.append((word, token))
                return .named(word)
            }
        default:
            throw failure("expected a type, found \(describe(current))", at: current)
        }
    }
}
