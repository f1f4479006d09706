/// A token of the interface definition language.
struct IDLToken {
    enum Kind: Equatable {
        case word(String)
        case openParen, closeParen, comma, colon, question, arrow
        /// `[]`
        case arrayPrefix
        /// `[string]`
        case mapPrefix
        case end
    }

    let kind: Kind
    let line: Int
    let column: Int
    /// The comment lines directly above the token (no blank line in between), '#' removed.
    let documentation: String
}

/// Splits IDL text into tokens, collecting doc comments on the way.
struct IDLLexer {
    private let text: [UInt8]
    private var pos = 0
    private var line = 1
    private var lineStart = 0
    /// A token was already seen on this line, so a comment here trails code and documents nothing.
    private var lineHasToken = false
    private var docLines: [String] = []
    private var docLastLine = 0

    init(_ text: String) {
        self.text = Array(text.utf8)
    }

    mutating func next() throws(IDLError) -> IDLToken {
        skipWhitespaceAndComments()
        let column = pos - lineStart + 1
        let documentation = !docLines.isEmpty && docLastLine == line - 1 ? docLines.joined(separator: "\n") : ""
        docLines.removeAll()
        lineHasToken = true

        func token(_ kind: IDLToken.Kind, length: Int) -> IDLToken {
            pos += length
            return IDLToken(kind: kind, line: line, column: column, documentation: documentation)
        }

        guard pos < text.count else { return token(.end, length: 0) }
        let byte = text[pos]
        switch byte {
        case UInt8(ascii: "("): return token(.openParen, length: 1)
        case UInt8(ascii: ")"): return token(.closeParen, length: 1)
        case UInt8(ascii: ","): return token(.comma, length: 1)
        case UInt8(ascii: ":"): return token(.colon, length: 1)
        case UInt8(ascii: "?"): return token(.question, length: 1)
        case UInt8(ascii: "-") where peek(1) == UInt8(ascii: ">"):
            return token(.arrow, length: 2)
        case UInt8(ascii: "["):
            if peek(1) == UInt8(ascii: "]") { return token(.arrayPrefix, length: 2) }
            if matches("[string]") { return token(.mapPrefix, length: 8) }
            throw IDLError(line: line, column: column, message: "expected '[]' or '[string]'")
        default:
            guard Self.isWordByte(byte), byte != UInt8(ascii: "-"), byte != UInt8(ascii: ".") else {
                let shown = byte < 0x80 && byte >= 0x20 ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
                throw IDLError(line: line, column: column, message: "unexpected character \(shown)")
            }
            var end = pos
            while end < text.count, Self.isWordByte(text[end]) {
                // A '-' that starts '->' ends the word.
                if text[end] == UInt8(ascii: "-"), end + 1 < text.count, text[end + 1] == UInt8(ascii: ">") { break }
                end += 1
            }
            let word = String(decoding: text[pos..<end], as: UTF8.self)
            return token(.word(word), length: end - pos)
        }
    }

    private mutating func skipWhitespaceAndComments() {
        while pos < text.count {
            switch text[pos] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                pos += 1
            case UInt8(ascii: "\n"):
                pos += 1
                line += 1
                lineStart = pos
                lineHasToken = false
            case UInt8(ascii: "#"):
                let start = pos + 1
                while pos < text.count, text[pos] != UInt8(ascii: "\n") { pos += 1 }
                var body = text[start..<pos]
                if body.last == UInt8(ascii: "\r") { body = body.dropLast() }
                if body.first == UInt8(ascii: " ") { body = body.dropFirst() }
                if lineHasToken {
                    docLines.removeAll()
                } else {
                    if docLastLine != line - 1 { docLines.removeAll() }
                    docLines.append(String(decoding: body, as: UTF8.self))
                    docLastLine = line
                }
            default:
                return
            }
        }
    }

    private func peek(_ offset: Int) -> UInt8? {
        pos + offset < text.count ? text[pos + offset] : nil
    }

    private func matches(_ literal: String) -> Bool {
        let bytes = Array(literal.utf8)
        return pos + bytes.count <= text.count && text[pos..<pos + bytes.count].elementsEqual(bytes)
    }

    /// Bytes of names: interface names need '.' and '-', field names '_'.
    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
