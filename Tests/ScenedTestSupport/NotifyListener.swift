import Glibc
import Locking

/// The service manager's side of sd_notify: an AF_UNIX datagram socket bound at `path`, whose
/// path goes into NOTIFY_SOCKET. A thread reads every datagram as it arrives, as systemd does:
/// a full queue (max_dgram_qlen, 10 by default) would block the sender's sd_notify. Every query
/// first takes in what is queued on the socket, so it sees each datagram sent before it.
/// `close()` ends the thread (which holds a reference until then).
public final class NotifyListener: @unchecked Sendable {
    /// One datagram: its text and the file descriptors that came with it (SCM_RIGHTS), which
    /// are the receiver's to close.
    public struct Datagram: Sendable, Equatable {
        public let text: String
        public let fds: [Int32]
    }

    public let path: String
    private let fd: Int32
    private let state = Locked<State>(State())
    private var thread = pthread_t()
    /// The directory `init()` made for the socket.
    private let directory: TemporaryDirectory?

    private struct State {
        var datagrams: [Datagram] = []
        /// How many datagrams `receive` has handed out.
        var received = 0
        var stop = false
        var closed = false
    }

    /// Binds the socket at `path`.
    public convenience init(path: String) throws {
        try self.init(path: path, directory: nil)
    }

    /// Binds the socket in a private temporary directory.
    public convenience init() throws {
        let directory = TemporaryDirectory(prefix: "scened-notify")
        try self.init(path: directory.file("notify"), directory: directory)
    }

    private init(path: String, directory: TemporaryDirectory?) throws {
        self.path = path
        self.directory = directory
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(AF_UNIX, SOCK_DGRAM) failed: \(errnoText())") }
        let rc = withUnixAddress(path) { bind(fd, $0, $1) }
        guard rc == 0 else {
            Glibc.close(fd)
            throw TestFailure("binding the notify socket \(path) failed: \(errnoText())")
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

    /// Every datagram so far, in arrival order.
    public var datagrams: [Datagram] { state.withLock { s in takeQueued(&s); return s.datagrams } }

    /// The text of every datagram so far, in arrival order.
    public var messages: [String] { datagrams.map(\.text) }

    /// Stops the reader thread and closes the socket; what was queued until then is kept.
    public func close() {
        let wasStopped = state.withLock { s in
            let was = s.stop
            if !was { takeQueued(&s) }
            s.stop = true
            s.closed = true
            return was
        }
        guard !wasStopped else { return }
        pthread_join(thread, nil)
        Glibc.close(fd)
        unlink(path)
    }

    private func readLoop() {
        while !state.withLock({ $0.stop }) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&p, 1, 50) > 0 else { continue }
            state.withLock { takeQueued(&$0) }
        }
    }

    /// Reads every datagram waiting on the socket into `state` (under the lock, so that the
    /// reader thread and a query never split the order).
    private func takeQueued(_ s: inout State) {
        guard !s.closed else { return }
        var data = [UInt8](repeating: 0, count: 8192)
        var control = [UInt8](repeating: 0, count: 256)
        while true {
            var controlLength = 0
            let n: Int = data.withUnsafeMutableBytes { dataBytes in
                control.withUnsafeMutableBytes { controlBytes in
                    var vector = iovec(iov_base: dataBytes.baseAddress, iov_len: dataBytes.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var message = msghdr()
                        message.msg_iov = vectorPointer
                        message.msg_iovlen = 1
                        message.msg_control = controlBytes.baseAddress
                        message.msg_controllen = controlBytes.count
                        let n = recvmsg(fd, &message, Int32(MSG_DONTWAIT) | Int32(MSG_CMSG_CLOEXEC))
                        controlLength = n >= 0 ? message.msg_controllen : 0
                        return n
                    }
                }
            }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return }
            s.datagrams.append(Datagram(text: String(decoding: data[..<n], as: UTF8.self),
                                        fds: Self.rightsFDs(in: control[..<controlLength])))
        }
    }

    /// The fds of SCM_RIGHTS control messages (CMSG_* are macros, so walk the headers by hand).
    private static func rightsFDs(in control: ArraySlice<UInt8>) -> [Int32] {
        let headerSize = MemoryLayout<cmsghdr>.size
        var fds: [Int32] = []
        var offset = 0
        control.withUnsafeBytes { raw in
            while offset + headerSize <= raw.count {
                let length = raw.loadUnaligned(fromByteOffset: offset, as: Int.self)
                let level = raw.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self)
                let type = raw.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self)
                guard length >= headerSize, offset + length <= raw.count else { break }
                if level == SOL_SOCKET && type == Int32(SCM_RIGHTS) {
                    let count = (length - headerSize) / MemoryLayout<Int32>.size
                    for index in 0..<count {
                        fds.append(raw.loadUnaligned(fromByteOffset: offset + headerSize + index * 4, as: Int32.self))
                    }
                }
                offset += (length + 7) & ~7
            }
        }
        return fds
    }

    /// The next datagram `receive` has not handed out yet, waiting up to `timeoutMS` for one;
    /// nil when none came.
    public func receive(timeoutMS: Int32 = 1_000) -> Datagram? {
        let deadline = Deadline(seconds: Double(timeoutMS) / 1000)
        while true {
            let next: Datagram? = state.withLock { s in
                takeQueued(&s)
                guard s.received < s.datagrams.count else { return nil }
                s.received += 1
                return s.datagrams[s.received - 1]
            }
            if let next { return next }
            if deadline.hasPassed { return nil }
            sleepMilliseconds(1)
        }
    }

    /// Waits up to `seconds` for a datagram that has the assignment `assignment` on a line of
    /// its own ("READY=1") or, when it ends with "=", any value of that key ("STATUS=").
    /// Returns the whole datagram.
    public func wait(for assignment: String, seconds: Double, after index: Int = 0) -> String? {
        let deadline = Deadline(seconds: seconds)
        while true {
            if let found = first(assignment, from: index) { return found }
            if deadline.hasPassed { return nil }
            sleepMilliseconds(5)
        }
    }

    /// The first datagram from `index` on with `assignment` (as in `wait`).
    public func first(_ assignment: String, from index: Int = 0) -> String? {
        let all = messages
        guard index < all.count else { return nil }
        return all[index...].first { Self.lines($0).contains { Self.matches($0, assignment) } }
    }

    /// Every value of `key` ("STATUS") over all datagrams, in order.
    public func values(of key: String) -> [String] {
        var out: [String] = []
        for message in messages {
            for line in Self.lines(message) where line.hasPrefix(key + "=") {
                out.append(String(line.dropFirst(key.count + 1)))
            }
        }
        return out
    }

    public static func lines(_ message: String) -> [Substring] {
        message.split(separator: "\n", omittingEmptySubsequences: true)
    }

    public static func matches(_ line: Substring, _ assignment: String) -> Bool {
        assignment.hasSuffix("=") ? line.hasPrefix(assignment) : line == assignment
    }
}
