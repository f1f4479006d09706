import Glibc
import ScenedTestSupport
import Varlink

/// What a background client did, and why it stopped early if it did.
struct LoadReport: Sendable, CustomStringConvertible {
    var callsSent = 0
    var replies = 0
    var errorReplies = 0
    var failure: String?

    var description: String {
        "\(callsSent) calls sent, \(replies) replies (\(errorReplies) errors)\(failure.map { "; stopped: \($0)" } ?? "")"
    }
}

/// The shared state between a background client's thread and the test.
final class LoadControl: Sendable {
    let stopRequested = Shared(false)
    let started = Shared(false)
    let finished = Shared(false)
    let report = Shared(LoadReport())

    var shouldStop: Bool { stopRequested.value }
    func fail(_ message: String) { report.update { if $0.failure == nil { $0.failure = message } } }
}

/// A client running on a thread of its own until `stop()` or its own time bound. It opens its
/// connection on that thread: only the socket path, the framed calls and the control cross.
final class BackgroundLoad: Sendable {
    let control: LoadControl
    private let thread: TestThread

    /// - Parameter body: runs on the new thread; it must return by itself within a bounded
    ///   time, and soon after `control.shouldStop`.
    init(_ body: @escaping @Sendable (LoadControl) -> Void) {
        let control = LoadControl()
        self.control = control
        thread = TestThread {
            body(control)
            control.finished.update { $0 = true }
        }
    }

    /// Waits until the client says it is under way (or finished); false after `seconds`.
    func waitStarted(seconds: Double) -> Bool {
        waitUntil(seconds: seconds) { control.started.value || control.finished.value }
    }

    /// Asks the client to stop, joins its thread and returns its report.
    @discardableResult
    func stop() -> LoadReport {
        control.stopRequested.update { $0 = true }
        thread.join()
        return control.report.value
    }

    /// Waits for the client to finish by itself (it is told to stop after `seconds`).
    func finish(within seconds: Double) -> LoadReport {
        _ = waitUntil(seconds: seconds) { control.finished.value }
        return stop()
    }

    var report: LoadReport { control.report.value }
}

/// Counts the NUL-terminated messages in `bytes` and, among them, the error replies (a reply of
/// this daemon starts with `{"error"` exactly when it is one), across reads.
struct ReplyCounter {
    private var position = 0
    private(set) var replies = 0
    private(set) var errors = 0

    mutating func account(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            if byte == 0 {
                replies += 1
                position = 0
                continue
            }
            if position == 2 && byte == UInt8(ascii: "e") { errors += 1 }
            position += 1
        }
    }
}

extension BackgroundLoad {
    /// Sends oneway calls, cycling through `calls`, as fast as the socket takes them, for at
    /// most `seconds`; never reads (oneway calls have no reply).
    static func onewayFlood(socket: String, calls: [[UInt8]], seconds: Double = 30) -> BackgroundLoad {
        BackgroundLoad { control in
            let deadline = Deadline(seconds: seconds)
            let connection: RawConnection
            do { connection = try RawConnection(path: socket) } catch {
                control.fail("\(error)")
                return
            }
            // One chunk of whole calls, sent over and over.
            var chunk: [UInt8] = []
            var callsPerChunk = 0
            while chunk.count < 64 << 10 {
                for call in calls { chunk += call }
                callsPerChunk += calls.count
            }
            var offset = 0
            var sentBytes = 0
            control.started.update { $0 = true }
            while !control.shouldStop && !deadline.hasPassed {
                guard let n = connection.sendSome(chunk[offset...]) else {
                    control.fail("the daemon closed the flooding connection")
                    break
                }
                if n == 0 {
                    var p = pollfd(fd: connection.fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&p, 1, 50)
                    continue
                }
                sentBytes += n
                offset = (offset + n) % chunk.count
                let sent = sentBytes / chunk.count * callsPerChunk
                control.report.update { $0.callsSent = sent }
            }
        }
    }

