import Testing
@testable import Varlink

@Suite struct IDLParserTests {
    static let realistic = """
        # Scene daemon control interface.
        # Manages UIKit-style scene sessions.
        interface io.example.scened

        # One scene session.
        type Session (
          # Stable identifier.
          id: string,
          state: SessionState,
          tags: []string,
          note: ?string,
          extra: [string]string,
          flags: [string](),
          raw: object,
          history: ?[](at: int, state: SessionState),
          weights: [string]?float,
          mode: (foreground, background),
          parent: ?Session
        )

        type SessionState (starting, running, stopped)  # a trailing comment is not documentation

        # Replies with the text it was given.
        method Ping(text: ?string) -> (text: string)

        method List() -> (session: Session)
        method Get(id: string) -> (session: Session)
        method Configure(id: string, options: (verbose: bool, depth: ?int, ratio: float)) -> ()

        # The session does not exist.
        error NoSuchSession (id: string)
        error Busy ()
        """

    @Test func parsesARealisticInterface() throws {
        let definition = try VarlinkInterfaceDefinition.parse(Self.realistic)
        #expect(definition.name == "io.example.scened")
        #expect(definition.documentation == "Scene daemon control interface.\nManages UIKit-style scene sessions.")
        #expect(definition.types.map(\.name) == ["Session", "SessionState"])
        #expect(definition.methods.map(\.name) == ["Ping", "List", "Get", "Configure"])
        #expect(definition.errors.map(\.name) == ["NoSuchSession", "Busy"])

        let session = try #require(definition.type(named: "Session"))
        #expect(session.documentation == "One scene session.")
        guard case .structure(let fields) = session.type else {
            Issue.record("Session is not a struct")
            return
        }
        #expect(fields.map(\.name) == ["id", "state", "tags", "note", "extra", "flags", "raw", "history", "weights", "mode", "parent"])
        #expect(fields.map(\.type) == [
            .string, .named("SessionState"), .array(.string), .nullable(.string), .map(.string), .map(.structure([])), .object,
            .nullable(.array(.structure([VarlinkField(name: "at", type: .int), VarlinkField(name: "state", type: .named("SessionState"))]))),
            .map(.nullable(.float)), .enumeration(["foreground", "background"]), .nullable(.named("Session")),
        ])
        #expect(fields[0].documentation == "Stable identifier.")
        #expect(fields[1].documentation == "")
        #expect(fields[3].isOptional && !fields[0].isOptional)

        #expect(definition.type(named: "SessionState")?.type == .enumeration(["starting", "running", "stopped"]))
        #expect(definition.type(named: "SessionState")?.documentation == "")

        let ping = try #require(definition.method(named: "Ping"))
        #expect(ping.documentation == "Replies with the text it was given.")
        #expect(ping.input == [VarlinkField(name: "text", type: .nullable(.string))])
        #expect(ping.output == [VarlinkField(name: "text", type: .string)])
        #expect(definition.method(named: "List")?.input == [])
        #expect(definition.method(named: "Configure")?.output == [])
        #expect(definition.method(named: "io.example.scened.Get")?.input.map(\.name) == ["id"])
        #expect(definition.method(named: "io.other.Get") == nil)
        #expect(definition.method(named: "Session") == nil)

        #expect(definition.error(named: "NoSuchSession")?.parameters == [VarlinkField(name: "id", type: .string)])
        #expect(definition.error(named: "NoSuchSession")?.documentation == "The session does not exist.")
        #expect(definition.error(named: "io.example.scened.Busy")?.parameters == [])
    }

    @Test func docCommentsNeedToTouchTheirMember() throws {
        let definition = try VarlinkInterfaceDefinition.parse("""
            # Detached comment.

            interface a.b
            # first
            # second

            # third
            method M() -> ()
            error E () # trailing
            # last
            type T (x: int)
            """)
        #expect(definition.documentation == "")
        #expect(definition.method(named: "M")?.documentation == "third")
        #expect(definition.error(named: "E")?.documentation == "")
        #expect(definition.type(named: "T")?.documentation == "last")
    }

    @Test func toleratesCompactAndCRLFLayout() throws {
        let definition = try VarlinkInterfaceDefinition.parse("interface a.b\r\nmethod M(a:int,b:[]?string)->(c:[string]bool)\r\n")
        #expect(definition.method(named: "M")?.input.map(\.type) == [.int, .array(.nullable(.string))])
        #expect(definition.method(named: "M")?.output.map(\.type) == [.map(.bool)])
    }

    @Test(arguments: [
        ("method M() -> ()", 1, 1, "expected 'interface' as the first keyword"),
        ("", 1, 1, "expected 'interface' as the first keyword"),
        ("interface Foo", 1, 11, "invalid interface name 'Foo'; expected a reverse-domain name like 'org.example.service'"),
        ("interface a", 1, 11, "invalid interface name 'a'; expected a reverse-domain name like 'org.example.service'"),
        ("interface a.b-", 1, 11, "invalid interface name 'a.b-'; expected a reverse-domain name like 'org.example.service'"),
        ("interface a.b", 1, 14, "interface 'a.b' declares no members"),
        ("interface a.b\nmethod M(names: string[]) -> ()", 2, 23, "the 'T[]' array syntax is not supported; write '[]T'"),
        ("interface a.b\n\nmethod M() -> (x: Missing)", 3, 19, "unknown type 'Missing'"),
        ("interface a.b\nmethod M() -> ()\nmethod M() -> ()", 3, 8, "duplicate member 'M'"),
        ("interface a.b\ntype M (a: int)\nerror M ()", 3, 7, "duplicate member 'M'"),
        ("interface a.b\nmethod M(a: int, a: string) -> ()", 2, 18, "duplicate field 'a'"),
        ("interface a.b\ntype E (x, y, x)", 2, 15, "duplicate field 'x'"),
        ("interface a.b\nmethod m() -> ()", 2, 8, "invalid method name 'm'; names start with an uppercase letter followed by letters or digits"),
        ("interface a.b\ntype My_Type (a: int)", 2, 6, "invalid type name 'My_Type'; names start with an uppercase letter followed by letters or digits"),
        ("interface a.b\nmethod M(bad__name: int) -> ()", 2, 10, "invalid field name 'bad__name'; names start with a letter, continue with letters or digits, and may contain single '_' inside"),
        ("interface a.b\nmethod M(_x: int) -> ()", 2, 10, "invalid field name '_x'; names start with a letter, continue with letters or digits, and may contain single '_' inside"),
        ("interface a.b\nmethod M(x_: int) -> ()", 2, 10, "invalid field name 'x_'; names start with a letter, continue with letters or digits, and may contain single '_' inside"),
        ("interface a.b\nmethod M(a: int)", 2, 17, "expected '->' after the method's input, found end of input"),
        ("interface a.b\nmethod M(a, b) -> ()", 2, 11, "expected ':' after field 'a'"),
        ("interface a.b\ntype T (a, b: int)", 2, 12, "cannot mix enum values and typed fields"),
        ("interface a.b\ntype T (a: int, b)", 2, 17, "cannot mix enum values and typed fields"),
        ("interface a.b\nmethod M(a: int,) -> ()", 2, 17, "expected a field name, found ')'"),
        ("interface a.b\nmethod M(a: ??int) -> ()", 2, 14, "'?' cannot be repeated"),
        ("interface a.b\nmethod M(a: [int]string) -> ()", 2, 13, "expected '[]' or '[string]'"),
        ("interface a.b\nmethod M(a: integer) -> ()", 2, 13, "unknown type 'integer'"),
        ("interface a.b\nmethod M(a: int) -> ()\nmethod N(b: M) -> ()", 3, 13, "'M' is a method or error, not a type"),
        ("interface a.b\nmethod M(a: int) -> ()\nfunction F() -> ()", 3, 1, "expected 'type', 'method' or 'error', found 'function'"),
        ("interface a.b\nmethod M(a: int) => ()", 2, 18, "unexpected character '='"),
        ("interface a.b\nmethod M(a: int) -> () é", 2, 24, "unexpected character byte 0xc3"),
        ("interface a.b\ntype T int", 2, 8, "expected '(', found 'int'"),
        ("interface a.b\nmethod M(a: int) -> (b: int", 2, 28, "expected ',' or ')', found end of input"),
        ("interface a.b\nmethod M(a: ) -> ()", 2, 13, "expected a type, found ')'"),
    ])
    func rejectsInvalidDefinitions(_ text: String, _ line: Int, _ column: Int, _ message: String) {
        #expect(throws: IDLError(line: line, column: column, message: message)) {
            try VarlinkInterfaceDefinition.parse(text)
        }
    }

    /// Found by Fuzz/idl: each nesting level was a recursive call, so a long enough text
    /// ("[][][]…") overflowed the stack.
    @Test func boundsTypeNesting() throws {
        let limit = IDLParser.maxDepth
        let deepest = "interface a.b\nmethod M(a: " + String(repeating: "[]", count: limit - 1) + "int) -> ()"
        #expect(try VarlinkInterfaceDefinition.parse(deepest).methods.count == 1)
        let column = 13 + 2 * limit
        #expect(throws: IDLError(line: 2, column: column, message: "types nest deeper than \(limit) levels")) {
            try VarlinkInterfaceDefinition.parse("interface a.b\nmethod M(a: " + String(repeating: "[]", count: limit) + "int) -> ()")
        }
        let structs = String(repeating: "(a: ", count: 100_000) + "int" + String(repeating: ")", count: 100_000)
        #expect(throws: IDLError.self) { try VarlinkInterfaceDefinition.parse("interface a.b\ntype T " + structs) }
        #expect(throws: IDLError.self) {
            try VarlinkInterfaceDefinition.parse("interface a.b\ntype T (a: " + String(repeating: "?[]", count: 100_000) + "int)")
        }
    }

    @Test func errorDescribesPosition() {
        #expect(IDLError(line: 3, column: 7, message: "x").description == "line 3, column 7: x")
    }
}

