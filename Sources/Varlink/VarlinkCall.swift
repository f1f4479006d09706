/// A method call as sent by a client.
public struct VarlinkCall: Sendable, Equatable {
    /// Fully qualified: `interface.Method`.
    public var method: String
    public var parameters: JSONObject
    /// The server must not reply.
    public var oneway: Bool
    /// The client accepts several replies (`continues`).
    public var more: Bool
    /// The connection leaves Varlink after the reply.
    public var upgrade: Bool

    public init(method: String, parameters: JSONObject = JSONObject(), oneway: Bool = false, more: Bool = false, upgrade: Bool = false) {
        self.method = method
        self.parameters = parameters
        self.oneway = oneway
        self.more = more
        self.upgrade = upgrade
    }

    /// Decodes a call message. Malformed calls throw `org.varlink.service.InvalidParameter`
    /// naming the offending call field (`method`, `parameters`, `oneway`, `more`, `upgrade`),
    /// or an empty name when the message is not an object. Unknown top-level keys are ignored.
    public init(from message: JSONValue) throws(VarlinkError) {
        switch Self.decode(message) {
        case .success(let call):
            self = call
        case .failure(let violation):
            throw VarlinkError.invalidParameter(violation.field)
        }
    }

    /// Decodes a call message, classifying failures as protocol violations.
    public static func decode(_ message: JSONValue) -> Result<VarlinkCall, ProtocolViolation> {
        guard case .object(let object) = message else {
            return .failure(ProtocolViolation(reason: .notAnObject, message: "message is not a JSON object"))
        }
        // One pass over the members; the checks below then run in a fixed order.
        var methodValue: JSONValue?
        var parametersValue = JSONValue.null
        var oneway = JSONValue.null
        var more = JSONValue.null
        var upgrade = JSONValue.null
        for (key, value) in object {
            switch key {
            case "method": methodValue = value
            case "parameters": parametersValue = value
            case "oneway": oneway = value
            case "more": more = value
            case "upgrade": upgrade = value
            default: continue
            }
        }
        guard let methodValue else {
            return .failure(ProtocolViolation(reason: .missingMethod, message: "message has no 'method'", field: "method"))
        }
        guard case .string(let method) = methodValue, VarlinkNames.isValidQualifiedMember(method) else {
            return .failure(ProtocolViolation(
                reason: .invalidMethod, message: "'method' must be a string of the form 'reverse.domain.interface.Method'", field: "method"))
        }
        var call = VarlinkCall(method: method)
        switch parametersValue {
        case .null: break
        case .object(let parameters): call.parameters = parameters
        default: return .failure(ProtocolViolation(reason: .invalidParameters, message: "'parameters' must be an object", field: "parameters"))
        }
        do throws(ProtocolViolation) {
            call.oneway = try flag(oneway, "oneway")
            call.more = try flag(more, "more")
            call.upgrade = try flag(upgrade, "upgrade")
        } catch {
            return .failure(error)
        }
        return .success(call)
    }

    private static func flag(_ value: JSONValue, _ name: String) throws(ProtocolViolation) -> Bool {
        switch value {
        case .null: return false
        case .bool(let set): return set
        default: throw ProtocolViolation(reason: .invalidFlag, message: "'\(name)' must be a boolean", field: name)
        }
    }

    /// The interface part of `method` (before the last dot).
    public var interfaceName: Substring {
        guard let dot = method.utf8.lastIndex(of: UInt8(ascii: ".")) else { return method[...] }
        return method[..<dot]
    }

    /// The member part of `method` (after the last dot).
    public var methodName: Substring {
        guard let dot = method.utf8.lastIndex(of: UInt8(ascii: ".")) else { return method[...] }
        return method[method.utf8.index(after: dot)...]
    }

    /// The NUL-terminated call message. False flags are omitted; `parameters` is always sent
    /// because some older servers require it.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 64 + method.utf8.count)
        writer.beginObject()
        writer.key("method")
        writer.string(method)
        writer.key("parameters")
        writer.object(parameters)
        if oneway { writer.key("oneway"); writer.bool(true) }
        if more { writer.key("more"); writer.bool(true) }
        if upgrade { writer.key("upgrade"); writer.bool(true) }
        writer.endObject()
        writer.bytes.append(0)
        return writer.bytes
    }
}