    /// Keeps `window` calls in flight, cycling through `calls`, and reads every reply, for at
    /// most `seconds` or until `total` replies came; then waits (up to `drainSeconds`) for the
    /// replies still due.
    static func pipeline(socket: String, calls: [[UInt8]], window: Int, total: Int = .max,
                         seconds: Double = 30, drainSeconds: Double = 10) -> BackgroundLoad {
        BackgroundLoad { control in
            let deadline = Deadline(seconds: seconds)
            let connection: RawConnection
            do { connection = try RawConnection(path: socket) } catch {
                control.fail("\(error)")
                return
            }
            var output: [UInt8] = []
            var outputHead = 0
            var next = 0
            var sent = 0
            var counter = ReplyCounter()
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            control.started.update { $0 = true }
            var drainUntil: Deadline?
            while true {
                let stopping = control.shouldStop || deadline.hasPassed || sent >= total
                if stopping && drainUntil == nil { drainUntil = Deadline(seconds: drainSeconds) }
                if let drainUntil, counter.replies >= sent || drainUntil.hasPassed { break }
                if !stopping {
                    while sent - counter.replies < window && sent < total {
                        output += calls[next]
                        next = (next + 1) % calls.count
                        sent += 1
                    }
                }
                if outputHead < output.count {
                    guard let n = connection.sendSome(output[outputHead...]) else {
                        control.fail("the daemon closed the pipelining connection")
                        break
                    }
                    outputHead += n
                    if outputHead == output.count {
                        output.removeAll(keepingCapacity: true)
                        outputHead = 0
                    }
                }
                var p = pollfd(fd: connection.fd, events: Int16(POLLIN) | (outputHead < output.count ? Int16(POLLOUT) : 0),
                               revents: 0)
                _ = poll(&p, 1, 50)
                guard p.revents & Int16(POLLIN) != 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) {
                    control.fail("the daemon closed the pipelining connection")
                    break
                }
                if n > 0 {
                    buffer.withUnsafeBytes { counter.account(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                    let (replies, errors) = (counter.replies, counter.errors)
                    control.report.update {
                        $0.callsSent = sent
                        $0.replies = replies
                        $0.errorReplies = errors
                    }
                }
            }
            if counter.replies < sent && control.report.value.failure == nil {
                control.fail("\(sent - counter.replies) replies still missing \(drainSeconds) s after the last call")
            }
        }
    }

    /// A client that never misbehaves: batches of `batch` pipelined GetStatus calls, each reply
    /// parsed and checked, a batch answered within 5 s or the client fails.
    static func checkedBatches(socket: String, batch: Int = 8, seconds: Double = 30) -> BackgroundLoad {
        BackgroundLoad { control in
            let deadline = Deadline(seconds: seconds)
            do {
                let connection = try RawConnection(path: socket)
                let calls = [UInt8](Array(repeating: VarlinkCall(method: manager + "GetStatus", parameters: [:]).encoded(),
                                          count: batch).joined())
                control.started.update { $0 = true }
                var batches = 0
                while !control.shouldStop && !deadline.hasPassed {
                    try connection.send(calls, timeout: 5)
                    for index in 0..<batch {
                        let reply = try connection.receiveObject(timeout: 5)
                        guard reply.parametersObject["status"] != nil else {
                            throw TestFailure("reply \(index) of batch \(batches) is not a status: \(reply)")
                        }
                    }
                    batches += 1
                    control.report.update {
                        $0.callsSent = batches * batch
                        $0.replies = batches * batch
                    }
                }
            } catch {
                control.fail("the reading client: \(error)")
            }
        }
    }

    /// A Monitor that reads everything, counting events, for at most `seconds`.
    static func readingMonitor(socket: String, seconds: Double = 30) -> BackgroundLoad {
        BackgroundLoad { control in
            let deadline = Deadline(seconds: seconds)
            do {
                let connection = try RawConnection(path: socket)
                try connection.sendCall(manager + "Monitor", more: true)
                let subscribed = try connection.receiveObject(timeout: 10)
                guard subscribed.errorName == nil, subscribed["continues"]?.boolValue == true else {
                    throw TestFailure("Monitor was refused: \(subscribed)")
                }
                control.started.update { $0 = true }
                var counter = ReplyCounter()
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while !control.shouldStop && !deadline.hasPassed {
                    var p = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&p, 1, 50) > 0 else { continue }
                    let n = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) {
                        throw TestFailure("the daemon closed the reading monitor after \(counter.replies) events")
                    }
                    if n > 0 {
                        buffer.withUnsafeBytes { counter.account(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                        let (events, errors) = (counter.replies, counter.errors)
                        control.report.update {
                            $0.replies = events
                            $0.errorReplies = errors
                        }
                    }
                }
            } catch {
                control.fail("\(error)")
            }
        }
    }
}
