import CSystemd
import Glibc

/// An epoll set of its own (epoll(7)), for many descriptors that one owner schedules itself.
///
/// The loop watches `fd` as a single IO source; the owner then collects every ready member in
/// one `wait(timeout: 0)`. This keeps the members out of sd-event's one-dispatch-per-iteration
/// priority queue, so that a member that is ready for ever (a hung-up socket) can never starve
/// the rest of the loop: the owner decides when, and how much, each member is served.
/// Level-triggered; each member is named by a 64-bit token of the owner's choosing.
public final class EpollSet {
    public let fd: Int32
    private var buffer: [epoll_event]

    public init(capacity: Int = 256) throws(SystemdError) {
        let created = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard created >= 0 else { throw SystemdError(errno: errno, function: "epoll_create1") }
        fd = created
        buffer = Array(repeating: epoll_event(), count: max(1, capacity))
    }

    deinit { close(fd) }

    public func add(_ member: Int32, token: UInt64, events: IOEvents) throws(SystemdError) {
        try control(EPOLL_CTL_ADD, member, token, events, "epoll_ctl(ADD)")
    }

    public func modify(_ member: Int32, token: UInt64, events: IOEvents) throws(SystemdError) {
        try control(EPOLL_CTL_MOD, member, token, events, "epoll_ctl(MOD)")
    }

    /// Removes a member; harmless when it is not one (or already closed).
    public func remove(_ member: Int32) {
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, member, nil)
    }

    /// Calls `body` for each ready member (at most the buffer's capacity per call) and returns
    /// how many there were. `timeout` in milliseconds; 0 does not wait.
    @discardableResult
    public func wait(timeout: Int32 = 0, _ body: (UInt64, IOEvents) -> Void) -> Int {
        let n = buffer.withUnsafeMutableBufferPointer { b in
            epoll_wait(fd, b.baseAddress, Int32(b.count), timeout)
        }
        guard n > 0 else { return 0 }
        for i in 0..<Int(n) {
            let event = buffer[i]
            body(event.data.u64, IOEvents(rawValue: event.events))
        }
        return Int(n)
    }

    private func control(_ op: Int32, _ member: Int32, _ token: UInt64, _ events: IOEvents,
                         _ function: String) throws(SystemdError) {
        var event = epoll_event()
        event.events = events.rawValue
        event.data.u64 = token
        guard epoll_ctl(fd, op, member, &event) == 0 else { throw SystemdError(errno: errno, function: function) }
    }
}
