/// Streaming JSON writer for hot paths: appends UTF-8 straight into `bytes` and inserts
/// commas itself. The caller is responsible for balanced begin/end calls and for calling
/// `key(_:)` before each value inside an object.
///
/// Small writes (keys, punctuation, numbers) gather in a 256-byte scratch area inside the
/// writer and reach the array in one append when it fills or when `bytes` is read: an append
/// to an array checks its capacity and uniqueness and calls memmove, which for a reply of many
/// small pieces would cost more than writing them.
public struct JSONWriter: Sendable {
    private var storage: [UInt8]
    private var scratch = Scratch()
    /// Bytes in `scratch` not yet in `storage`.
    private var pending = 0
    /// Whether the next key or value must be preceded by a comma.
    private var needsComma = false

    /// Everything written so far. Reading or changing it first moves the scratch area's bytes
    /// into the array; assigning it replaces everything written.
    public var bytes: [UInt8] {
        mutating get {
            flush()
            return storage
        }
        set {
            storage = newValue
            pending = 0
        }
        _modify {
            flush()
            yield &storage
        }
    }

    public init(reservingCapacity capacity: Int = 256) {
        storage = []
        storage.reserveCapacity(capacity)
    }

    /// 256 bytes, inline.
    private struct Scratch: Sendable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                    UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                    UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                    UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
            = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        static let size = 256
    }

    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        if pending == Scratch.size { flush() }
        let at = pending
        withUnsafeMutableBytes(of: &scratch.words) { $0[at] = byte }
        pending = at + 1
    }

    @inline(__always)
    private mutating func put(_ source: UnsafeRawBufferPointer) {
        let n = source.count
        guard n > 0 else { return }
        if n > Scratch.size / 4 {
            // Large pieces (payloads, long strings) go straight to the array, in order.
            flush()
            storage.append(contentsOf: source)
            return
        }
        if pending + n > Scratch.size { flush() }
        let at = pending
        withUnsafeMutableBytes(of: &scratch.words) { ($0.baseAddress! + at).copyMemory(from: source.baseAddress!, byteCount: n) }
        pending = at + n
    }

    @inline(__always)
    private mutating func put(_ source: UnsafeBufferPointer<UInt8>) {
        put(UnsafeRawBufferPointer(source))
    }

    private mutating func flush() {
        guard pending > 0 else { return }
        let n = pending
        pending = 0
        let words = scratch.words
        withUnsafeBytes(of: words) { storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }

    public mutating func beginObject() {
        separate()
        put(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        put(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        put(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        put(UInt8(ascii: "]"))
        needsComma = true
    }

    public mutating func key(_ key: String) {
        separate()
        appendQuoted(key)
        put(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A key known at compile time to need no escaping (ASCII letters, digits, `_`): copied as
    /// is, the hot path of replies built field by field.
    public mutating func key(static key: StaticString) {
        // Piece by piece into the scratch area, which makes that as cheap as one copy: most of a
        // reply is keys.
        separate()
        put(UInt8(ascii: "\""))
        appendASCII(key)
        put(UInt8(ascii: "\""))
        put(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A value known at compile time to need no escaping (enum names and the like).
    public mutating func string(static value: StaticString) {
        separate()
        put(UInt8(ascii: "\""))
        appendASCII(value)
        put(UInt8(ascii: "\""))
        needsComma = true
    }

    /// A string the caller has validated to contain no `"`, `\\` or control characters (e.g.
    /// a reverse-DNS identifier): copied without scanning.
    public mutating func string(unescaped value: String) {
        separate()
        put(UInt8(ascii: "\""))
        var copy = value
        copy.withUTF8 { put($0) }
        put(UInt8(ascii: "\""))
        needsComma = true
    }

    /// `"<prefix><decimal>"`, e.g. `"s42"` for a session identifier, without building a String.
    public mutating func string(prefix: UInt8, decimal value: UInt64) {
        separate()
        put(UInt8(ascii: "\""))
        put(prefix)
        appendDecimal(value)
        put(UInt8(ascii: "\""))
        needsComma = true
    }

    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    public mutating func int(_ value: Int64) {
        separate()
        if value < 0 { put(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude)
        needsComma = true
    }

    public mutating func int(_ value: Int) {
        int(Int64(value))
    }

    /// Appends `json`, which the caller guarantees is one complete, valid JSON value (e.g. text
    /// this library serialized earlier and that was stored as is).
    public mutating func raw(_ json: String) {
        separate()
        var text = json
        text.withUTF8 { put($0) }
        needsComma = true
    }

    /// Appends `json`, which the caller guarantees is one complete, valid JSON value, as the
    /// next value: for values made in one go elsewhere (a listing's sessions).
    public mutating func element(_ json: UnsafeBufferPointer<UInt8>) {
        separate()
        put(json)
        needsComma = true
    }

    public mutating func uint(_ value: UInt64) {
        separate()
        appendDecimal(value)
        needsComma = true
    }

    /// Writes the shortest text that reads back as the same double. JSON cannot express NaN or
    /// infinity; they are written as `null` (as JavaScript does) so the output stays valid.
    public mutating func double(_ value: Double) {
        guard value.isFinite else {
            null()
            return
        }
        separate()
        var text = value.description
        text.withUTF8 { put($0) }
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        appendASCII(value ? "true" : "false")
        needsComma = true
    }

    public mutating func null() {
        separate()
        appendASCII("null")
        needsComma = true
    }

    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let members):
            object(members)
        }
    }

    public mutating func object(_ object: JSONObject) {
        beginObject()
        // Index the storage directly: iterating the sequence would copy (retain) each pair.
        let members = object.members
        for i in members.indices {
            key(members[i].key)
            value(members[i].value)
        }
        endObject()
    }

    private mutating func appendASCII(_ text: StaticString) {
        put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    private mutating func separate() {
        if needsComma { put(UInt8(ascii: ",")) }
    }

    private mutating func appendDecimal(_ value: UInt64) {
        if value < 10 {
            put(UInt8(ascii: "0") + UInt8(value))
            return
        }
        // 20 digits hold UInt64.max; fill right to left, then copy the used tail once.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var i = 24
            var rest = value
            repeat {
                i -= 1
                buffer[i] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest != 0
            put(UnsafeRawBufferPointer(rebasing: buffer[i...]))
        }
    }

    private mutating func appendQuoted(_ string: String) {
        put(UInt8(ascii: "\""))
        // Native strings (small ones included) expose their UTF-8 directly; only a bridged
        // string would need the copying fallback.
        if string.utf8.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            var copy = string
            copy.withUTF8 { appendEscaped($0) }
        }
        put(UInt8(ascii: "\""))
    }

    /// Copies runs of bytes that need no escaping in one go. Swift strings are valid UTF-8, so
    /// only '"', '\\' and C0 controls need attention; '/' and non-ASCII pass through.
    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var i = 0
        while i < utf8.count {
            let byte = utf8[i]
            if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                i += 1
                continue
            }
            if runStart < i { put(UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                put(UInt8(ascii: "\\"))
                put(byte)
            default:
                // Only C0 controls get here, so the high nibble is 0 or 1.
                let low = byte & 0xF
                appendASCII("\\u00")
                put(UInt8(ascii: "0") + (byte >> 4))
                put(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
            }
            i += 1
            runStart = i
        }
        if runStart < utf8.count { put(UnsafeBufferPointer(rebasing: utf8[runStart...])) }
    }
}

extension JSONValue {
    /// Compact UTF-8 JSON text.
    public func serialized() -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 128)
        writer.value(self)
        return writer.bytes
    }

    /// Compact JSON text.
    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }
}
