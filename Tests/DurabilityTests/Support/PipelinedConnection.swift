import Glibc
import ScenedTestSupport

/// A non-blocking Varlink connection that keeps several calls in flight: the caller queues
/// encoded calls, sends what the socket takes, and collects NUL-terminated replies as they
/// arrive (in call order, as Varlink answers them).
final class PipelinedConnection {
    let fd: Int32
    private var input: [UInt8] = []
    private var output: [UInt8] = []
    private(set) var isClosed = false

    init(path: String) throws {
        _ = ignoreSIGPIPE
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed: \(errno)") }
        let rc = withUnixAddress(path) { connect(fd, $0, $1) }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw TestFailure("connect \(path) failed: \(String(cString: strerror(code)))")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(fd) }

    var hasOutput: Bool { !output.isEmpty }

    func queue(_ bytes: [UInt8]) { output += bytes }

    enum Wait { case messages([[UInt8]]), timedOut, closed }

    /// Sends what it can, then waits up to `milliseconds` for replies (or for room to send).
    /// Returns the complete messages received, `.closed` once the peer is gone (messages
    /// that arrived before the end are returned first, on the call before).
    func exchange(waitingMilliseconds milliseconds: Int32) -> Wait {
        if isClosed { return .closed }
        flushOutput()
        if isClosed { return .closed }
        var p = pollfd(fd: fd, events: Int16(POLLIN) | (output.isEmpty ? 0 : Int16(POLLOUT)), revents: 0)
        let n = poll(&p, 1, milliseconds)
        if n == 0 { return .timedOut }
        if p.revents & Int16(POLLOUT) != 0 { flushOutput() }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var sawEnd = false
        while true {
            let r = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if r > 0 { input += buffer[..<r]; continue }
            if r == 0 { sawEnd = true; break }
            let code = errno
            if code == EINTR { continue }
            if code != EAGAIN && code != EWOULDBLOCK { sawEnd = true }
            break
        }
        var messages: [[UInt8]] = []
        var start = 0
        for i in input.indices where input[i] == 0 {
            messages.append(Array(input[start..<i]))
            start = i + 1
        }
        if start > 0 { input.removeSubrange(0..<start) }
        if sawEnd { isClosed = true }
        if !messages.isEmpty { return .messages(messages) }
        return sawEnd ? .closed : .messages([])
    }

    private func flushOutput() {
        while !output.isEmpty {
            let n = output.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 { output.removeFirst(n); continue }
            let code = errno
            if n < 0 && code == EINTR { continue }
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { return }
            isClosed = true
            return
        }
    }
}
