/// One `NAME=value` field of a journal entry.
public struct JournalField: Equatable, Hashable, Sendable, CustomStringConvertible {
    enum Value: Equatable, Hashable, Sendable {
        case text(String)
        case bytes([UInt8])
    }

    public let name: String
    let storage: Value

    /// A text field. Values may contain newlines; libsystemd then uses the binary encoding.
    public init(name: String, value: String) {
        self.name = name
        self.storage = .text(value)
    }

    /// A binary field (any bytes, including NUL).
    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.storage = .bytes(bytes)
    }

    /// The value as text (binary values decoded as UTF-8 with replacement characters).
    public var value: String {
        switch storage {
        case .text(let text): text
        case .bytes(let bytes): String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The value's bytes.
    public var bytes: [UInt8] {
        switch storage {
        case .text(let text): Array(text.utf8)
        case .bytes(let bytes): bytes
        }
    }

    var valueByteCount: Int {
        switch storage {
        case .text(let text): text.utf8.count
        case .bytes(let bytes): bytes.count
        }
    }

    public var description: String { "\(name)=\(value)" }

    /// Whether journald accepts `name` from a client: 1–64 characters of A–Z, 0–9 and `_`,
    /// not starting with `_` (reserved for trusted fields) or a digit. journald silently drops
    /// fields that break these rules, so `Journal.send` checks them up front.
    public static func isValidName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard let first = utf8.first, utf8.count <= 64, first != UInt8(ascii: "_") else { return false }
        if first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") { return false }
        return utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_")
        }
    }
}

extension JournalField {
    /// `MESSAGE=`: the human-readable line.
    public static func message(_ text: String) -> JournalField { JournalField(name: "MESSAGE", value: text) }

    /// `PRIORITY=`: syslog level as a decimal digit.
    public static func priority(_ priority: Journal.Priority) -> JournalField {
        JournalField(name: "PRIORITY", value: String(priority.rawValue))
    }

    /// `SYSLOG_IDENTIFIER=`: the program name journalctl shows.
    public static func syslogIdentifier(_ identifier: String) -> JournalField {
        JournalField(name: "SYSLOG_IDENTIFIER", value: identifier)
    }

    /// `ERRNO=`: a positive errno in decimal.
    public static func errno(_ value: Int32) -> JournalField { JournalField(name: "ERRNO", value: String(value)) }

    /// `MESSAGE_ID=`: 32 lowercase hex digits identifying the kind of message (catalog key).
    public static func messageID(_ id: String) -> JournalField { JournalField(name: "MESSAGE_ID", value: id) }

    /// `CODE_FILE=`, `CODE_LINE=`, `CODE_FUNC=` for the caller. libsystemd's C macro adds
    /// these itself, but Swift can't use the macro, so callers pass their location.
    public static func codeLocation(
        file: String = #fileID, line: Int = #line, function: String = #function
    ) -> [JournalField] {
        [
            JournalField(name: "CODE_FILE", value: file),
            JournalField(name: "CODE_LINE", value: String(line)),
            JournalField(name: "CODE_FUNC", value: function),
        ]
    }
}
