import Glibc

/// A blocking Varlink client over a Unix socket, for the CLI and tests. Not thread-safe: use
/// one client per thread. Connecting costs one socket and one connect; buffers grow on demand.
public final class VarlinkClient {
    private var fd: Int32
    private let maxMessageBytes: Int
    private var input: [UInt8] = []
    private var inputHead = 0
    /// `input[inputHead..<scanned]` holds no NUL.
    private var scanned = 0
    /// Allocated on the first read, so a client that never reads costs nothing.
    private var readBuffer: UnsafeMutableRawBufferPointer?

    /// - Parameters:
    ///   - timeout: applies to each send and each wait for a reply; nil waits forever.
    ///   - maxMessageBytes: largest reply accepted; a bigger one closes the connection.
    public init(path: String, timeout: Duration? = nil, maxMessageBytes: Int = 16 << 20) throws(VarlinkClientError) {
        do {
            fd = try UnixSocket.connect(path: path)
        } catch {
            throw .socket(error)
        }
        self.maxMessageBytes = maxMessageBytes
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            var value = timeval(tv_sec: Int(max(seconds, 0)), tv_usec: Int(max(attoseconds, 0) / 1_000_000_000_000))
            if value.tv_sec == 0 && value.tv_usec == 0 { value.tv_usec = 1 }  // zero would mean "no timeout"
            let size = socklen_t(MemoryLayout<timeval>.size)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, size)
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, size)
        }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
        readBuffer?.deallocate()
    }

    /// Closes the connection; later calls throw `.connectionClosed`.
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    public var isClosed: Bool { fd < 0 }

    /// The socket, for poll(2) beside other descriptors (-1 once closed); reading or writing it
    /// directly would break the framing.
    public var descriptor: Int32 { fd }

    /// Who serves the socket, as the kernel recorded it when the server called listen(2) or
    /// accepted (SO_PEERCRED); for checking the server before sending it anything.
    public var serverCredentials: (pid: Int32, uid: UInt32, gid: UInt32)? {
        fd < 0 ? nil : UnixSocket.peerCredentials(fd)
    }

    /// Calls `method` and returns the reply parameters. Throws `VarlinkError` for an error reply
    /// and `VarlinkClientError` for transport or protocol failures.
    public func call(_ method: String, _ parameters: JSONObject = [:]) throws -> JSONObject {
        try sendRaw(VarlinkCall(method: method, parameters: parameters).encoded())
        let reply = try receiveReply()
        if let error = reply.varlinkError { throw error }
        guard !reply.continues else { throw VarlinkClientError.invalidReply("'continues' in the reply to a call without 'more'") }
        return reply.parameters
    }

    /// Calls `method` with `more` and hands each reply to `each` until the last one. If `each`
    /// returns false the client stops listening and closes the connection, since the rest of
    /// the stream would otherwise still be in the way of the next call.
    public func callMore(_ method: String, _ parameters: JSONObject = [:], each: (JSONObject) throws -> Bool) throws {
        try sendRaw(VarlinkCall(method: method, parameters: parameters, more: true).encoded())
        while true {
            let reply = try receiveReply()
            if let error = reply.varlinkError { throw error }
            guard try each(reply.parameters) else {
                if reply.continues { close() }
                return
            }
            if !reply.continues { return }
        }
    }

    /// Sends a call with `oneway`; the server does not answer.
    public func send(oneway method: String, _ parameters: JSONObject = [:]) throws {
        try sendRaw(VarlinkCall(method: method, parameters: parameters, oneway: true).encoded())
    }

    /// Sends bytes as they are (they should include NUL terminators), e.g. pre-encoded
    /// pipelined calls for benchmarks.
    public func sendRaw(_ bytes: [UInt8]) throws {
        guard fd >= 0 else { throw VarlinkClientError.connectionClosed }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n >= 0 {
                offset += n
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: throw VarlinkClientError.timedOut
            case EPIPE, ECONNRESET: throw VarlinkClientError.connectionClosed
            case let code: throw VarlinkClientError.io(operation: "send", errno: code)
            }
        }
    }

    /// Reads the next NUL-terminated message, whatever it is.
    public func receiveMessage() throws -> JSONValue {
        guard fd >= 0 else { throw VarlinkClientError.connectionClosed }
        while true {
            if let end = findTerminator() {
                let start = inputHead
                guard end - start <= maxMessageBytes else { throw tooLarge() }
                inputHead = end + 1
                scanned = inputHead
                let parsed = input.withUnsafeBytes { buffer in
                    Result { () throws(JSONError) in try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[start..<end])) }
                }
                if inputHead == input.count {
                    input.removeAll(keepingCapacity: true)
                    inputHead = 0
                    scanned = 0
                }
                switch parsed {
                case .success(let message): return message
                case .failure(let error): throw VarlinkClientError.invalidReply(error.description)
                }
            }
            guard input.count - inputHead <= maxMessageBytes else { throw tooLarge() }
            try fill()
        }
    }

    /// An oversize reply leaves the stream unusable, so the connection is closed.
    private func tooLarge() -> VarlinkClientError {
        close()
        input = []
        inputHead = 0
        scanned = 0
        return .messageTooLarge(limit: maxMessageBytes)
    }

    private func receiveReply() throws -> VarlinkReply {
        let message = try receiveMessage()
        do {
            return try VarlinkReply(from: message)
        } catch {
            throw VarlinkClientError.invalidReply("malformed reply field '\(error.parameters["parameter"]?.stringValue ?? "")'")
        }
    }

    private func findTerminator() -> Int? {
        let from = max(scanned, inputHead)
        guard from < input.count else { return nil }
        let found: Int? = input.withUnsafeBytes { buffer in
            guard let hit = memchr(buffer.baseAddress! + from, 0, buffer.count - from) else { return nil }
            return UnsafeRawPointer(hit) - buffer.baseAddress!
        }
        scanned = found ?? input.count
        return found
    }

    /// Reads once and appends what arrived, compacting consumed bytes first.
    private func fill() throws {
        if inputHead > 0 {
            input.removeSubrange(0..<inputHead)
            scanned -= inputHead
            inputHead = 0
        }
        let buffer = readBuffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        readBuffer = buffer
        while true {
            let received = Glibc.recv(fd, buffer.baseAddress!, buffer.count, 0)
            if received > 0 {
                input.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<received]))
                return
            }
            if received == 0 { throw VarlinkClientError.connectionClosed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: throw VarlinkClientError.timedOut
            case ECONNRESET: throw VarlinkClientError.connectionClosed
            case let code: throw VarlinkClientError.io(operation: "recv", errno: code)
            }
        }
    }
}
