// fuzz-modules: Varlink
// The JSON parser: whatever it accepts is valid UTF-8, writes back out as JSON that parses to
// the same value, and parses the same from a String as from bytes.
import Varlink

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    let value: JSONValue
    do {
        value = try JSONParser.parse(bytes)
    } catch {
        require(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside the input")
        return 0
    }
    // The parser promises to reject invalid UTF-8 anywhere in the document.
    guard let text = String(validating: bytes, as: UTF8.self) else {
        require(false, "accepted invalid UTF-8")
        return 0
    }
    require((try? JSONParser.parse(text)) == value, "String and byte parses differ")

    var writer = JSONWriter()
    writer.value(value)
    let written = writer.bytes
    do {
        let reparsed = try JSONParser.parse(written)
        require(reparsed == value, "round trip changed the value: \(String(decoding: written, as: UTF8.self))")
        // Writing is deterministic: the same value gives the same bytes.
        var again = JSONWriter()
        again.value(reparsed)
        require(again.bytes == written, "writing the reparsed value gave other bytes")
    } catch {
        require(false, "writer output does not parse (\(error)): \(String(decoding: written, as: UTF8.self))")
    }
    return 0
}
