import Foundation
import Glibc
import Locking
import ScenedTestSupport
import Varlink

/// A stand-in for scened's io.scened.App side: it serves an Attach with a scripted list of
/// events and records every other call, so that SceneClient can be handed events on demand,
/// the system's causes and a shutdown among them, and its answers examined as they were sent.
final class FakeAppDaemon: @unchecked Sendable {
    struct Call: Sendable {
        var method: String
        var parameters: JSONObject
    }

    let path: String
    private let listener: Int32
    private let events: [JSONObject]
    /// Refuse the first answer carrying state with LimitExceeded, as scened does an oversize one.
    private let refuseStateOnce: Bool
    /// Messages sent as they are after the scripted events (a malformed one, say).
    private let rawTail: [String]
    /// The reply to a method (its short name): parameters, or an error with "error" set.
    private let replies: [String: JSONObject]
    private let attachCount = Locked(0)
    private let recorded = Locked<[Call]>([])
    /// The connections open now, and whether stop() ran. A descriptor is shut down only while
    /// listed and unlisted before it is closed: its number may be reused at once elsewhere in
    /// the test process (another test's connection).
    private let open = Locked<(fds: Set<Int32>, stopped: Bool)>(([], false))
    private let refused = Locked(false)

    var calls: [Call] { recorded.withLock { $0 } }
    /// How many Attach calls came.
    var attaches: Int { attachCount.withLock { $0 } }

    init(directory: String, events: [JSONObject], refuseStateOnce: Bool = false, rawTail: [String] = [],
         replies: [String: JSONObject] = [:]) throws {
        self.replies = replies
        path = directory + "/fake-scened.sock"
        self.events = events
        self.refuseStateOnce = refuseStateOnce
        self.rawTail = rawTail
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket: errno \(errno)") }
        let bound = withUnixAddress(path) { bind(listener, $0, $1) }
        guard bound == 0, listen(listener, 8) == 0 else { throw TestFailure("bind/listen \(path): errno \(errno)") }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Ends every connection and the listener (the threads end with them).
    func stop() {
        open.withLock {
            guard !$0.stopped else { return }
            $0.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for fd in $0.fds { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { break }
            let kept = open.withLock { o -> Bool in
                guard !o.stopped else { return false }
                o.fds.insert(fd)
                return true
            }
            guard kept else {
                close(fd)
                break
            }
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
        // Shut down by stop(), which will not touch it again.
        close(listener)
    }

    private func serve(_ fd: Int32) {
        defer {
            open.withLock { _ = $0.fds.remove(fd) }
            close(fd)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            while let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeFirst(end + 1)
                guard case .object(let call)? = try? JSONParser.parse(message), handle(call, fd) else { return }
            }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            buffer += chunk[..<n]
        }
    }

    /// false: the connection is to end.
    private func handle(_ call: JSONObject, _ fd: Int32) -> Bool {
        let method = call["method"]?.stringValue ?? ""
        let parameters = call["parameters"]?.objectValue ?? [:]
        if method == "io.scened.App.Attach" {
            var replies: [JSONObject] = [["parameters": ["attached": [
                "app": parameters["app"] ?? "", "pid": .int(Int64(getpid())), "nextSeq": 1,
                "deadlines": ["didEnterBackground": 5_000_000, "willTerminate": 5_000_000, "backgroundTaskExpiration": 5_000_000],
            ]], "continues": true]]
            attachCount.withLock { $0 += 1 }
            for e in events { replies.append(["parameters": ["event": .object(e)], "continues": true]) }
            guard replies.allSatisfy({ send($0, fd) }) else { return false }
            return rawTail.allSatisfy { sendBytes(Array($0.utf8) + [0], fd) }
        }
        if method == "org.varlink.service.GetInterfaceDescription" {
            // Clients that build their calls from the text (Python's varlink) ask for it first.
            let name = parameters["interface"]?.stringValue ?? ""
            guard let text = try? String(contentsOfFile: Self.interfaceDirectory + "/\(name).varlink", encoding: .utf8) else {
                return send(["error": "org.varlink.service.InterfaceNotFound", "parameters": ["interface": .string(name)]], fd)
            }
            return send(["parameters": ["description": .string(text)]], fd)
        }
        recorded.withLock { $0.append(Call(method: method, parameters: parameters)) }
        let carriesState = parameters["restoration"] != nil || parameters["restorations"] != nil
        if refuseStateOnce, carriesState, !refused.withLock({ $0 }) {
            refused.withLock { $0 = true }
            return send(["error": "io.scened.Manager.LimitExceeded",
                         "parameters": ["limit": "MaxMessageSize", "maximum": 4096, "message": "too large"]], fd)
        }
        let short = String(method.split(separator: ".").last ?? "")
        if let scripted = replies[short] {
            return send(scripted["error"] != nil ? scripted : ["parameters": .object(scripted)], fd)
        }
        guard send(["parameters": [:]], fd) else { return false }
        if method == "io.scened.App.Detach" {
            // The Attach call ends with the attachment, as scened ends it.
            open.withLock { for other in $0.fds where other != fd { shutdown(other, Int32(SHUT_RDWR)) } }
        }
        return true
    }

    /// interfaces/ of this package, from this file's path (Tests/SceneClientTests/…).
    static let interfaceDirectory: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/interfaces"
    }()

    private func send(_ reply: JSONObject, _ fd: Int32) -> Bool {
        sendBytes(JSONValue.object(reply).serialized() + [0], fd)
    }

    private func sendBytes(_ bytes: [UInt8], _ fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// One event of the script: microsecond times, a deadline ten minutes away when `bounded`
    /// (far beyond any wait for the main actor, so no answer counts as an overrun).
    static func event(_ seq: Int64, _ name: String, _ session: String?, state: String, cause: String,
                      bounded: Bool = false, extra: JSONObject = [:]) -> JSONObject {
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        var e: JSONObject = ["seq": .int(seq), "time": .int(now), "event": .string(name), "app": "org.example.fake",
                             "state": .string(state), "appState": "active", "cause": .string(cause)]
        if let session {
            e["session"] = .string(session)
            e["scene"] = 1
        }
        if bounded { e["deadline"] = .int(now + 600_000_000) }
        for (key, value) in extra { e[key] = value }
        return e
    }
}
