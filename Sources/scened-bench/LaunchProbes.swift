import Glibc
import ProcessKit
import Varlink

// What `scened-bench launch` observes with: timed connections, the event log it parses, cgroup.events
// watched for freezing, and tight polling.

// MARK: - Connections

/// One connection to scened: calls sent when the bench says, every message parsed and stamped
/// with the bench's CLOCK_MONOTONIC time of its receipt.
final class TimedConnection {
    let connection: FramedConnection
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    private var inbox: [(message: JSONObject, at: Double)] = []
    private var inboxHead = 0

    init(socket: String) throws { connection = try FramedConnection(socket: socket) }

    var fd: Int32 { connection.fd }

    /// Sends a call; returns when its last byte was written (monotonic s).
    @discardableResult
    func send(_ method: String, _ parameters: JSONObject, more: Bool = false) throws -> Double {
        connection.queue(VarlinkCall(method: "io.scened.Manager." + method, parameters: parameters, more: more).encoded())
        while true {
            guard connection.flush() else { throw BenchError("the daemon closed a connection") }
            if !connection.hasOutput { return now() }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)
        }
    }

    /// Reads what has arrived, without waiting.
    func pump() throws {
        let at = now()
        var parsed: [JSONObject] = []
        let open = connection.read(&scratch) { raw in
            if let value = try? JSONParser.parse(raw), let object = value.objectValue { parsed.append(object) }
        }
        for object in parsed { inbox.append((object, at)) }
        guard open else { throw BenchError("the daemon closed a connection") }
    }

    /// The next message if one is in.
    func take() -> (message: JSONObject, at: Double)? {
        guard inboxHead < inbox.count else { return nil }
        defer {
            inboxHead += 1
            if inboxHead == inbox.count {
                inbox.removeAll(keepingCapacity: true)
                inboxHead = 0
            }
        }
        return inbox[inboxHead]
    }

    /// The next message, waiting up to `timeout` seconds.
    func next(timeout: Double, _ what: String) throws -> (message: JSONObject, at: Double) {
        let deadline = now() + timeout
        while true {
            if let m = take() { return m }
            let left = deadline - now()
            if left <= 0 { throw BenchError("nothing within \(timeout) s: \(what)") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(1000, left * 1000) + 1))
            try pump()
        }
    }

    /// A call and its reply's parameters, with when it was sent and when the reply came.
    @discardableResult
    func call(_ method: String, _ parameters: JSONObject = [:], timeout: Double = 60) throws
        -> (reply: JSONObject, sent: Double, received: Double) {
        let sent = try send(method, parameters)
        let (m, at) = try next(timeout: timeout, method)
        try Self.check(m, method)
        return (m["parameters"]?.objectValue ?? [:], sent, at)
    }

    static func check(_ m: JSONObject, _ method: String) throws {
        if let error = m["error"]?.stringValue {
            throw BenchError("\(method): \(error) \(m["parameters"].map { "\($0)" } ?? "")")
        }
    }
}

/// A Monitor stream of every event, kept in order.
final class EventLog {
    struct Event {
        let seq: Int64
        /// Daemon clock, microseconds since the epoch.
        let time: Int64
        let name: String
        let app: String
        let session: String?
    }

    let stream: TimedConnection
    private(set) var events: [Event] = []
    /// When (monotonic s) the last event arrived.
    private(set) var lastReceipt = 0.0

    /// Every event from `since` on (the backlog first, then live ones: none missed).
    init(socket: String, since: Int64) throws {
        stream = try TimedConnection(socket: socket)
        try stream.send("Monitor", ["since": .int(since)], more: true)
    }

    func pump() throws {
        try stream.pump()
        while let (m, at) = stream.take() {
            try TimedConnection.check(m, "Monitor")
            lastReceipt = at
            guard let e = m["parameters"]?["event"], let seq = e["seq"]?.intValue, let time = e["time"]?.intValue,
                  let name = e["event"]?.stringValue, let app = e["app"]?.stringValue else { continue }
            events.append(Event(seq: seq, time: time, name: name, app: app, session: e["session"]?.stringValue))
        }
    }

    /// Returns once no event has come for `quiet` seconds (at most `timeout`).
    func settle(quiet: Double = 0.15, timeout: Double = 10) throws {
        let deadline = now() + timeout
        while now() < deadline {
            try pump()
            let t = now()
            if t - lastReceipt >= quiet { return }
            var p = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32((quiet - (t - lastReceipt)) * 1000) + 1)
        }
    }

    /// The first event from index `from` on that `matches`, waiting up to `timeout` seconds.
    func first(from: Int, timeout: Double = 30, _ what: String, _ matches: (Event) -> Bool) throws -> Event {
        let deadline = now() + timeout
        var checked = from
        while true {
            try pump()
            while checked < events.count {
                if matches(events[checked]) { return events[checked] }
                checked += 1
            }
            let left = deadline - now()
            if left <= 0 { throw BenchError("no \(what) event within \(timeout) s") }
            var p = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(1000, left * 1000) + 1))
        }
    }
}

// MARK: - cgroup.events

/// One cgroup's cgroup.events, opened once and re-read from its start every `lookInterval`. POLLPRI alone would not do: the kernel rate-limits
/// the notifications of cgroup files (one per 10 ms), so a change may be signalled late.
final class FreezeWatch {
    let path: String
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 256)

    init(cgroup: String) throws {
        path = cgroup + "/cgroup.events"
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError("open \(path): \(errnoText())") }
    }

    deinit { close(fd) }

    /// Whether the file says `frozen 1` now (nil if it cannot be read).
    func frozen() -> Bool? {
        guard lseek(fd, 0, SEEK_SET) == 0 else { return nil }
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self)
        if text.contains("frozen 1") { return true }
        if text.contains("frozen 0") { return false }
        return nil
    }

    /// When (monotonic s) the file first showed `frozen` = `want`, waiting up to `timeout`.
    func await(_ want: Bool, timeout: Double) throws -> Double {
        let deadline = now() + timeout
        while true {
            if frozen() == want { return now() }
            if now() > deadline { throw BenchError("\(path) did not show frozen \(want ? 1 : 0) within \(timeout) s") }
            var p = pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
            shortPoll(&p, 1)
        }
    }
}

/// How often cgroup.events is read while a change is awaited: the resolution of the freeze
/// and thaw figures (with the timer slack set to 1 µs, see `tightenTimerSlack`).
let lookInterval = 20e-6

/// A look at `fds` (poll without waiting), then, if none is ready, a sleep of `lookInterval`
/// (ppoll, which could wait less than a millisecond, is not in Swift's Glibc).
@discardableResult
func shortPoll(_ fds: UnsafeMutablePointer<pollfd>, _ count: Int) -> Int32 {
    let ready = poll(fds, nfds_t(count), 0)
    if ready == 0 {
        var pause = timespec(tv_sec: 0, tv_nsec: Int(lookInterval * 1e9))
        nanosleep(&pause, nil)
    }
    return ready
}

/// Sets this (single-threaded) process's timer slack to 1 µs, so that a 20 µs wait is one,
/// not the default 50 µs more. False if the kernel did not take it.
func tightenTimerSlack() -> Bool {
    (try? writeFile("/proc/self/timerslack_ns", "1000")) != nil
        && (try? readFile("/proc/self/timerslack_ns"))?.hasPrefix("1000") == true
}

// MARK: - Processes

// What the signal handler writes, prepared before it is installed.
nonisolated(unsafe) var benchSignalHome: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) var benchSignalKill: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) var benchSignalPid: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) let benchSignalOne: UnsafeMutablePointer<CChar>? = strdup("1")
