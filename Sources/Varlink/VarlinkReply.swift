/// A reply as sent by a server: output parameters, or an error and its parameters.
public struct VarlinkReply: Sendable, Equatable {
    public var parameters: JSONObject
    /// More replies to the same call follow (only when the call had `more`).
    public var continues: Bool
    /// Fully qualified error name when the call failed.
    public var error: String?

    public init(parameters: JSONObject = JSONObject(), continues: Bool = false, error: String? = nil) {
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    /// The reply for a thrown error.
    public init(error: VarlinkError) {
        self.init(parameters: error.parameters, error: error.name)
    }

    /// Decodes a reply message. `parameters` may be missing or null. A malformed reply throws
    /// `org.varlink.service.InvalidParameter` naming the offending field (empty if the message
    /// is not an object).
    public init(from message: JSONValue) throws(VarlinkError) {
        guard case .object(let object) = message else { throw VarlinkError.invalidParameter("") }
        switch object["parameters"] {
        case nil, .null?: parameters = JSONObject()
        case .object(let p)?: parameters = p
        default: throw VarlinkError.invalidParameter("parameters")
        }
        switch object["continues"] {
        case nil, .null?: continues = false
        case .bool(let b)?: continues = b
        default: throw VarlinkError.invalidParameter("continues")
        }
        switch object["error"] {
        case nil, .null?: error = nil
        case .string(let name)?: error = name
        default: throw VarlinkError.invalidParameter("error")
        }
    }

    /// The error this reply carries, if any.
    public var varlinkError: VarlinkError? {
        error.map { VarlinkError(name: $0, parameters: parameters) }
    }

    /// The NUL-terminated reply message.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 128)
        write(to: &writer)
        writer.bytes.append(0)
        return writer.bytes
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if let error {
            writer.key("error")
            writer.string(error)
        }
        writer.key("parameters")
        writer.object(parameters)
        if continues {
            writer.key("continues")
            writer.bool(true)
        }
        writer.endObject()
    }
}

extension JSONWriter {
    /// Writes a reply's envelope, `{"parameters":{…}}` with `"continues":true` when more
    /// replies to the same call follow; `writeParameters` writes the members of the
    /// parameters object and nothing else. `continues` is read after the parameters are
    /// written, so a stream can decide it from how far the piece got.
    @inline(__always)
    public mutating func reply(continues: @autoclosure () -> Bool = false, _ writeParameters: (inout JSONWriter) -> Void) {
        beginObject()
        key(static: "parameters")
        beginObject()
        writeParameters(&self)
        endObject()
        if continues() {
            key(static: "continues")
            bool(true)
        }
        endObject()
    }
}
