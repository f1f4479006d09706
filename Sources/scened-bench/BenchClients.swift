import Glibc
import Varlink

/// A connected, non-blocking socket of the bench's own clients.
func benchConnect(_ socket: String, receiveBuffer: Int32? = nil) throws -> Int32 {
    let fd = try UnixSocket.connect(path: socket)
    if var size = receiveBuffer {
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    return fd
}

/// Writes what the socket takes now: the bytes written, 0 when full, nil once the peer is gone.
func sendSome(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int? {
    let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    if n >= 0 { return n }
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : nil
}

/// The well-behaved client of the fairness figures ("sequential"): one connection, one call in
/// flight at a time (the next is sent once the reply is in), Activate then Background on a
/// session of its own. Replies are framed, not parsed; an error reply fails the run.
final class SequentialClient {
    let fd: Int32
    let session: String
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var activate = true

    init(socket: String, app: String) throws {
        let client = try VarlinkClient(path: socket, timeout: .seconds(30))
        let reply = try client.call("io.scened.Manager.Connect", ["app": .string(app), "background": true])
        guard let id = reply["session"]?["id"]?.stringValue else { throw BenchError("Connect answered no session") }
        session = id
        fd = try benchConnect(socket)
    }

    deinit { close(fd) }

    /// Calls per second over `seconds`. A call still unanswered when the period ends is
    /// waited for up to `grace` more seconds (not counted); if even then no reply came, the
    /// client is marked stalled and must not be used again.
    func rate(over seconds: Double, grace: Double = 5) throws -> (perSecond: Double, stalled: Bool) {
        let calls = [frame("Activate", ["session": .string(session)]), frame("Background", ["session": .string(session)])]
        let start = now()
        let end = start + seconds
        var done = 0
        while now() < end {
            let call = calls[activate ? 0 : 1]
            var offset = 0
            while offset < call.count {
                guard let n = call.withUnsafeBytes({ sendSome(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }) else {
                    throw BenchError("the daemon closed the well-behaved client")
                }
                offset += n
                if n == 0 { waitFor(POLLOUT, until: end + grace) }
            }
            guard try awaitReply(until: max(end, now()) + grace) else { return (Double(done) / seconds, true) }
            activate.toggle()
            if now() <= end { done += 1 }
        }
        return (Double(done) / seconds, false)
    }

    /// Reads until one NUL-terminated reply is complete; false if none came by `deadline`.
    private func awaitReply(until deadline: Double) throws -> Bool {
        var first = true
        var position = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                for byte in buffer[0..<n] {
                    if first && position == 2 && byte == UInt8(ascii: "e") {
                        throw BenchError("the well-behaved client got an error: " + String(decoding: buffer[0..<min(n, 300)], as: UTF8.self))
                    }
                    position += 1
                    if byte == 0 { first = false }
                }
                // One call in flight: its reply is the only message, so a NUL ends it.
                if !first { return true }
                continue
            }
            if n == 0 { throw BenchError("the daemon closed the well-behaved client") }
            if errno != EAGAIN && errno != EINTR { throw BenchError("recv: \(errnoText())") }
            if now() >= deadline { return false }
            waitFor(POLLIN, until: deadline)
        }
    }

    private func waitFor(_ event: Int32, until deadline: Double) {
        var p = pollfd(fd: fd, events: Int16(event), revents: 0)
        _ = poll(&p, 1, Int32(max(0, min(100, (deadline - now()) * 1000))))
    }
}

/// Counts of an abusive client, read by the main thread.
struct AbuseCounts: Sendable {
    var calls = 0
    /// How long a planned run took, when it ended by itself.
    var seconds = 0.0
    var failure: String?
}

/// Sends `calls` (oneway) over and over as fast as the socket takes them, never reading, until
/// stopped.
func onewayFlood(_ socket: String, _ calls: [[UInt8]], counts: Shared<AbuseCounts>) -> BenchThread {
    BenchThread { thread in
        let fd: Int32
        do { fd = try benchConnect(socket) } catch {
            counts.update { $0.failure = "\(error)" }
            return
        }
        defer { close(fd) }
        var chunk: [UInt8] = []
        var perChunk = 0
        while chunk.count < 64 << 10 {
            for call in calls { chunk += call }
            perChunk += calls.count
        }
        var offset = 0
        var bytes = 0
        while !thread.shouldStop {
            guard let n = chunk.withUnsafeBytes({ sendSome(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }) else {
                counts.update { $0.failure = "the daemon closed the flooding client" }
                return
            }
            if n == 0 {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 50)
                continue
            }
            bytes += n
            offset = (offset + n) % chunk.count
            let sent = bytes / chunk.count * perChunk
            counts.update { $0.calls = sent }
        }
    }
}

/// A PipelinedLoad (`window` calls in flight, replies read) on its own thread, for `duration`
/// seconds or `maxCalls` replies (PipelinedLoad has no stop: the run is planned ahead).
func pipelined(_ socket: String, _ script: [[UInt8]], window: Int, duration: Double, maxCalls: Int = .max,
               counts: Shared<AbuseCounts>) -> BenchThread {
    BenchThread { _ in
        do {
            let load = try PipelinedLoad(socket: socket, scripts: [script], window: window)
            let r = load.run(duration: duration, maxCalls: maxCalls)
            counts.update {
                $0.calls = r.replies
                $0.seconds = r.seconds
                if r.errors > 0 || r.firstError != nil { $0.failure = r.firstError ?? "\(r.errors) error replies" }
            }
        } catch {
            counts.update { $0.failure = "\(error)" }
        }
    }
}
