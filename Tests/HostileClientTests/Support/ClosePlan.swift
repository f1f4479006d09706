import Glibc
import SceneCore
import ScenedTestSupport
import Varlink

/// One connection of the random close-point test: the calls it sends and how it stops.
struct ClosePlan: CustomStringConvertible {
    enum Call {
        case connect(app: String, oneway: Bool)
        case status(oneway: Bool)
        case transition(session: String, activate: Bool, oneway: Bool)
        /// Only ever the last call: nothing after a stream is handled before the stream ends.
        case monitor
        case listing

        var frame: [UInt8] {
            switch self {
            case .connect(let app, let oneway): framed("Connect", ["app": .string(app), "background": true], oneway: oneway)
            case .status(let oneway): framed("GetStatus", oneway: oneway)
            case .transition(let session, let activate, let oneway):
                framed(activate ? "Activate" : "Background", ["session": .string(session)], oneway: oneway)
            case .monitor: framed("Monitor", more: true)
            case .listing: framed("ListSessions", ["app": "org.example.pool"], more: true)
            }
        }

        var isOneway: Bool {
            switch self {
            case .connect(_, let oneway), .status(let oneway), .transition(_, _, let oneway): oneway
            case .monitor, .listing: false
            }
        }
    }

    enum Ending {
        /// Sends the first `n` bytes (fewer than all), then closes.
        case cut(Int)
        case closeAtOnce
        case closeAfter(microseconds: Int)
        /// shutdown(SHUT_WR), then reads every reply due: a client that is still reading.
        case halfCloseAndRead
        case closeAfterFirstReply
    }

    var calls: [Call]
    var ending: Ending
    let bytes: [UInt8]
    /// Where each call's frame ends (just after its NUL).
    let ends: [Int]

    init(calls: [Call], ending: Ending) {
        self.calls = calls
        self.ending = ending
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for call in calls {
            bytes += call.frame
            ends.append(bytes.count)
        }
        self.bytes = bytes
        self.ends = ends
    }

    static func random(_ rng: inout SplitMix64, index: Int, pool: [String]) -> ClosePlan {
        let count = 1 + rng.below(3)
        var calls: [Call] = []
        for k in 0..<count {
            switch rng.below(k == count - 1 ? 10 : 8) {
            case 0, 1, 2: calls.append(.connect(app: "org.example.rc\(index)x\(k)", oneway: rng.chance(50)))
            case 3, 4: calls.append(.status(oneway: rng.chance(30)))
            case 5, 6, 7:
                calls.append(.transition(session: rng.pick(pool) ?? "s1", activate: rng.chance(50), oneway: rng.chance(50)))
            case 8: calls.append(.monitor)
            default: calls.append(.listing)
            }
        }
        let total = calls.reduce(0) { $0 + $1.frame.count }
        let ending: Ending
        switch rng.below(100) {
        case ..<35: ending = .cut(rng.below(total))
        case ..<60: ending = .closeAtOnce
        case ..<75: ending = .closeAfter(microseconds: rng.below(3000))
        case ..<90: ending = .halfCloseAndRead
        default: ending = .closeAfterFirstReply
        }
        return ClosePlan(calls: calls, ending: ending)
    }

    /// The bytes this plan sends.
    var sentCount: Int {
        if case .cut(let n) = ending { return n }
        return bytes.count
    }

    /// The apps of Connect calls sent whole (each must get exactly one session) and of those
    /// cut short or never sent (none).
    var connects: (whole: [String], partial: [String]) {
        var whole: [String] = []
        var partial: [String] = []
        for (call, end) in zip(calls, ends) {
            guard case .connect(let app, _) = call else { continue }
            if end <= sentCount { whole.append(app) } else { partial.append(app) }
        }
        return (whole, partial)
    }

    var description: String {
        let names = calls.map { call -> String in
            switch call {
            case .connect(let app, let oneway): "Connect(\(app))\(oneway ? "/oneway" : "")"
            case .status(let oneway): "GetStatus\(oneway ? "/oneway" : "")"
            case .transition(let s, let activate, let oneway): "\(activate ? "Activate" : "Background")(\(s))\(oneway ? "/oneway" : "")"
            case .monitor: "Monitor/more"
            case .listing: "ListSessions/more"
            }
        }
        return "\(names.joined(separator: " + ")) [\(bytes.count) bytes], then \(ending)"
    }

    /// What the client saw when it closed, for a failure message.
    struct Outcome: CustomStringConvertible {
        /// Bytes the kernel had received for it and it never read: more than 0 makes the
        /// close a reset, which the daemon sees as EPOLLERR (ECONNRESET) beside EPOLLHUP.
        var unreadAtClose: Int
        var repliesRead: Int
        var description: String { "\(repliesRead) replies read, \(unreadAtClose) bytes unread at the close" }
    }

    /// Carries the plan out on a new connection. Throws when a client that reads misses a
    /// reply, or when the daemon does not take the connection or its bytes in time.
    func perform(socket: String) throws -> Outcome {
        let connection = try RawConnection(path: socket, connectTimeout: 3)
        var replies = 0
        try connection.send(Array(bytes[..<sentCount]), timeout: 3)
        switch ending {
        case .cut, .closeAtOnce:
            break
        case .closeAfter(let microseconds):
            sleepMicroseconds(microseconds)
        case .halfCloseAndRead:
            connection.shutdownWrite()
            replies = try readEveryReply(connection)
        case .closeAfterFirstReply:
            if calls.contains(where: { !$0.isOneway }) {
                guard try connection.receiveMessage(timeout: 3) != nil else {
                    throw TestFailure("closed before the first reply")
                }
                replies = 1
            }
        }
        var unread: Int32 = 0
        if ioctl(connection.fd, UInt(FIONREAD), &unread) != 0 { unread = -1 }
        connection.close()
        return Outcome(unreadAtClose: Int(unread), repliesRead: replies)
    }

    private func readEveryReply(_ connection: RawConnection) throws -> Int {
        var replies = 0
        for call in calls where !call.isOneway {
            switch call {
            case .listing:
                while true {
                    let reply = try connection.receiveObject(timeout: 3)
                    replies += 1
                    if reply.errorName != nil || reply["continues"]?.boolValue != true { break }
                }
            default:
                // Monitor: the subscription reply is all a half-closed monitor is owed.
                _ = try connection.receiveObject(timeout: 3)
                replies += 1
            }
        }
        return replies
    }
}
