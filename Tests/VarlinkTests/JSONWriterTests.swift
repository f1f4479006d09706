import Testing
@testable import Varlink

@Suite struct JSONWriterTests {
    private func text(_ build: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        build(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test func insertsCommasAndColons() {
        let out = text { w in
            w.beginObject()
            w.key("a"); w.int(1)
            w.key("b"); w.beginArray(); w.bool(true); w.null(); w.string("x"); w.beginObject(); w.endObject(); w.beginArray(); w.endArray(); w.endArray()
            w.key("c"); w.beginObject(); w.key("d"); w.double(0.5); w.endObject()
            w.key("e"); w.uint(.max)
            w.endObject()
        }
        #expect(out == #"{"a":1,"b":[true,null,"x",{},[]],"c":{"d":0.5},"e":18446744073709551615}"#)
    }

    @Test func writesIntegersExactly() {
        #expect(text { $0.int(Int64.min) } == "-9223372036854775808")
        #expect(text { $0.int(Int64.max) } == "9223372036854775807")
        #expect(text { $0.int(0) } == "0")
        #expect(text { $0.int(-7) } == "-7")
        #expect(text { $0.int(1_000_000) } == "1000000")
        #expect(text { $0.uint(10) } == "10")
    }

    @Test func writesShortestRoundTripDoubles() throws {
        for value in [0.1, 1.0 / 3.0, 1e300, -2.5e-300, .leastNonzeroMagnitude, 1e16, 123456.789, -0.0] {
            let written = text { $0.double(value) }
            #expect(try JSONParser.parse(written) == .double(value), "\(written)")
        }
        #expect(text { $0.double(0.1) } == "0.1")
        #expect(text { $0.double(2) } == "2.0")
    }

    @Test func writesNonFiniteDoublesAsNull() {
        #expect(text { $0.double(.nan) } == "null")
        #expect(text { w in w.beginArray(); w.double(.infinity); w.double(-.infinity); w.endArray() } == "[null,null]")
    }

    @Test func escapesOnlyWhatJSONRequires() {
        #expect(text { $0.string("a\"b\\c/d") } == #""a\"b\\c/d""#)
        #expect(text { $0.string("\n\t\r\u{0}\u{1F}\u{7F}") } == #""\u000a\u0009\u000d\u0000\u001f"# + "\u{7F}\"")
        #expect(text { $0.string("é€😀\u{2028}") } == "\"é€😀\u{2028}\"")
        #expect(text { $0.key("k\"") } == #""k\"":"#)
        #expect(text { $0.string("") } == #""""#)
    }

    @Test func roundTripsEveryControlCharacter() throws {
        let all = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        let written = text { $0.string(all) }
        #expect(!written.utf8.contains { $0 < 0x20 })
        #expect(try JSONParser.parse(written) == .string(all))
    }

    @Test func serializesValuesAndRoundTrips() throws {
        let value: JSONValue = [
            "method": "io.example.Ping",
            "parameters": ["text": "hé\"llo\n", "n": -3, "f": 2.25, "list": [1, "two", nil_, false], "empty": [:]],
            "more": true,
        ]
        let bytes = value.serialized()
        #expect(String(decoding: bytes, as: UTF8.self) == value.serializedString())
        #expect(try JSONParser.parse(bytes) == value)
        #expect(value.description == value.serializedString())
        #expect(value.serializedString().hasPrefix(#"{"method":"io.example.Ping","parameters":{"text":"hé\"llo\u000a","n":-3"#))
    }

    @Test func reservesRequestedCapacity() {
        var writer = JSONWriter(reservingCapacity: 4096)  // var: reading `bytes` first moves the scratch area in
        #expect(writer.bytes.capacity >= 4096)
        #expect(writer.bytes.isEmpty)
    }

    /// Small writes gather in the writer's 256-byte scratch area and large ones go straight to
    /// the array: pieces of every size around those bounds, in any order, with `bytes` read and
    /// changed midway, must come out exactly in order.
    @Test func piecesOfEverySizeAroundTheScratchAreaComeOutInOrder() throws {
        var expected: [UInt8] = []
        var writer = JSONWriter()
        writer.beginArray()
        expected += Array("[".utf8)
        var rng = SystemRandomNumberGenerator()
        for i in 0..<2_000 {
            let length = [0, 1, 63, 64, 65, 66, 127, 255, 256, 257, 300, 1_000][i % 12] + Int.random(in: 0...2, using: &rng)
            let text = String(String(repeating: "abcdefghij", count: length / 10 + 1).prefix(length))
            if i > 0 { expected += Array(",".utf8) }
            switch i % 4 {
            case 0:
                writer.string(text); expected += Array("\"\(text)\"".utf8)
            case 1:
                writer.string(unescaped: text); expected += Array("\"\(text)\"".utf8)
            case 2:
                writer.int(Int64(i) * 1_000_003); expected += Array("\(Int64(i) * 1_000_003)".utf8)
            default:
                writer.beginObject(); writer.key(static: "k"); writer.raw("\"" + text + "\""); writer.endObject()
                expected += Array("{\"k\":\"\(text)\"}".utf8)
            }
            if i % 97 == 0 {
                // Reading midway sees everything so far; a change through `bytes` lands in order.
                #expect(writer.bytes == expected)
                writer.bytes.append(UInt8(ascii: " "))
                expected.append(UInt8(ascii: " "))
            }
        }
        writer.endArray()
        expected += Array("]".utf8)
        #expect(writer.bytes == expected)
        #expect(try JSONParser.parse(writer.bytes).arrayValue?.count == 2_000)
    }
}

/// `.null` spelled so it can sit in a literal array.
private let nil_ = JSONValue.null