@Suite struct IDLValidationTests {
    static let definition = try! VarlinkInterfaceDefinition.parse(IDLParserTests.realistic)

    private func check(_ method: String, _ parameters: JSONObject) -> String? {
        Self.definition.validateParameters(method: method, parameters)
    }

    @Test func acceptsValidParameters() {
        #expect(check("Ping", [:]) == nil)
        #expect(check("Ping", ["text": .null]) == nil)
        #expect(check("io.example.scened.Ping", ["text": "hi"]) == nil)
        #expect(check("Get", ["id": "s1"]) == nil)
        #expect(check("Configure", ["id": "s1", "options": ["verbose": true, "ratio": 1]]) == nil)
        #expect(check("Configure", ["id": "s1", "options": ["verbose": false, "depth": 3.0, "ratio": 0.5]]) == nil)
    }

    @Test func reportsMissingUnknownAndMistypedParameters() {
        #expect(check("Get", [:]) == "id")
        #expect(check("Get", ["id": .null]) == "id")
        #expect(check("Get", ["id": 5]) == "id")
        #expect(check("Get", ["id": "s1", "extra": 1]) == "extra")
        #expect(check("Ping", ["text": 1]) == "text")
        #expect(check("Configure", ["id": "s1"]) == "options")
        #expect(check("Configure", ["id": "s1", "options": ["verbose": "yes", "ratio": 1]]) == "options")
        #expect(check("Configure", ["id": "s1", "options": ["verbose": true, "ratio": 1, "x": 1]]) == "options")
        #expect(check("Configure", ["id": "s1", "options": ["verbose": true, "depth": 1.5, "ratio": 1]]) == "options")
        #expect(check("Configure", ["id": "s1", "options": ["verbose": true]]) == "options")
        // Unknown and mistyped keys are reported in message order before missing ones.
        #expect(check("Configure", ["zzz": 1, "id": 2]) == "zzz")
    }

