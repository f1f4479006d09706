import CSystemd
import Glibc

/// A received D-Bus message (a signal or a method reply) and a reader over its body.
///
/// It holds its own reference to the sd-bus message, so it may outlive the callback that
/// delivered it; like the bus, it is loop-thread-only. Reading is sequential, as in sd-bus:
/// each read advances past the value read; `rewind()` starts over. Reads of the wrong type
/// throw (`ENXIO` from sd-bus) and leave the position where it was.
public final class BusMessage {
    let message: OpaquePointer

    init(retaining message: OpaquePointer) {
        self.message = message
        sd_bus_message_ref(message)
    }

    deinit { sd_bus_message_unref(message) }

    public var sender: String? { sd_bus_message_get_sender(message).map { String(cString: $0) } }
    public var path: String? { sd_bus_message_get_path(message).map { String(cString: $0) } }
    public var interface: String? { sd_bus_message_get_interface(message).map { String(cString: $0) } }
    public var member: String? { sd_bus_message_get_member(message).map { String(cString: $0) } }
    /// The body's signature, e.g. `"sa{sv}as"`.
    public var signature: String { sd_bus_message_get_signature(message, 1).map { String(cString: $0) } ?? "" }

    /// The error an error reply carries; nil for any other message.
    public var error: BusError? {
        sd_bus_message_is_method_error(message, nil) > 0 ? BusError(sd_bus_message_get_error(message)) : nil
    }

    // MARK: - Basic values

    public func readString() throws(SystemdError) -> String { try readText("s") }
    public func readObjectPath() throws(SystemdError) -> String { try readText("o") }
    public func readSignature() throws(SystemdError) -> String { try readText("g") }

    public func readBool() throws(SystemdError) -> Bool {
        // sd-bus stores a D-Bus boolean in an int.
        var value: Int32 = 0
        try read("b", &value)
        return value != 0
    }

    public func readByte() throws(SystemdError) -> UInt8 { try readFixed("y", UInt8(0)) }
    public func readInt16() throws(SystemdError) -> Int16 { try readFixed("n", Int16(0)) }
    public func readUInt16() throws(SystemdError) -> UInt16 { try readFixed("q", UInt16(0)) }
    public func readInt32() throws(SystemdError) -> Int32 { try readFixed("i", Int32(0)) }
    public func readUInt32() throws(SystemdError) -> UInt32 { try readFixed("u", UInt32(0)) }
    public func readInt64() throws(SystemdError) -> Int64 { try readFixed("x", Int64(0)) }
    public func readUInt64() throws(SystemdError) -> UInt64 { try readFixed("t", UInt64(0)) }
    public func readDouble() throws(SystemdError) -> Double { try readFixed("d", Double(0)) }

    /// A unix fd (`h`): the message owns the one it carries, so this returns a duplicate
    /// (F_DUPFD_CLOEXEC) that the caller owns and must close.
    public func readFileDescriptor() throws(SystemdError) -> Int32 {
        let borrowed = try readFixed("h", Int32(-1))
        let fd = fcntl(borrowed, F_DUPFD_CLOEXEC, 3)
        if fd < 0 { throw SystemdError.fromErrno("fcntl(F_DUPFD_CLOEXEC)") }
        return fd
    }

    private func read(_ type: Character, _ pointer: UnsafeMutableRawPointer) throws(SystemdError) {
        let r = sd_bus_message_read_basic(message, CChar(type.asciiValue!), pointer)
        if r < 0 { throw SystemdError(returnCode: r, function: "sd_bus_message_read_basic(\(type))") }
        // 0 means the container has no more values: for a caller that expected one, a mismatch.
        if r == 0 { throw SystemdError(errno: ENXIO, function: "sd_bus_message_read_basic(\(type))") }
    }

    private func readFixed<T>(_ type: Character, _ initial: T) throws(SystemdError) -> T {
        var value = initial
        try withUnsafeMutablePointer(to: &value) { (p) throws(SystemdError) in try read(type, p) }
        return value
    }

    private func readText(_ type: Character) throws(SystemdError) -> String {
        // The pointer is into the message, valid while it lives: copy it out at once.
        var text: UnsafePointer<CChar>?
        try read(type, &text)
        return text.map { String(cString: $0) } ?? ""
    }

