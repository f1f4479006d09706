/// A strict JSON (RFC 8259) syntax check over UTF-8 bytes, with no tree and no allocation but
/// the nesting stack. userInfo and JSON restoration data are stored as text and written into
/// replies verbatim, so a stored value that is not well-formed JSON would break the reply for
/// everyone reading it: the store checks them at load instead of trusting them.
///
/// Iterative, so that deep nesting cannot overflow the stack; strings must be valid UTF-8
/// (no overlong forms, no surrogates), as clients decode them.
enum JSONCheck {
    /// Whether `text` is one JSON object, with nothing but whitespace around it.
    static func isObject(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        skipSpace(text, &i)
        guard i < text.count, text[i] == UInt8(ascii: "{") else { return false }
        return isValue(text)
    }

    /// Whether `text` is one JSON value, with nothing but whitespace around it.
    static func isValue(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        var open = Nesting()
        skipSpace(text, &i)
        while true {
            // A value.
            guard i < text.count else { return false }
            switch text[i] {
            case UInt8(ascii: "{"):
                i += 1
                skipSpace(text, &i)
                if i < text.count, text[i] == UInt8(ascii: "}") {
                    i += 1
                } else {
                    open.push(object: true)
                    guard member(text, &i) else { return false }
                    continue
                }
            case UInt8(ascii: "["):
                i += 1
                skipSpace(text, &i)
                if i < text.count, text[i] == UInt8(ascii: "]") {
                    i += 1
                } else {
                    open.push(object: false)
                    continue
                }
            case UInt8(ascii: "\""):
                guard string(text, &i) else { return false }
            case UInt8(ascii: "t"):
                guard literal("true", text, &i) else { return false }
            case UInt8(ascii: "f"):
                guard literal("false", text, &i) else { return false }
            case UInt8(ascii: "n"):
                guard literal("null", text, &i) else { return false }
            default:
                guard number(text, &i) else { return false }
            }
            // After a value: close what ends here, or go on to the next element or member.
            while true {
                skipSpace(text, &i)
                guard let inObject = open.innermost else {
                    return i == text.count
                }
                guard i < text.count else { return false }
                let c = text[i]
                if c == UInt8(ascii: ",") {
                    i += 1
                    skipSpace(text, &i)
                    if inObject { guard member(text, &i) else { return false } }
                    break
                }
                guard c == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                i += 1
                open.pop()
            }
        }
    }

    /// The open containers, innermost last (true for an object): the first 64 levels in a
    /// word, so that the usual value (an object a few levels deep) allocates nothing.
    private struct Nesting {
        private var bits: UInt64 = 0
        private var depth = 0
        private var deeper: [Bool] = []

        var innermost: Bool? {
            if depth == 0 { return nil }
            if depth > 64 { return deeper.last }
            return bits >> UInt64(depth - 1) & 1 == 1
        }

        mutating func push(object: Bool) {
            if depth >= 64 {
                deeper.append(object)
            } else if object {
                bits |= 1 << UInt64(depth)
            } else {
                bits &= ~(1 << UInt64(depth))
            }
            depth += 1
        }

        mutating func pop() {
            if depth > 64 { deeper.removeLast() }
            depth -= 1
        }
    }

    /// `"key" :` and the whitespace after it, leaving `i` at the member's value.
    private static func member(_ text: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        guard i < text.count, text[i] == UInt8(ascii: "\""), string(text, &i) else { return false }
        skipSpace(text, &i)
        guard i < text.count, text[i] == UInt8(ascii: ":") else { return false }
        i += 1
        skipSpace(text, &i)
        return true
    }

    private static func skipSpace(_ text: UnsafeBufferPointer<UInt8>, _ i: inout Int) {
        while i < text.count {
            switch text[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    private static func literal(_ word: StaticString, _ text: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        let n = word.utf8CodeUnitCount
        guard text.count - i >= n else { return false }
        for k in 0..<n where text[i + k] != word.utf8Start[k] { return false }
        i += n
        return true
    }

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    private static func number(_ text: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        func digits(_ i: inout Int) -> Int {
            let start = i
            while i < text.count, text[i] >= UInt8(ascii: "0"), text[i] <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }
        if i < text.count, text[i] == UInt8(ascii: "-") { i += 1 }
        guard i < text.count else { return false }
        if text[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            guard digits(&i) > 0 else { return false }
        }
        if i < text.count, text[i] == UInt8(ascii: ".") {
            i += 1
            guard digits(&i) > 0 else { return false }
        }
        if i < text.count, text[i] == UInt8(ascii: "e") || text[i] == UInt8(ascii: "E") {
            i += 1
            if i < text.count, text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&i) > 0 else { return false }
        }
        return true
    }

    /// A string from its opening quote; leaves `i` after the closing one.
    private static func string(_ text: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        i += 1
        while i < text.count {
            let c = text[i]
            switch c {
            case UInt8(ascii: "\""):
                i += 1
                return true
            case UInt8(ascii: "\\"):
                i += 1
                guard i < text.count else { return false }
                switch text[i] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 1
                case UInt8(ascii: "u"):
                    guard text.count - i >= 5 else { return false }
                    for k in 1...4 where !isHexDigit(text[i + k]) { return false }
                    i += 5
                default:
                    return false
                }
            case 0..<0x20:
                return false
            case 0x20..<0x80:
                i += 1
            default:
                guard let n = UTF8Check.sequenceLength(text, at: i) else { return false }
                i += n
            }
        }
        return false
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))
            || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F"))
    }
}

/// Well-formed UTF-8 (RFC 3629): what a text column or a stored string must hold before it
/// becomes a Swift String, which would otherwise replace damaged bytes silently.
enum UTF8Check {
    static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < bytes.count {
            if bytes[i] < 0x80 {
                i += 1
                continue
            }
            guard let n = sequenceLength(bytes, at: i) else { return false }
            i += n
        }
        return true
    }

    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        isValid(UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }

    /// The length of the multi-byte sequence starting at `i` (its lead byte ≥ 0x80), or nil
    /// when it is not well-formed.
    static func sequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> Int? {
        let lead = bytes[i]
        let n: Int
        // The second byte's range excludes overlong forms, surrogates and values past U+10FFFF.
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: n = 2
        case 0xE0: n = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: n = 3
        case 0xED: n = 3; high = 0x9F
        case 0xF0: n = 4; low = 0x90
        case 0xF1...0xF3: n = 4
        case 0xF4: n = 4; high = 0x8F
        default: return nil
        }
        guard bytes.count - i >= n else { return nil }
        guard bytes[i + 1] >= low, bytes[i + 1] <= high else { return nil }
        for k in 2..<n where bytes[i + k] & 0xC0 != 0x80 { return nil }
        return n
    }
}
