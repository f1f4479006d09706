import SceneCore
import Varlink

/// Typed access to a call's parameters. Types, presence and unknown names were already checked
/// against the interface text; what remains is the meaning of the values.
struct CallParameters {
    let object: JSONObject

    func has(_ name: String) -> Bool {
        if let v = object[name], v != .null { return true }
        return false
    }

    func string(_ name: String) -> String? { object[name]?.stringValue }

    func bool(_ name: String) -> Bool? { object[name]?.boolValue }

    func session(_ name: String = "session") throws(VarlinkError) -> SessionID {
        guard let text = string(name), let id = SessionID(parsing: text) else { throw .invalidParameter(name) }
        return id
    }

    func optionalSession(_ name: String) throws(VarlinkError) -> SessionID? {
        guard has(name) else { return nil }
        return try session(name)
    }

    func app(_ name: String = "app") throws(VarlinkError) -> AppID {
        guard let text = string(name), let id = AppID(text) else { throw .invalidParameter(name) }
        return id
    }

    func optionalApp(_ name: String) throws(VarlinkError) -> AppID? {
        guard has(name) else { return nil }
        return try app(name)
    }

    /// A list of app ids; nil when absent.
    func appList(_ name: String) throws(VarlinkError) -> [AppID]? {
        guard case .array(let list)? = object[name] else { return nil }
        var ids: [AppID] = []
        for item in list {
            guard let text = item.stringValue, let id = AppID(text) else { throw .invalidParameter(name) }
            ids.append(id)
        }
        return ids
    }

    func task(_ name: String = "token") throws(VarlinkError) -> TaskToken {
        guard let text = string(name), let token = TaskToken(parsing: text) else { throw .invalidParameter(name) }
        return token
    }

    /// A non-negative integer.
    func count(_ name: String) throws(VarlinkError) -> UInt64? {
        guard has(name) else { return nil }
        guard let v = object[name]?.intValue, v >= 0 else { throw .invalidParameter(name) }
        return UInt64(v)
    }

    func count32(_ name: String) throws(VarlinkError) -> UInt32? {
        guard let v = try count(name) else { return nil }
        guard v <= UInt64(UInt32.max) else { throw .invalidParameter(name) }
        return UInt32(v)
    }

    func enumValue<T>(_ name: String, _ parse: (String) -> T?) throws(VarlinkError) -> T? {
        guard has(name) else { return nil }
        guard let text = string(name), let value = parse(text) else { throw .invalidParameter(name) }
        return value
    }

    /// A JSON object kept as its serialized text (userInfo).
    func objectText(_ name: String) throws(VarlinkError) -> String? {
        guard has(name) else { return nil }
        guard case .object? = object[name] else { throw .invalidParameter(name) }
        return object[name]!.serializedString()
    }

    /// RestorationData: exactly one of `json` (a JSON object, like NSUserActivity's userInfo)
    /// or `base64`.
    func restoration(_ name: String) throws(VarlinkError) -> RestorationData? {
        guard has(name), let value = object[name] else { return nil }
        return try Self.restoration(value, name)
    }

    /// A map of session ids to RestorationData (io.scened.App's `restorations`), in the
    /// message's order; nil when absent. A bad entry is named in the error when its key is short.
    func restorations(_ name: String) throws(VarlinkError) -> [(session: SessionID, data: RestorationData)]? {
        guard has(name) else { return nil }
        guard case .object(let map)? = object[name] else { throw .invalidParameter(name) }
        var entries: [(session: SessionID, data: RestorationData)] = []
        entries.reserveCapacity(map.count)
        for (key, value) in map {
            let entry = key.utf8.count <= 32 ? "\(name).\(key)" : name
            guard let id = SessionID(parsing: key) else { throw .invalidParameter(entry) }
            entries.append((id, try Self.restoration(value, entry)))
        }
        return entries
    }

    private static func restoration(_ value: JSONValue, _ name: String) throws(VarlinkError) -> RestorationData {
        guard case .object(let r) = value else { throw .invalidParameter(name) }
        let json = r["json"].flatMap { $0 == .null ? nil : $0 }
        let base64 = r["base64"].flatMap { $0 == .null ? nil : $0 }
        switch (json, base64) {
        case (let value?, nil):
            guard case .object = value else { throw .invalidParameter(name) }
            return .json(value.serializedString())
        case (nil, .string(let text)?):
            guard let bytes = Base64.decode(text) else { throw .invalidParameter(name) }
            return .bytes(bytes)
        default:
            throw .invalidParameter(name)
        }
    }
}
