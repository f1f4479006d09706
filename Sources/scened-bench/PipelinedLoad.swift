import Glibc
import Varlink

/// Drives calls over several connections from one thread, keeping a window of calls in flight
/// on each, so that the daemon (not the client) is the bottleneck. Replies are only framed and
/// checked for errors, never parsed: the client must stay cheap.
final class PipelinedLoad {
    struct Connection {
        var fd: Int32
        /// The calls this connection cycles through, each already framed.
        var script: [[UInt8]]
        var next = 0
        var inFlight = 0
        var output: [UInt8] = []
        var outputHead = 0
        var replies = 0
        var errors = 0
        /// Whether the bytes read so far end inside a reply whose kind is known: we look at the
        /// first bytes of each reply to tell `{"parameters"` from `{"error"`.
        var replyStart = true
        /// Bytes seen of the current reply (kept across reads).
        var position = 0
        var firstError: String?
        var errorBytes: [UInt8] = []
        var capturingError = false
    }

    var connections: [Connection]
    let window: Int

    init(socket: String, scripts: [[[UInt8]]], window: Int) throws {
        self.window = window
        connections = []
        for script in scripts {
            let fd = try UnixSocket.connect(path: socket)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            connections.append(Connection(fd: fd, script: script))
        }
    }

    deinit { for c in connections { close(c.fd) } }

    /// Runs until `duration` seconds have passed (or `maxCalls` replies arrived); returns the
    /// replies received and the elapsed time.
    func run(duration: Double, maxCalls: Int = Int.max) -> (replies: Int, errors: Int, seconds: Double, firstError: String?) {
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        let start = now()
        var total = 0
        var deadline = start + duration
        var draining = false
        while true {
            let t = now()
            if !draining && (t >= deadline || total >= maxCalls) {
                draining = true
                deadline = t + 10
            }
            if draining && (connections.allSatisfy { $0.inFlight == 0 } || t >= deadline) { break }
            var fds: [pollfd] = []
            for i in connections.indices {
                if !draining { fill(i, maxCalls: maxCalls - total) }
                flush(i)
                var events = Int16(POLLIN)
                if connections[i].outputHead < connections[i].output.count { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: connections[i].fd, events: events, revents: 0))
            }
            _ = poll(&fds, nfds_t(fds.count), 100)
            for i in connections.indices where fds[i].revents & Int16(POLLIN) != 0 {
                let n = buffer.withUnsafeMutableBytes { read(connections[i].fd, $0.baseAddress, $0.count) }
                if n <= 0 {
                    if n == 0 || (errno != EAGAIN && errno != EINTR) {
                        connections[i].firstError = connections[i].firstError ?? "connection closed by the daemon"
                        connections[i].inFlight = 0
                        draining = true
                    }
                    continue
                }
                total += account(i, buffer[0..<n])
            }
        }
        let seconds = now() - start
        let errors = connections.reduce(0) { $0 + $1.errors }
        return (total, errors, seconds, connections.compactMap(\.firstError).first)
    }

    private func fill(_ i: Int, maxCalls: Int) {
        var c = connections[i]
        while c.inFlight < window && c.inFlight < maxCalls {
            c.output.append(contentsOf: c.script[c.next])
            c.next = (c.next + 1) % c.script.count
            c.inFlight += 1
        }
        connections[i] = c
    }

    private func flush(_ i: Int) {
        while connections[i].outputHead < connections[i].output.count {
            let n = connections[i].output.withUnsafeBytes { raw in
                send(connections[i].fd, raw.baseAddress! + connections[i].outputHead,
                     raw.count - connections[i].outputHead, Int32(MSG_NOSIGNAL))
            }
            if n <= 0 { break }
            connections[i].outputHead += n
        }
        if connections[i].outputHead == connections[i].output.count {
            connections[i].output.removeAll(keepingCapacity: true)
            connections[i].outputHead = 0
        }
    }

    /// Counts complete replies in `bytes` and notes error replies.
    private func account(_ i: Int, _ bytes: ArraySlice<UInt8>) -> Int {
        var c = connections[i]
        var count = 0
        for b in bytes {
            if c.replyStart {
                c.replyStart = false
                c.position = 0
            }
            c.position += 1
            // `{"e` at the start of a reply: an error.
            if c.position == 3 && b == UInt8(ascii: "e") {
                c.errors += 1
                if c.firstError == nil { c.capturingError = true }
            }
            if c.capturingError && b != 0 && c.errorBytes.count < 300 { c.errorBytes.append(b) }
            if b == 0 {
                count += 1
                c.inFlight -= 1
                c.replies += 1
                c.replyStart = true
                if c.capturingError {
                    c.firstError = "{\"" + String(decoding: c.errorBytes, as: UTF8.self)
                    c.capturingError = false
                }
            }
        }
        connections[i] = c
        return count
    }
}

/// One framed call.
func frame(_ method: String, _ parameters: JSONObject) -> [UInt8] {
    VarlinkCall(method: "io.scened.Manager." + method, parameters: parameters).encoded()
}
