import CSystemd

/// An error a D-Bus peer answered with, or one sd-bus made up for a call that got no answer
/// (`org.freedesktop.DBus.Error.Timeout`, `…NoReply` when the connection or the peer went
/// away). Local failures to read or build a message are `SystemdError`s instead.
public struct BusError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.NameHasNoOwner`.
    public let name: String
    /// The peer's human-readable text (may be empty).
    public let message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// From the error an sd-bus error reply carries (`sd_bus_message_get_error`).
    init(_ error: UnsafePointer<sd_bus_error>?) {
        let name = error?.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let message = error?.pointee.message.map { String(cString: $0) } ?? ""
        self.init(name: name, message: message)
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    public static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    public static let timeoutName = "org.freedesktop.DBus.Error.Timeout"
    public static let nameHasNoOwnerName = "org.freedesktop.DBus.Error.NameHasNoOwner"
}

/// What an asynchronous method call comes back with.
public typealias BusReply = Result<BusMessage, BusError>
