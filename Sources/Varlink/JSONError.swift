/// Why and where `JSONParser` rejected its input.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case unexpectedEnd = "unexpected end of input"
        case unexpectedCharacter = "unexpected character"
        case invalidLiteral = "invalid literal"
        case invalidNumber = "invalid number"
        case leadingZero = "leading zero in number"
        case numberOutOfRange = "number out of range"
        case controlCharacter = "unescaped control character in string"
        case invalidEscape = "invalid escape sequence"
        case loneSurrogate = "unpaired surrogate in \\u escape"
        case invalidUTF8 = "invalid UTF-8"
        case duplicateKey = "duplicate object key"
        case trailingCharacters = "trailing characters after the value"
        case tooDeep = "nesting too deep"
    }

    /// Byte offset into the input where the problem was detected.
    public let offset: Int
    public let kind: Kind

    public init(offset: Int, kind: Kind) {
        self.offset = offset
        self.kind = kind
    }

    /// A short human-readable reason.
    public var reason: String { kind.rawValue }

    public var description: String { "\(kind.rawValue) at byte \(offset)" }
}
