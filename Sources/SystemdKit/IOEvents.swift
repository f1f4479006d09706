import CSystemd

/// epoll(7) event bits, as requested from and reported by an IO source.
public struct IOEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// EPOLLIN: data (or a connection, or EOF) to read.
    public static let readable = IOEvents(rawValue: EPOLLIN.rawValue)
    /// EPOLLOUT: room to write.
    public static let writable = IOEvents(rawValue: EPOLLOUT.rawValue)
    /// EPOLLPRI: exceptional condition (out-of-band data, PSI triggers).
    public static let priority = IOEvents(rawValue: EPOLLPRI.rawValue)
    /// EPOLLERR: always reported, whether requested or not.
    public static let error = IOEvents(rawValue: EPOLLERR.rawValue)
    /// EPOLLHUP: always reported, whether requested or not.
    public static let hangup = IOEvents(rawValue: EPOLLHUP.rawValue)
    /// EPOLLRDHUP: the peer shut down its writing side.
    public static let readHangup = IOEvents(rawValue: EPOLLRDHUP.rawValue)
    /// EPOLLET: report changes only; the handler must drain until EAGAIN.
    public static let edgeTriggered = IOEvents(rawValue: EPOLLET.rawValue)

    public var description: String {
        let names: [(IOEvents, String)] = [
            (.readable, "readable"), (.writable, "writable"), (.priority, "priority"), (.error, "error"),
            (.hangup, "hangup"), (.readHangup, "readHangup"), (.edgeTriggered, "edgeTriggered"),
        ]
        let known = names.filter { contains($0.0) }.map(\.1)
        let rest = subtracting(IOEvents(names.map(\.0)))
        return "[" + (known + (rest.isEmpty ? [] : ["0x" + String(rest.rawValue, radix: 16)])).joined(separator: ", ") + "]"
    }
}
