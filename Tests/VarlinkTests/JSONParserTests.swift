import Testing
@testable import Varlink

@Suite struct JSONParserTests {
    @Test func parsesScalars() throws {
        #expect(try JSONParser.parse("null") == .null)
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse(" false ") == .bool(false))
        #expect(try JSONParser.parse("\"hi\"") == .string("hi"))
        #expect(try JSONParser.parse("0") == .int(0))
        #expect(try JSONParser.parse("-0") == .int(0))
        #expect(try JSONParser.parse("42") == .int(42))
        #expect(try JSONParser.parse("1.5") == .double(1.5))
        #expect(try JSONParser.parse("-2.5e3") == .double(-2500))
        #expect(try JSONParser.parse("1E+2") == .double(100))
        #expect(try JSONParser.parse("1e-2") == .double(0.01))
    }

    @Test func integersStayExactUpToInt64AndBecomeDoublesBeyond() throws {
        #expect(try JSONParser.parse("9223372036854775807") == .int(.max))
        #expect(try JSONParser.parse("-9223372036854775808") == .int(.min))
        #expect(try JSONParser.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONParser.parse("-9223372036854775809") == .double(-9_223_372_036_854_775_808.0))
        #expect(try JSONParser.parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
    }

    @Test func parsesNestedStructuresInOrder() throws {
        let value = try JSONParser.parse(#"{"b": [1, {"c": null}], "a": {"x": true}, "e": []}"#)
        #expect(value.objectValue?.keys == ["b", "a", "e"])
        #expect(value["b"]?[1]?["c"] == .null)
        #expect(value["a"]?["x"]?.boolValue == true)
        #expect(value["e"] == .array([]))
        #expect(try JSONParser.parse("{}") == .object([:]))
        #expect(try JSONParser.parse(" [ ] ") == .array([]))
    }

    @Test func fixedVarlinkKeysAndTheirNearMissesParseAlike() throws {
        // Top-level Varlink keys are interned; same-length look-alikes and nested keys must not be.
        let text = #"{"method":1,"methox":2,"oneway":3,"more":4,"mora":5,"parameters":{"method":6,"more":7},"paramaters":8,"error":9,"errors":10,"continues":11,"upgrade":12}"#
        let value = try JSONParser.parse(text)
        #expect(value.objectValue?.keys == [
            "method", "methox", "oneway", "more", "mora", "parameters", "paramaters", "error", "errors", "continues", "upgrade",
        ])
        #expect(value["methox"] == 2)
        #expect(value["parameters"] == ["method": 6, "more": 7])
        // An escaped spelling of an interned key is the same key.
        #expect(throws: JSONError(offset: 10, kind: .duplicateKey)) { try JSONParser.parse(#"{"more":1,"mor\u0065":2}"#) }
    }

    @Test func decodesEscapes() throws {
        let value = try JSONParser.parse(#""a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00\u0000""#)
        #expect(value == .string("a\"b\\c/d\u{8}\u{c}\n\r\tAé€😀\u{0}"))
    }

    @Test func acceptsValidMultibyteUTF8() throws {
        let bytes: [UInt8] = [0x22, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xF4, 0x8F, 0xBF, 0xBF, 0x22]
        #expect(try JSONParser.parse(bytes) == .string("é€😀\u{10FFFF}"))
    }

    @Test func parsesFromRawBuffer() throws {
        let bytes = Array(#"{"k":1}xyz"#.utf8)
        let value = try bytes.withUnsafeBytes { try JSONParser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<7])) }
        #expect(value == ["k": 1])
    }

    @Test(arguments: [
        // Overlong encodings.
        [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],
        // UTF-16 surrogates encoded in UTF-8.
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],
        // Above U+10FFFF and invalid lead bytes.
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE],
        // Stray continuation, truncated sequences, bad continuation.
        [0x80], [0xBF], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3, 0x41], [0xE2, 0x28, 0xA1],
    ] as [[UInt8]])
    func rejectsInvalidUTF8InStrings(_ sequence: [UInt8]) {
        let input = [0x22] + sequence + [0x22]
        #expect(throws: JSONError(offset: 1, kind: .invalidUTF8)) { try JSONParser.parse(input) }
    }

    @Test func rejectsInvalidUTF8InEscapedStringsAndOutsideStrings() {
        #expect(throws: JSONError(offset: 3, kind: .invalidUTF8)) { try JSONParser.parse([0x22, 0x5C, 0x6E, 0xC0, 0xAF, 0x22]) }
        #expect(throws: JSONError(offset: 1, kind: .invalidUTF8)) { try JSONParser.parse([0x5B, 0xFF, 0x5D]) }
        // Valid UTF-8 in the wrong place is a syntax error, not an encoding error.
        #expect(throws: JSONError(offset: 1, kind: .unexpectedCharacter)) { try JSONParser.parse([0x5B, 0xC3, 0xA9, 0x5D]) }
    }

    @Test(arguments: [
        (#""\ud800""#, 1), (#""\udbff x""#, 1), (#""\udc00""#, 1), (#""a\ud83d\u0041""#, 2), (#""\ud83d\ud83d""#, 1),
    ])
    func rejectsLoneSurrogateEscapes(_ text: String, _ offset: Int) {
        #expect(throws: JSONError(offset: offset, kind: .loneSurrogate)) { try JSONParser.parse(text) }
    }

    @Test func rejectsBadEscapes() {
        #expect(throws: JSONError(offset: 1, kind: .invalidEscape)) { try JSONParser.parse(#""\x""#) }
        #expect(throws: JSONError(offset: 5, kind: .invalidEscape)) { try JSONParser.parse(#""\u12G4""#) }
        #expect(throws: JSONError(offset: 1, kind: .invalidEscape)) { try JSONParser.parse(#""\'""#) }
    }

    @Test func rejectsControlCharactersInStrings() {
        #expect(throws: JSONError(offset: 2, kind: .controlCharacter)) { try JSONParser.parse("\"a\nb\"") }
        #expect(throws: JSONError(offset: 1, kind: .controlCharacter)) { try JSONParser.parse("\"\u{0}\"") }
        #expect(throws: JSONError(offset: 3, kind: .controlCharacter)) { try JSONParser.parse("\"\\n\t\"") }
    }

    @Test func rejectsDuplicateKeys() {
        #expect(throws: JSONError(offset: 8, kind: .duplicateKey)) { try JSONParser.parse(#"{"a":1, "a":2}"#) }
        // Escapes are decoded before comparing.
        #expect(throws: JSONError(offset: 7, kind: .duplicateKey)) { try JSONParser.parse(#"{"a":1,"\u0061":2}"#) }
    }

    @Test func detectsDuplicatesInLargeObjects() throws {
        // Past the hash-index threshold the duplicate check uses the index.
        var text = "{"
        for i in 0..<100 { text += "\"k\(i)\":\(i)," }
        let valid = try JSONParser.parse(text + "\"last\":0}")
        #expect(valid.objectValue?.count == 101)
        #expect(valid["k57"] == .int(57))
        #expect(throws: JSONError.self) { try JSONParser.parse(text + "\"k42\":0}") }
    }

    @Test(arguments: [
        ("01", JSONError(offset: 0, kind: .leadingZero)),
        ("-012", JSONError(offset: 1, kind: .leadingZero)),
        ("00", JSONError(offset: 0, kind: .leadingZero)),
        ("1.", JSONError(offset: 2, kind: .unexpectedEnd)),
        ("1.e3", JSONError(offset: 2, kind: .invalidNumber)),
        ("1e", JSONError(offset: 2, kind: .unexpectedEnd)),
        ("1e+", JSONError(offset: 3, kind: .unexpectedEnd)),
        ("-", JSONError(offset: 1, kind: .unexpectedEnd)),
        ("-a", JSONError(offset: 1, kind: .invalidNumber)),
        (".5", JSONError(offset: 0, kind: .unexpectedCharacter)),
        ("+1", JSONError(offset: 0, kind: .unexpectedCharacter)),
        ("NaN", JSONError(offset: 0, kind: .unexpectedCharacter)),
        ("nan", JSONError(offset: 0, kind: .invalidLiteral)),
        ("Infinity", JSONError(offset: 0, kind: .unexpectedCharacter)),
        ("-Infinity", JSONError(offset: 1, kind: .invalidNumber)),
        ("1e400", JSONError(offset: 0, kind: .numberOutOfRange)),
        ("-1e400", JSONError(offset: 0, kind: .numberOutOfRange)),
        ("0x10", JSONError(offset: 1, kind: .trailingCharacters)),
    ])
    func rejectsBadNumbers(_ text: String, _ expected: JSONError) {
        #expect(throws: expected) { try JSONParser.parse(text) }
    }

    @Test(arguments: [
        ("", JSONError(offset: 0, kind: .unexpectedEnd)),
        ("   ", JSONError(offset: 3, kind: .unexpectedEnd)),
        ("{} {}", JSONError(offset: 3, kind: .trailingCharacters)),
        ("[1] x", JSONError(offset: 4, kind: .trailingCharacters)),
        ("{\"a\":1}\u{0}", JSONError(offset: 7, kind: .trailingCharacters)),
        ("[1,]", JSONError(offset: 3, kind: .unexpectedCharacter)),
        ("{\"a\":1,}", JSONError(offset: 7, kind: .unexpectedCharacter)),
        ("[1 2]", JSONError(offset: 3, kind: .unexpectedCharacter)),
        ("{\"a\" 1}", JSONError(offset: 5, kind: .unexpectedCharacter)),
        ("{a:1}", JSONError(offset: 1, kind: .unexpectedCharacter)),
        ("{'a':1}", JSONError(offset: 1, kind: .unexpectedCharacter)),
        ("[", JSONError(offset: 1, kind: .unexpectedEnd)),
        ("{\"a\":", JSONError(offset: 5, kind: .unexpectedEnd)),
        ("\"abc", JSONError(offset: 4, kind: .unexpectedEnd)),
        ("tru", JSONError(offset: 3, kind: .unexpectedEnd)),
        ("trUe", JSONError(offset: 0, kind: .invalidLiteral)),
        ("\u{0B}1", JSONError(offset: 0, kind: .unexpectedCharacter)),
    ])
    func rejectsBadSyntax(_ text: String, _ expected: JSONError) {
        #expect(throws: expected) { try JSONParser.parse(text) }
    }

    @Test func limitsNestingDepth() throws {
        let ok = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        #expect(try JSONParser.parse(ok).arrayValue != nil)
        let tooDeep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        #expect(throws: JSONError(offset: 128, kind: .tooDeep)) { try JSONParser.parse(tooDeep) }
        let deepObjects = String(repeating: "{\"a\":", count: 129) + "1" + String(repeating: "}", count: 129)
        #expect(throws: JSONError.self) { try JSONParser.parse(deepObjects) }
        // A huge nesting attempt fails fast instead of overflowing the stack.
        #expect(throws: JSONError(offset: 128, kind: .tooDeep)) { try JSONParser.parse(String(repeating: "[", count: 100_000)) }
        #expect(throws: JSONError(offset: 2, kind: .tooDeep)) { try JSONParser.parse("[[[]]]", maxDepth: 2) }
    }

    @Test func errorDescribesReasonAndOffset() {
        let error = JSONError(offset: 7, kind: .duplicateKey)
        #expect(error.reason == "duplicate object key")
        #expect(error.description == "duplicate object key at byte 7")
    }
}
