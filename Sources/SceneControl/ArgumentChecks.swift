import SceneCore
import Varlink

/// Local checks of argument values, before anything is sent: a malformed value is a usage
/// error (exit 2), not a trip to the daemon. Ids are sent in their canonical form.
enum Check {
    /// "s42" (or "42", as loginctl takes session numbers) → "s42".
    static func session(_ text: String) throws(ControlError) -> String {
        guard let id = SessionID(parsing: text) else {
            throw .usage("'\(text)' is not a session id (s<number>, e.g. s42)")
        }
        return id.description
    }

    static func app(_ text: String) throws(ControlError) -> String {
        guard AppID.isValid(text) else {
            throw .usage("'\(text)' is not an app id (reverse-DNS, e.g. com.example.mail)")
        }
        return text
    }

    static func token(_ text: String) throws(ControlError) -> String {
        guard let token = TaskToken(parsing: text) else {
            throw .usage("'\(text)' is not a task token (t<number>, e.g. t3)")
        }
        return token.description
    }

    /// "i3" (or "3", as task tokens are taken) → "i3", as BeginInterruption gives them out.
    static func interruption(_ text: String) throws(ControlError) -> String {
        let digits = text.first == "i" ? text.dropFirst() : text[...]
        guard let number = UInt64(digits), number > 0, String(number) == digits else {
            throw .usage("'\(text)' is not an interruption token (i<number>, e.g. i3)")
        }
        return "i\(number)"
    }

    /// An interruption's reason: what the daemon accepts.
    static func reason(_ text: String) throws(ControlError) -> String {
        guard !text.isEmpty, text.utf8.count <= InterruptCommand.maxReasonBytes else {
            throw .usage("invalid --reason; it must be 1 to \(InterruptCommand.maxReasonBytes) bytes")
        }
        return text
    }

    /// One of `allowed`, for enum-valued options.
    static func oneOf(_ text: String, _ allowed: [String], option: String) throws(ControlError) -> String {
        guard allowed.contains(text) else {
            throw .usage("invalid \(option) '\(text)'; expected one of: \(allowed.joined(separator: ", "))")
        }
        return text
    }

    static let sceneStates = SceneActivationState.allCases.map(\.name)
    /// Discarded sessions are gone, so only these two can be listed.
    static let listableConditions = [SessionCondition.live.name, SessionCondition.archived.name]
    static let roles = SessionRole.allCases.map(\.name)

    static func count(_ text: String, option: String, max: Int64 = .max) throws(ControlError) -> Int64 {
        guard let value = Int64(text), value >= 0 else {
            throw .usage("invalid \(option) '\(text)'; expected a non-negative integer")
        }
        guard value <= max else { throw .usage("invalid \(option) '\(text)'; the largest is \(max)") }
        return value
    }

    /// Bytes, with an optional 1024-based suffix: 52428800, 50M, 1.5G.
    static func size(_ text: String, option: String, max: UInt64 = UInt64(Int64.max)) throws(ControlError) -> Int64 {
        guard let bytes = ByteSize.parse(text) else {
            throw .usage("invalid \(option) '\(text)'; expected bytes, e.g. 52428800, 512K, 50M, 1.5G")
        }
        guard bytes <= max else {
            throw .usage("invalid \(option) '\(text)'; the largest is \(ByteSize.format(max)) (\(max) bytes)")
        }
        return Int64(bytes)
    }

    /// A scene's or an app's footprint: what the daemon accepts (at most 1T).
    static func footprint(_ text: String) throws(ControlError) -> Int64 {
        try size(text, option: "footprint", max: SceneSession.maxFootprint)
    }

    static func configurationName(_ text: String) throws(ControlError) -> String {
        let limit = LifecycleEngine.maxConfigurationNameBytes
        guard !text.isEmpty, text.utf8.count <= limit else {
            throw .usage("invalid configuration name '\(text)'; it must be 1 to \(limit) bytes")
        }
        return text
    }

    static func boolean(_ text: String, option: String) throws(ControlError) -> Bool {
        switch text {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: throw .usage("invalid \(option) '\(text)'; expected yes or no")
        }
    }

    static func jsonObject(_ text: String, option: String) throws(ControlError) -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONParser.parse(text)
        } catch {
            throw .usage("\(option) is not valid JSON: \(error)")
        }
        guard case .object(let object) = value else { throw .usage("\(option) must be a JSON object ({...})") }
        return object
    }

    /// RFC 4648 base64 with padding, checked for shape only (the daemon decodes it).
    static func base64(_ text: String, option: String) throws(ControlError) -> String {
        let body = text.utf8.prefix { $0 != UInt8(ascii: "=") }
        let padding = text.utf8.count - body.count
        let valid = text.utf8.count % 4 == 0 && padding <= 2
            && text.utf8.dropFirst(body.count).allSatisfy { $0 == UInt8(ascii: "=") }
            && body.allSatisfy { byte in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
            }
        guard valid else { throw .usage("\(option) is not base64 (RFC 4648, padded)") }
        return text
    }
}

/// Reading reply parameters without ceremony; a missing or mistyped field reads as nil.
extension JSONObject {
    func text(_ key: String) -> String? { self[key]?.stringValue }
    func integer(_ key: String) -> Int64? { self[key]?.intValue }
    func flag(_ key: String) -> Bool? { self[key]?.boolValue }
    func object(_ key: String) -> JSONObject? { self[key]?.objectValue }
    func objects(_ key: String) -> [JSONObject] { self[key]?.arrayValue?.compactMap(\.objectValue) ?? [] }
}
