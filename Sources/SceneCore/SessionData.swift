/// A session's `userInfo`: a JSON object, kept as its serialized text. The core does not look
/// inside it; the socket layer checks that it is an object before it reaches the engine.
public struct UserInfo: Hashable, Sendable, CustomStringConvertible {
    public let json: String
    public init(json: String) { self.json = json }
    public static let empty = UserInfo(json: "{}")
    public var description: String { json }
}

/// A session's state-restoration data (`stateRestorationActivity`): what the scene last saved,
/// handed back in `willConnectTo` when the session reconnects (R11). Opaque to the core.
public enum RestorationData: Hashable, Sendable {
    /// A JSON value, kept as its serialized text.
    case json(String)
    /// Opaque bytes.
    case bytes([UInt8])

    public var byteCount: Int {
        switch self {
        case .json(let s): s.utf8.count
        case .bytes(let b): b.count
        }
    }
}

/// Saved payloads up to this many bytes stay in memory: reading them back would cost more than
/// holding them, and most sessions' userInfo (`{}`) is far smaller.
public let savedPayloadInlineLimit = 64

/// A session's userInfo or restoration data, either in memory or left in the store (SQLite),
/// which then holds the only copy and is read when a caller needs it. A daemon with a hundred
/// thousand sessions of 16 KiB of saved state holds their sizes, not their bytes.
public enum SavedPayload<Value: Hashable & Sendable>: Hashable, Sendable {
    case held(Value)
    /// In the store; `byteCount` is what the payload's size fields report.
    case stored(byteCount: Int)

    public var held: Value? {
        if case .held(let v) = self { v } else { nil }
    }

    public var isStored: Bool {
        if case .stored = self { true } else { false }
    }
}

extension SavedPayload where Value == UserInfo {
    public var byteCount: Int {
        switch self {
        case .held(let v): v.json.utf8.count
        case .stored(let n): n
        }
    }
}

extension SavedPayload where Value == RestorationData? {
    public var byteCount: Int {
        switch self {
        case .held(let v): v?.byteCount ?? 0
        case .stored(let n): n
        }
    }
}