    // MARK: - Containers

    /// The type of the next value (`"s"`, `"a"`, `"v"`, `"r"` for a struct, `"e"` for a dict
    /// entry) and, for containers, their contents' signature; nil at the end of the container.
    public func peek() throws(SystemdError) -> (type: Character, contents: String?)? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(message, &type, &contents)
        if r < 0 { throw SystemdError(returnCode: r, function: "sd_bus_message_peek_type") }
        if r == 0 { return nil }
        return (Character(Unicode.Scalar(UInt8(bitPattern: type))), contents.map { String(cString: $0) })
    }

    /// Enters a container: `type` is `"a"`, `"v"`, `"r"` or `"e"`, `contents` its signature
    /// (`"{sv}"` for a dictionary array, `"sv"` for its entries). Returns false when there is no
    /// such container here (e.g. the end of an enclosing array).
    @discardableResult
    public func enter(_ type: Character, _ contents: String) throws(SystemdError) -> Bool {
        let r = sd_bus_message_enter_container(message, CChar(type.asciiValue!), contents)
        if r < 0 { throw SystemdError(returnCode: r, function: "sd_bus_message_enter_container(\(type)\(contents))") }
        return r > 0
    }

    /// Leaves the container entered last. Arrays may be left early; structs, entries and
    /// variants must have been read to their end (`skipRest()` first otherwise).
    public func exit() throws(SystemdError) {
        let r = sd_bus_message_exit_container(message)
        if r < 0 { throw SystemdError(returnCode: r, function: "sd_bus_message_exit_container") }
    }

    /// Skips values of the given complete types, e.g. `"v"` or `"sa{sv}"`.
    public func skip(_ types: String) throws(SystemdError) {
        let r = sd_bus_message_skip(message, types)
        if r < 0 { throw SystemdError(returnCode: r, function: "sd_bus_message_skip(\(types))") }
    }

    /// Skips whatever is left of the current container.
    public func skipRest() throws(SystemdError) {
        while let next = try peek() {
            switch next.type {
            case "a": try skip("a" + (next.contents ?? ""))
            case "v": try skip("v")
            case "r": try skip("(" + (next.contents ?? "") + ")")
            case "e": try skip("{" + (next.contents ?? "") + "}")
            default: try skip(String(next.type))
            }
        }
    }

    public var isAtEnd: Bool { sd_bus_message_at_end(message, 0) > 0 }

    /// Back to the start of the body.
    public func rewind() { _ = sd_bus_message_rewind(message, 1) }

    /// Reads an array whose elements have signature `element`, one `body` call per element
    /// (the reader is positioned on it; `body` must read it whole).
    public func readArray<T>(_ element: String, _ body: (BusMessage) throws(SystemdError) -> T) throws(SystemdError) -> [T] {
        guard try enter("a", element) else { throw SystemdError(errno: ENXIO, function: "readArray(a\(element))") }
        var values: [T] = []
        while !isAtEnd { values.append(try body(self)) }
        try exit()
        return values
    }

    /// Reads a struct whose fields have signature `fields`.
    public func readStruct<T>(_ fields: String, _ body: (BusMessage) throws(SystemdError) -> T) throws(SystemdError) -> T {
        guard try enter("r", fields) else { throw SystemdError(errno: ENXIO, function: "readStruct(\(fields))") }
        let value = try body(self)
        try exit()
        return value
    }

    /// Reads an `a{sv}` (a property set): `body` gets each name and the variant's contents
    /// signature with the reader on the value; what `body` leaves unread is skipped.
    public func readProperties(_ body: (String, String, BusMessage) throws(SystemdError) -> Void) throws(SystemdError) {
        guard try enter("a", "{sv}") else { throw SystemdError(errno: ENXIO, function: "readProperties") }
        while try enter("e", "sv") {
            let name = try readString()
            guard let variant = try peek(), variant.type == "v", let contents = variant.contents else {
                throw SystemdError(errno: ENXIO, function: "readProperties(\(name))")
            }
            try enter("v", contents)
            try body(name, contents, self)
            try skipRest()
            try exit()
            try exit()
        }
        try exit()
    }
}
