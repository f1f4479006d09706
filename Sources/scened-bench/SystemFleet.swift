import Glibc
import Varlink

/// `stop` and `lock`: apps attached over io.scened.App (this process's connections, one epoll
/// loop), each with one foregroundActive scene, answering every bounded event at once as an
/// app that has nothing left to do would: didEnterBackground with restoration data
/// `{"app": i}`, willTerminate bare. Each app notes when it read each kind of event, so that
/// a round can say how long the system's news took to reach every scene.
final class SystemFleet {
    enum Kind: Int, CaseIterable {
        case willResignActive, didEnterBackground, willEnterForeground, didBecomeActive, willTerminate
        var name: [UInt8] { Array("\(self)".utf8) }
    }

    let apps: [String]
    var count: Int { apps.count }
    private(set) var sessions: [String]
    /// Per kind, per app: when the app last read such an event since `clearReceipts` (0: not yet).
    private(set) var receipts: [[Double]]
    /// Per kind, per app: the event's own `time` (µs since the epoch, when the engine made it).
    private(set) var made: [[Int64]]
    private(set) var acksSent = 0
    private(set) var acksAnswered = 0
    private(set) var acksRefused = 0
    /// When the last answer left (monotonic s).
    private(set) var lastAckSent = 0.0
    /// Attach streams the daemon ended; a failure unless `expectClosing`.
    private(set) var closedStreams = 0
    /// When the first and the last attach stream ended (monotonic s; 0: none yet).
    private(set) var firstClose = 0.0
    private(set) var lastClose = 0.0
    var expectClosing = false
    /// The replies to the system's own calls (`control`), in order: nil for an error reply,
    /// else the reply's `token` if it has one ("" if not).
    private(set) var controlReplies: [String?] = []

