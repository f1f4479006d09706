/// An app's reverse-DNS identifier, e.g. `com.example.mail`.
public struct AppID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: String

    /// Validates reverse-DNS form: at least two dot-separated labels of letters, digits, `-` and `_`,
    /// the first starting with a letter; at most 255 bytes.
    public init?(_ string: String) {
        guard AppID.isValid(string) else { return nil }
        rawValue = string
    }

    public static func isValid(_ s: String) -> Bool {
        let bytes = s.utf8
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        var labels = 0
        var labelLength = 0
        var first = true
        for b in bytes {
            if b == UInt8(ascii: ".") {
                if labelLength == 0 { return false }
                labels += 1
                labelLength = 0
                continue
            }
            let isLetter = (b >= 65 && b <= 90) || (b >= 97 && b <= 122)
            let isDigit = b >= 48 && b <= 57
            guard isLetter || isDigit || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") else { return false }
            if first && !isLetter { return false }
            first = false
            labelLength += 1
            if labelLength > 63 { return false }
        }
        if labelLength == 0 { return false }
        labels += 1
        return labels >= 2
    }

    public static func < (a: AppID, b: AppID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { rawValue }
}

/// A scene session's persistent identifier. Allocated from a counter whose high-water mark is
/// persisted, so an identifier is never reused (R15). Printed as `s<number>`, e.g. `s42`.
public struct SessionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    @inlinable public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Parses `s42`; the bare number `42` is accepted too, as loginctl accepts session numbers.
    public init?(parsing text: String) {
        guard let n = parseNumber(text, prefix: UInt8(ascii: "s")) else { return nil }
        rawValue = n
    }

    @inlinable public static func < (a: SessionID, b: SessionID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "s\(rawValue)" }
}

/// A background task's token, returned by begin and passed to end. Printed as `t<number>`.
public struct TaskToken: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    @inlinable public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public init?(parsing text: String) {
        guard let n = parseNumber(text, prefix: UInt8(ascii: "t")) else { return nil }
        rawValue = n
    }

    @inlinable public static func < (a: TaskToken, b: TaskToken) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "t\(rawValue)" }
}

/// `<prefix>?<digits>` with a positive value that fits UInt64, read from the UTF-8 bytes
/// (Character-level checks would segment graphemes: this runs on every call).
func parseNumber(_ text: String, prefix: UInt8) -> UInt64? {
    var value: UInt64 = 0
    var digits = 0
    var first = true
    for byte in text.utf8 {
        if first {
            first = false
            if byte == prefix { continue }
        }
        guard byte >= 48 && byte <= 57, digits < 20 else { return nil }
        // "s01" is not s1: a typo must not reach another session.
        if digits == 0 && byte == 48 { return nil }
        let (times, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times.addingReportingOverflow(UInt64(byte - 48))
        guard !o1, !o2 else { return nil }
        value = sum
        digits += 1
    }
    guard digits > 0, value > 0 else { return nil }
    return value
}
