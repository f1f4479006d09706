import Glibc
import ScenedTestSupport
import Varlink

/// Many apps attached over io.scened.App from one thread: one non-blocking attach stream per
/// app, a few connections for pipelined calls (answers, requests, Manager calls), and a
/// Monitor of everything for reference, all read in one poll(2) loop.
final class AppFleet {
    /// What a pipelined call was for, matched with its reply (replies come in call order).
    enum Purpose {
        case activation(Int)
        case background(Int)
        case acknowledge(Int, seq: Int64)
        case listApps
    }

    struct CallLine {
        let connection: RawConnection
        var pending: [Purpose] = []
        var head = 0
    }

    let apps: [String]
    let socketPath: String
    private(set) var streams: [RawConnection] = []
    private var lines: [CallLine] = []
    private var nextLine = 0
    let monitor: RawConnection
    private var monitorSubscribed = false

    /// Per app: the `attached` reply, its events in the order received, its session.
    private(set) var attached: [JSONObject?]
    private(set) var received: [[JSONObject]]
    private(set) var sessions: [String?]
    /// Every event the Monitor streamed.
    private(set) var monitored: [JSONObject] = []
    /// Error replies, stream ends and protocol surprises; the test fails on any.
    private(set) var failures: [String] = []
    private(set) var acknowledged = 0
    private(set) var listedApps: [JSONValue]?
    /// What to do with an app's event as it arrives (answer it, say).
    var onEvent: ((Int, JSONObject) throws -> Void)?

    init(_ daemon: DaemonProcess, apps: [String], callConnections: Int = 4) throws {
        self.apps = apps
        socketPath = daemon.socketPath
        attached = Array(repeating: nil, count: apps.count)
        received = Array(repeating: [], count: apps.count)
        sessions = Array(repeating: nil, count: apps.count)
        monitor = try RawConnection(path: daemon.socketPath)
        try monitor.sendCall("io.scened.Manager.Monitor", [:], more: true)
        for _ in 0..<callConnections {
            lines.append(CallLine(connection: try RawConnection(path: daemon.socketPath)))
        }
    }

    /// Opens every app's stream and sends its Attach (with more).
    func attachAll() throws {
        for app in apps {
            let stream = try RawConnection(path: socketPath)
            try stream.sendCall("io.scened.App.Attach", ["app": .string(app)], more: true)
            streams.append(stream)
        }
    }

    /// A pipelined call on the next call connection, round robin.
    func send(_ method: String, _ parameters: JSONObject, for purpose: Purpose) throws {
        let i = nextLine
        nextLine = (nextLine + 1) % lines.count
        lines[i].pending.append(purpose)
        try lines[i].connection.sendCall(method, parameters)
    }

    var callsInFlight: Int { lines.reduce(0) { $0 + $1.pending.count - $1.head } }

    /// Reads whatever arrives for up to `milliseconds`, handling every complete message.
    func pump(milliseconds: Int32) throws {
        var fds = streams.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        fds += lines.map { pollfd(fd: $0.connection.fd, events: Int16(POLLIN), revents: 0) }
        fds.append(pollfd(fd: monitor.fd, events: Int16(POLLIN), revents: 0))
        guard poll(&fds, nfds_t(fds.count), milliseconds) > 0 else { return }
        for (k, p) in fds.enumerated() where p.revents != 0 {
            if k < streams.count {
                try drainStream(k)
            } else if k < streams.count + lines.count {
                try drainLine(k - streams.count)
            } else {
                try drainMonitor()
            }
        }
    }

    /// Pumps until `done` holds; fails after `seconds`.
    func pump(until done: () -> Bool, seconds: Double, _ what: String) throws {
        let deadline = Deadline(seconds: seconds)
        while !done() {
            guard !deadline.hasPassed else { throw TestFailure("\(what): not done within \(seconds) s; \(summary)") }
            try pump(milliseconds: 50)
            if let first = failures.first { throw TestFailure("\(what): \(first) (\(failures.count) failures)") }
        }
    }

    var summary: String {
        let attachedCount = attached.filter { $0 != nil }.count
        let events = received.reduce(0) { $0 + $1.count }
        return "\(attachedCount) attached, \(events) app events, \(monitored.count) monitored, \(callsInFlight) calls in flight, \(acknowledged) acknowledged"
    }

    private func parse(_ bytes: [UInt8]) throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(bytes) else {
            throw TestFailure("not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
        }
        return object
    }

    private func drainStream(_ i: Int) throws {
        let stream = streams[i]
        let open = try stream.fill(waitingMilliseconds: 0)
        while let bytes = stream.bufferedMessage() {
            let reply = try parse(bytes)
            if let error = reply.errorName {
                failures.append("\(apps[i])'s Attach ended with \(error): \(reply.parametersObject)")
                continue
            }
            if reply["continues"]?.boolValue != true {
                failures.append("\(apps[i])'s Attach ended: \(reply)")
            }
            let p = reply.parametersObject
            if let a = p["attached"]?.objectValue {
                if attached[i] != nil || !received[i].isEmpty { failures.append("\(apps[i]) got a second attached reply") }
                attached[i] = a
            } else if let event = p["event"]?.objectValue {
                if attached[i] == nil { failures.append("\(apps[i]) got an event before its attached reply") }
                received[i].append(event)
                try onEvent?(i, event)
            } else {
                failures.append("\(apps[i]) got a reply with neither attached nor event: \(reply)")
            }
        }
        if !open { failures.append("\(apps[i])'s attach connection was closed by the daemon") }
    }

    private func drainLine(_ k: Int) throws {
        let connection = lines[k].connection
        let open = try connection.fill(waitingMilliseconds: 0)
        while let bytes = connection.bufferedMessage() {
            let reply = try parse(bytes)
            guard lines[k].head < lines[k].pending.count else {
                failures.append("a reply nobody asked for: \(reply)")
                continue
            }
            let purpose = lines[k].pending[lines[k].head]
            lines[k].head += 1
            if lines[k].head == lines[k].pending.count {
                lines[k].pending.removeAll(keepingCapacity: true)
                lines[k].head = 0
            }
            if let error = reply.errorName {
                failures.append("\(purpose) failed with \(error): \(reply.parametersObject)")
                continue
            }
            switch purpose {
            case .activation(let i):
                sessions[i] = reply.parametersObject["session"]?.stringValue
                if sessions[i] == nil { failures.append("no session for \(apps[i]): \(reply)") }
            case .background:
                break
            case .acknowledge:
                acknowledged += 1
            case .listApps:
                listedApps = reply.parametersObject["apps"]?.arrayValue
            }
        }
        if !open { failures.append("a call connection was closed by the daemon") }
    }

    private func drainMonitor() throws {
        let open = try monitor.fill(waitingMilliseconds: 0)
        while let bytes = monitor.bufferedMessage() {
            let reply = try parse(bytes)
            if let error = reply.errorName { failures.append("the Monitor ended with \(error)"); continue }
            if let event = reply.parametersObject["event"]?.objectValue {
                monitored.append(event)
            } else if !monitorSubscribed {
                monitorSubscribed = true
            } else {
                failures.append("a Monitor reply without an event: \(reply)")
            }
        }
        if !open { failures.append("the Monitor connection was closed by the daemon") }
    }
}
