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