    private let streams: [FramedConnection]
    private let calls: [FramedConnection]
    private var callsOpen: [Bool]
    /// The system's side (a shell's Manager calls).
    let control: FramedConnection
    private let poller: BenchPoller
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    private var messages: [Int]
    private var unflushed: [Int] = []
    private var failures: [String] = []
    private let names = Kind.allCases.map(\.name)
    private static let token = Array(#""token":""#.utf8)

    init(socket: String, count: Int) throws {
        apps = (0..<count).map { "com.example.system\($0)" }
        sessions = Array(repeating: "", count: count)
        receipts = Array(repeating: Array(repeating: 0, count: count), count: Kind.allCases.count)
        made = Array(repeating: Array(repeating: 0, count: count), count: Kind.allCases.count)
        messages = Array(repeating: 0, count: count)
        callsOpen = Array(repeating: true, count: count)
        poller = try BenchPoller()
        control = try FramedConnection(socket: socket)
        calls = try apps.map { _ in try FramedConnection(socket: socket) }
        streams = try apps.map { _ in try FramedConnection(socket: socket) }
        for (i, stream) in streams.enumerated() {
            try poller.add(stream.fd, token: i)
            stream.queue(VarlinkCall(method: "io.scened.App.Attach", parameters: ["app": .string(apps[i])], more: true).encoded())
            guard stream.flush() else { throw BenchError("the daemon closed an attach connection") }
        }
        for (i, c) in calls.enumerated() { try poller.add(c.fd, token: count + i) }
        try poller.add(control.fd, token: 2 * count)
    }

    /// Attaches every app, then asks each for a new scene and waits until all are active.
    func setUp(timeout: Double) throws {
        try pump(timeout: timeout, "attaching") { messages.allSatisfy { $0 >= 2 } }
        for i in apps.indices {
            calls[i].queue(appFrame("io.scened.App.RequestSceneSessionActivation", ["app": .string(apps[i])]))
            unflushed.append(i)
        }
        try flushCalls()
        try pump(timeout: timeout, "requesting scenes") {
            !sessions.contains("") && receipts[Kind.didBecomeActive.rawValue].allSatisfy { $0 > 0 }
        }
    }

    func clearReceipts() {
        for k in receipts.indices {
            receipts[k] = Array(repeating: 0, count: count)
            made[k] = Array(repeating: 0, count: count)
        }
    }

    /// How many apps have read an event of `kind` since `clearReceipts`.
    func received(_ kind: Kind) -> Int { receipts[kind.rawValue].reduce(0) { $0 + ($1 > 0 ? 1 : 0) } }

    /// Each app's receipt of `kind` less `t0`, sorted (apps that have none left out).
    func latencies(_ kind: Kind, since t0: Double) -> [Double] {
        receipts[kind.rawValue].filter { $0 > 0 }.map { $0 - t0 }.sorted()
    }

    /// The first and last engine `time` of `kind` less `wall0` (µs since the epoch), seconds.
    func madeSpan(_ kind: Kind, sinceWall wall0: Int64) -> (first: Double, last: Double) {
        let times = made[kind.rawValue].filter { $0 > 0 }
        return (Double((times.min() ?? wall0) - wall0) / 1e6, Double((times.max() ?? wall0) - wall0) / 1e6)
    }

    /// Sends a call of the system's side now.
    func sendControl(_ method: String, _ parameters: JSONObject) throws {
        control.queue(appFrame(method, parameters))
        guard control.flush() else { throw BenchError("the daemon closed the control connection") }
    }

    // MARK: - The loop

    func pump(timeout: Double, _ what: String, until done: () -> Bool) throws {
        let deadline = now() + timeout
        while !done() {
            guard now() < deadline else {
                throw BenchError("\(what): not done within \(timeout) s (acks \(acksAnswered)/\(acksSent), streams closed \(closedStreams), receipts \(Kind.allCases.map { "\($0): \(received($0))" }.joined(separator: ", ")))")
            }
            try pumpOnce(milliseconds: 1)
        }
    }

    /// One wait on the loop; each connection's messages stamped with the time just before its
    /// read, so that a thousand reads after one wake-up do not share the first one's time.
    func pumpOnce(milliseconds: Int32) throws {
        var ready: [Int] = []
        poller.wait(milliseconds: milliseconds) { ready.append($0) }
        for token in ready {
            let t = now()
            if token < count {
                if !streams[token].read(&scratch, { m in streamMessage(token, m, t) }) { streamEnded(token) }
            } else if token < 2 * count {
                let i = token - count
                if !calls[i].read(&scratch, { m in callReply(i, m) }) { callEnded(i) }
            } else if !control.read(&scratch, { m in controlReply(m) }) {
                poller.remove(control.fd)
                if !expectClosing { failures.append("the control connection closed") }
            }
        }
        try flushCalls()
        if let first = failures.first { throw BenchError("\(first) (\(failures.count) failures)") }
    }

    private func streamEnded(_ i: Int) {
        poller.remove(streams[i].fd)
        closedStreams += 1
        lastClose = now()
        if firstClose == 0 { firstClose = lastClose }
        if !expectClosing { failures.append("\(apps[i])'s attach stream closed") }
    }

    private func callEnded(_ i: Int) {
        poller.remove(calls[i].fd)
        callsOpen[i] = false
        if !expectClosing { failures.append("\(apps[i])'s call connection closed") }
    }

    private func streamMessage(_ i: Int, _ m: UnsafeRawBufferPointer, _ t: Double) {
        if Scan.isError(m) {
            failures.append("\(apps[i])'s Attach ended: \(String(decoding: m.prefix(300), as: UTF8.self))")
            return
        }
        messages[i] += 1
        guard let k = names.firstIndex(where: { Scan.named($0, in: m) }) else { return }
        receipts[k][i] = t
        made[k][i] = Scan.integer(Scan.time, in: m) ?? 0
        let kind = Kind(rawValue: k)!
        guard kind == .didEnterBackground || kind == .willTerminate else { return }
        guard let seq = Scan.integer(Scan.seq, in: m) else {
            failures.append("\(apps[i]): a \(kind) without seq")
            return
        }
        let restoration = kind == .didEnterBackground ? #","restoration":{"json":{"app":\#(i)}}"# : ""
        calls[i].queue(Array(#"{"method":"io.scened.App.Acknowledge","parameters":{"app":"\#(apps[i])","seq":\#(seq)\#(restoration)}}"#.utf8) + [0])
        unflushed.append(i)
        acksSent += 1
    }

    private func callReply(_ i: Int, _ m: UnsafeRawBufferPointer) {
        if sessions[i].isEmpty {
            guard !Scan.isError(m), let session = Scan.string(Scan.session, in: m) else {
                failures.append("RequestSceneSessionActivation for \(apps[i]) failed: \(String(decoding: m.prefix(300), as: UTF8.self))")
                return
            }
            sessions[i] = session
            return
        }
        acksAnswered += 1
        if Scan.isError(m) {
            acksRefused += 1
            failures.append("\(apps[i])'s Acknowledge was refused: \(String(decoding: m.prefix(300), as: UTF8.self))")
        }
    }

    private func controlReply(_ m: UnsafeRawBufferPointer) {
        if Scan.isError(m) {
            controlReplies.append(nil)
            failures.append("a call of the system's side failed: \(String(decoding: m.prefix(300), as: UTF8.self))")
            return
        }
        controlReplies.append(Scan.string(Self.token, in: m) ?? "")
    }

    private func flushCalls() throws {
        for i in unflushed where callsOpen[i] && calls[i].hasOutput {
            if !calls[i].flush() {
                // The daemon went away between the event and its answer: only a stop may do that.
                callEnded(i)
                continue
            }
            lastAckSent = now()
        }
        unflushed.removeAll(keepingCapacity: true)
    }
}
