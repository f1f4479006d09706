/// A Varlink error reply: a fully qualified error name plus its parameters.
/// Thrown by handlers and by `VarlinkClient` when the server answers with an error.
public struct VarlinkError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var parameters: JSONObject

    public init(name: String, parameters: JSONObject = JSONObject()) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        parameters.isEmpty ? name : "\(name) \(parameters)"
    }

    static let servicePrefix = "org.varlink.service."

    public static func interfaceNotFound(_ interface: String) -> VarlinkError {
        VarlinkError(name: servicePrefix + "InterfaceNotFound", parameters: ["interface": .string(interface)])
    }

    public static func methodNotFound(_ method: String) -> VarlinkError {
        VarlinkError(name: servicePrefix + "MethodNotFound", parameters: ["method": .string(method)])
    }

    public static func methodNotImplemented(_ method: String) -> VarlinkError {
        VarlinkError(name: servicePrefix + "MethodNotImplemented", parameters: ["method": .string(method)])
    }

    public static func invalidParameter(_ parameter: String) -> VarlinkError {
        VarlinkError(name: servicePrefix + "InvalidParameter", parameters: ["parameter": .string(parameter)])
    }

    public static func permissionDenied() -> VarlinkError {
        VarlinkError(name: servicePrefix + "PermissionDenied")
    }

    public static func expectedMore() -> VarlinkError {
        VarlinkError(name: servicePrefix + "ExpectedMore")
    }

    /// The NUL-terminated error reply message.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 64 + name.utf8.count)
        write(to: &writer)
        writer.bytes.append(0)
        return writer.bytes
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("error")
        writer.string(name)
        writer.key("parameters")
        writer.object(parameters)
        writer.endObject()
    }
}
