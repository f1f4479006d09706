import Foundation
import Glibc

/// A deliberately small, independent Varlink client (JSON objects, each followed by a NUL) for
/// the system tests: it reaches the daemon's socket inside the test namespace through
/// /proc/<pid>/root/…, so it is a separate implementation from the one scened and scenectl share.
final class VarlinkTestClient {
    let path: String
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String, timeoutSeconds: Int = 20) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw HarnessError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw HarnessError("connect(\(path)): \(message)")
        }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    static func encode(method: String, parameters: [String: Any] = [:], oneway: Bool = false) -> [UInt8] {
        var call: [String: Any] = ["method": method]
        if !parameters.isEmpty { call["parameters"] = parameters }
        if oneway { call["oneway"] = true }
        // Only test-built dictionaries of JSON types get here.
        let data = try! JSONSerialization.data(withJSONObject: call)
        return Array(data) + [0]
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw HarnessError("send to \(path): \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    /// The next NUL-terminated message.
    private func receiveMessage() throws -> [UInt8] {
        while true {
            if let nul = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<nul])
                buffer.removeSubrange(...nul)
                return message
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw HarnessError("recv from \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { throw HarnessError("\(path): the daemon closed the connection") }
            buffer += chunk[..<n]
        }
    }

    /// A call and its reply: the reply's `parameters`, or a thrown `VarlinkCallError`.
    @discardableResult
    func call(_ method: String, _ parameters: [String: Any] = [:]) throws -> [String: Any] {
        try send(Self.encode(method: method, parameters: parameters))
        let message = try receiveMessage()
        guard let reply = (try? JSONSerialization.jsonObject(with: Data(message))) as? [String: Any] else {
            throw HarnessError("\(method): reply is not a JSON object: \(String(decoding: message, as: UTF8.self).prefix(300))")
        }
        if let error = reply["error"] as? String {
            throw VarlinkCallError(method: method, error: error, parameters: "\(reply["parameters"] ?? [:])")
        }
        return reply["parameters"] as? [String: Any] ?? [:]
    }

    /// A call without a reply (the daemon must not send one).
    func oneway(_ method: String, _ parameters: [String: Any] = [:]) throws {
        try send(Self.encode(method: method, parameters: parameters, oneway: true))
    }

    /// Sends pre-encoded oneway calls in chunks, each followed by a GetInfo whose reply (held
    /// by scened until its commit) paces the next chunk; then returns GetStatus's status.
    /// Calls on one connection are handled in order, so each reply covers the chunk before it.
    /// (Chunks, not one unbroken flood: see the report on commit starvation.)
    func onewayBulk(_ calls: [[UInt8]], chunk: Int = 2000) throws -> [String: Any] {
        let sync = Self.encode(method: "org.varlink.service.GetInfo")
        var start = 0
        while start < calls.count {
            var batch: [UInt8] = []
            for call in calls[start..<min(start + chunk, calls.count)] { batch += call }
            try send(batch + sync)
            _ = try receiveMessage()
            start += chunk
        }
        return try call("io.scened.Manager.GetStatus")["status"] as? [String: Any] ?? [:]
    }

    /// Pipelines pre-encoded calls, at most `window` outstanding, and counts the replies; returns
    /// the first few error replies. Replies are not decoded (the point is the daemon's speed).
    func pipeline(_ calls: [[UInt8]], window: Int = 256) throws -> (replies: Int, errors: [String]) {
        var sent = 0
        var received = 0
        var errors: [String] = []
        var pending: [UInt8] = []
        var pendingOffset = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while received < calls.count {
            if pendingOffset == pending.count && sent < calls.count && sent - received < window {
                pending.removeAll(keepingCapacity: true)
                pendingOffset = 0
                while sent < calls.count && sent - received < window {
                    pending += calls[sent]
                    sent += 1
                }
            }
            var fds = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if pendingOffset < pending.count { fds.events |= Int16(POLLOUT) }
            let ready = poll(&fds, 1, 20_000)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw HarnessError("pipeline: no progress for 20 s (\(received)/\(calls.count) replies)") }
            if fds.revents & Int16(POLLOUT) != 0 && pendingOffset < pending.count {
                let n = pending[pendingOffset...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if n > 0 { pendingOffset += n } else if n < 0 && errno != EAGAIN && errno != EINTR {
                    throw HarnessError("pipeline send: \(String(cString: strerror(errno)))")
                }
            }
            if fds.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let n = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if n == 0 { throw HarnessError("pipeline: the daemon closed the connection after \(received) replies") }
                if n < 0 {
                    if errno == EAGAIN || errno == EINTR { continue }
                    throw HarnessError("pipeline recv: \(String(cString: strerror(errno)))")
                }
                let scanFrom = buffer.count // the bytes before hold no NUL
                buffer += chunk[..<n]
                var messageStart = 0
                buffer.withUnsafeBytes { raw in
                    let base = raw.baseAddress!
                    var index = scanFrom
                    while index < raw.count, let hit = memchr(base + index, 0, raw.count - index) {
                        let end = base.distance(to: UnsafeRawPointer(hit))
                        received += 1
                        // scened writes replies as {"parameters":...} and errors as {"error":...}.
                        let okPrefix = "{\"parameters\":"
                        if errors.count < 5 && (end - messageStart < okPrefix.utf8.count
                            || memcmp(base + messageStart, okPrefix, okPrefix.utf8.count) != 0) {
                            errors.append(String(decoding: raw[messageStart..<end], as: UTF8.self))
                        }
                        messageStart = end + 1
                        index = end + 1
                    }
                }
                buffer.removeSubrange(..<messageStart)
            }
        }
        return (received, errors)
    }
}

struct VarlinkCallError: Error, CustomStringConvertible {
    let method: String
    let error: String
    let parameters: String
    var description: String { "\(method) failed: \(error) \(parameters)" }
}