    @Test func unknownMethodsFailClosed() {
        #expect(check("Nope", [:]) == "")
        #expect(check("io.other.Ping", [:]) == "")
    }

    @Test func checksEveryTypeShape() {
        let d = Self.definition
        let session: JSONValue = [
            "id": "s", "state": "running", "tags": ["a", "b"], "extra": ["k": "v"], "flags": ["f": [:]], "raw": ["any": [1, 2]],
            "history": [["at": 1, "state": "stopped"]], "weights": ["w": .null, "v": 2.5], "mode": "background",
            "parent": ["id": "p", "state": "starting", "tags": [], "extra": [:], "flags": [:], "raw": [:], "weights": [:], "mode": "foreground"],
        ]
        #expect(d.conforms(session, to: .named("Session")))
        func mutated(_ key: String, _ value: JSONValue?) -> JSONValue {
            var object = session.objectValue!
            object[key] = value
            return .object(object)
        }
        #expect(!d.conforms(mutated("state", "paused"), to: .named("Session")))
        #expect(!d.conforms(mutated("tags", ["a", 1]), to: .named("Session")))
        #expect(!d.conforms(mutated("tags", "a"), to: .named("Session")))
        #expect(!d.conforms(mutated("extra", ["k": 1]), to: .named("Session")))
        #expect(!d.conforms(mutated("flags", ["f": ["x": 1]]), to: .named("Session")))
        #expect(!d.conforms(mutated("raw", [1]), to: .named("Session")))
        #expect(!d.conforms(mutated("history", [["at": 1.5, "state": "stopped"]]), to: .named("Session")))
        #expect(!d.conforms(mutated("weights", ["w": "heavy"]), to: .named("Session")))
        #expect(!d.conforms(mutated("parent", ["id": "p"]), to: .named("Session")))
        #expect(!d.conforms(mutated("id", nil), to: .named("Session")))
        #expect(d.conforms(mutated("note", nil), to: .named("Session")))
        #expect(d.conforms(mutated("history", .null), to: .named("Session")))
        #expect(!d.conforms(.int(1), to: .bool))
        #expect(d.conforms(.int(1), to: .float))
        #expect(!d.conforms(.string("1"), to: .int))
        #expect(!d.conforms(.string("x"), to: .named("Undeclared")))
    }
}
