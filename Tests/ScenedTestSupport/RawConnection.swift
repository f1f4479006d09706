import Glibc
import Varlink

/// A bare AF_UNIX stream connection for protocol tests: sends exactly the bytes it is given,
/// and splits what comes back at NUL bytes without interpreting it.
public final class RawConnection {
    /// The socket, -1 once `close()` was called.
    public private(set) var fd: Int32
    private var input: [UInt8] = []
    private var head = 0
    public private(set) var sawEOF = false
    /// Every byte received so far, including those already handed out.
    public private(set) var receivedBytes = 0

    /// - Parameters:
    ///   - receiveBuffer: SO_RCVBUF, for clients that must look slow to the daemon.
    ///   - connectTimeout: how long to retry while the daemon's listen backlog is full (a
    ///     non-blocking AF_UNIX connect then fails with EAGAIN and connects nothing).
    public init(path: String, receiveBuffer: Int32? = nil, connectTimeout: Double = 10) throws {
        _ = ignoreSIGPIPE
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed: \(errno)") }
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let deadline = Deadline(seconds: connectTimeout)
        while true {
            let rc = withUnixAddress(path) { connect(fd, $0, $1) }
            if rc == 0 || errno == EINPROGRESS { break }
            let code = errno
            if code == EAGAIN && !deadline.hasPassed {
                sleepMilliseconds(2)
                continue
            }
            Glibc.close(fd)
            fd = -1
            throw TestFailure("connect \(path) failed: \(String(cString: strerror(code)))")
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes the socket now (abruptly, for the peer: unread input makes it a reset).
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// shutdown(SHUT_WR): the peer reads EOF, and this side can still read its replies.
    public func shutdownWrite() {
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_WR)) }
    }

    /// Writes all of `bytes`, waiting for room as needed. Throws when the peer closed.
    public func send(_ bytes: [UInt8], timeout: Double = 20) throws {
        let deadline = Deadline(seconds: timeout)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 { offset += n; continue }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                guard !deadline.hasPassed else { throw TestFailure("send timed out with \(bytes.count - offset) bytes unsent") }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, min(deadline.remainingMilliseconds, 100))
                continue
            }
            throw TestFailure("send failed: \(String(cString: strerror(code)))")
        }
    }

    public func send(_ text: String, timeout: Double = 20) throws { try send(Array(text.utf8), timeout: timeout) }

    /// Writes what the socket takes now, without waiting: the number of bytes written, 0 when
    /// the socket is full, nil once the peer is gone (EPIPE, ECONNRESET).
    public func sendSome(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return 0 }
        while true {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            if n >= 0 { return n }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return 0 }
            return nil
        }
    }

    /// Sends one call, NUL-terminated.
    public func sendCall(_ method: String, _ parameters: JSONObject = [:], more: Bool = false, oneway: Bool = false) throws {
        try send(VarlinkCall(method: method, parameters: parameters, oneway: oneway, more: more).encoded())
    }

    /// Reads what is available into the buffer (at most `maxBytes`, to play a slow reader),
    /// waiting up to `milliseconds` for something. Returns false at EOF.
    @discardableResult
    public func fill(waitingMilliseconds milliseconds: Int32, maxBytes: Int = .max) throws -> Bool {
        if sawEOF { return false }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, milliseconds) > 0 else { return true }
        var buffer = [UInt8](repeating: 0, count: min(1 << 16, maxBytes))
        var taken = 0
        while true {
            let n = recv(fd, &buffer, min(buffer.count, maxBytes - taken), Int32(MSG_DONTWAIT))
            if n > 0 {
                receivedBytes += n
                taken += n
                if head > 0 && head == input.count { input.removeAll(keepingCapacity: true); head = 0 }
                input += buffer[..<n]
                if n < buffer.count || taken >= maxBytes { return true }
                continue
            }
            if n == 0 { sawEOF = true; return false }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return true }
            if code == ECONNRESET { sawEOF = true; return false }
            throw TestFailure("recv failed: \(String(cString: strerror(code)))")
        }
    }

    /// The next NUL-terminated message (without the NUL), or nil if the peer closed first.
    /// Throws on timeout.
    public func receiveMessage(timeout: Double = 20) throws -> [UInt8]? {
        let deadline = Deadline(seconds: timeout)
        while true {
            if let message = bufferedMessage() { return message }
            if sawEOF { return nil }
            guard !deadline.hasPassed else {
                throw TestFailure("no complete message within \(timeout) s (\(input.count - head) bytes buffered)")
            }
            try fill(waitingMilliseconds: min(deadline.remainingMilliseconds, 100))
        }
    }

    /// The next complete message already received (without the NUL), without reading more.
    public func bufferedMessage() -> [UInt8]? {
        let start = head
        let found: Int? = input.withUnsafeBytes { raw in
            guard start < raw.count, let hit = memchr(raw.baseAddress! + start, 0, raw.count - start) else { return nil }
            return UnsafeRawPointer(hit) - raw.baseAddress!
        }
        guard let end = found else { return nil }
        let message = Array(input[head..<end])
        head = end + 1
        if head > 1 << 20 { input.removeSubrange(0..<head); head = 0 }
        return message
    }

    /// The next message parsed as a JSON object; fails at EOF.
    public func receiveObject(timeout: Double = 20) throws -> JSONObject {
        guard let bytes = try receiveMessage(timeout: timeout) else {
            throw TestFailure("the daemon closed the connection instead of replying")
        }
        guard case .object(let object) = try JSONParser.parse(bytes) else {
            throw TestFailure("reply is not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
        }
        return object
    }

    /// Counts NUL-terminated messages until `count` arrived, without parsing them; returns the
    /// number of bytes they took.
    public func skipMessages(_ count: Int, timeout: Double = 60) throws -> Int {
        let deadline = Deadline(seconds: timeout)
        var seen = 0
        var bytes = 0
        while seen < count {
            // memchr over the buffer; no slice of `input` may outlive this block, or the next
            // append would copy the whole buffer (quadratic in debug builds).
            let start = head
            let end = input.count
            var position = start
            input.withUnsafeBytes { raw in
                while seen < count, position < end,
                      let hit = memchr(raw.baseAddress! + position, 0, end - position) {
                    position = UnsafeRawPointer(hit) - raw.baseAddress! + 1
                    seen += 1
                }
            }
            bytes += position - start
            head = position
            if seen == count { break }
            if sawEOF { throw TestFailure("connection closed after \(seen) of \(count) messages") }
            guard !deadline.hasPassed else { throw TestFailure("only \(seen) of \(count) messages within \(timeout) s") }
            if head > 0 { input.removeSubrange(0..<head); head = 0 }
            try fill(waitingMilliseconds: min(deadline.remainingMilliseconds, 100))
        }
        return bytes
    }

    /// Reads and discards until the peer closes; true if it did within `timeout`.
    public func waitForClose(timeout: Double) throws -> Bool {
        let deadline = Deadline(seconds: timeout)
        while !deadline.hasPassed {
            input.removeAll(keepingCapacity: true)
            head = 0
            if try !fill(waitingMilliseconds: min(deadline.remainingMilliseconds, 100)) { return true }
        }
        return false
    }

    /// Whether nothing arrives for `milliseconds` (and the connection stays open).
    public func staysQuiet(milliseconds: Int32) throws -> Bool {
        let before = input.count - head
        let open = try fill(waitingMilliseconds: milliseconds)
        return open && input.count - head == before
    }
}

extension JSONObject {
    /// The error name of an error reply, if it is one.
    public var errorName: String? { self["error"]?.stringValue }
    public var parametersObject: JSONObject { self["parameters"]?.objectValue ?? [:] }
}
