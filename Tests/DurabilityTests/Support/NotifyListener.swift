import Synchronization
import Glibc

/// The service manager's side of sd_notify: an AF_UNIX datagram socket bound at `path`, whose
/// path goes into the daemon's NOTIFY_SOCKET. A thread reads every datagram as it arrives, as
/// systemd does: a full queue (max_dgram_qlen, 10 by default) would block the daemon's sd_notify.
final class NotifyListener: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let state = Mutex<State>(State())
    private var thread = pthread_t()

    struct State {
        var messages: [String] = []
        var stop = false
    }

    /// Every datagram so far, in arrival order.
    var messages: [String] { state.withLock { $0.messages } }

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(AF_UNIX, SOCK_DGRAM) failed: \(errno)") }
        let rc = withUnixAddress(path) { bind(fd, $0, $1) }
        guard rc == 0 else {
            Glibc.close(fd)
            throw TestFailure("binding the notify socket \(path) failed: \(String(cString: strerror(errno)))")
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { raw in
            let listener = Unmanaged<NotifyListener>.fromOpaque(raw!).takeRetainedValue()
            listener.readLoop()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<NotifyListener>.fromOpaque(context).release()
            Glibc.close(fd)
            throw TestFailure("pthread_create failed: \(created)")
        }
    }

    /// Stops the reader thread (which holds a reference until then) and closes the socket.
    func close() {
        guard !state.withLock({ s in
            let was = s.stop
            s.stop = true
            return was
        }) else { return }
        pthread_join(thread, nil)
        Glibc.close(fd)
        unlink(path)
    }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 8192)
        while !state.withLock({ $0.stop }) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&p, 1, 50) > 0 else { continue }
            while true {
                let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                guard n >= 0 else { break }
                let text = String(decoding: buffer[..<n], as: UTF8.self)
                state.withLock { $0.messages.append(text) }
            }
        }
    }

    /// Waits up to `seconds` for a datagram that has the assignment `assignment` on a line of
    /// its own ("READY=1") or, when it ends with "=", any value of that key ("STATUS=").
    /// Returns the whole datagram.
    func wait(for assignment: String, seconds: Double, after index: Int = 0) -> String? {
        let deadline = Deadline(seconds: seconds)
        while true {
            if let found = first(assignment, from: index) { return found }
            if deadline.hasPassed { return nil }
            sleepMilliseconds(5)
        }
    }

    func first(_ assignment: String, from index: Int = 0) -> String? {
        let all = messages
        guard index < all.count else { return nil }
        return all[index...].first { Self.lines($0).contains { Self.matches($0, assignment) } }
    }

    /// Every value of `key` ("STATUS") over all datagrams, in order.
    func values(of key: String) -> [String] {
        var out: [String] = []
        for message in messages {
            for line in Self.lines(message) where line.hasPrefix(key + "=") {
                out.append(String(line.dropFirst(key.count + 1)))
            }
        }
        return out
    }

    static func lines(_ message: String) -> [Substring] {
        message.split(separator: "\n", omittingEmptySubsequences: true)
    }

    static func matches(_ line: Substring, _ assignment: String) -> Bool {
        assignment.hasSuffix("=") ? line.hasPrefix(assignment) : line == assignment
    }
}

/// Calls `body` with a sockaddr_un for `path`.
func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path too long: \(path)")
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
