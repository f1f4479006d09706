import Glibc
import Locking
import SceneControl
import ScenedTestSupport
import Varlink

/// What a command wrote; thread-safe, because streaming tests read it while a command runs.
final class CapturedOutput: TextOutput, Sendable {
    private let storage = Locked<String>("")
    /// After this many writes the next one fails like a closed pipe (EPIPE); nil: never.
    private let closeAfter: Int?
    private let writes = Locked(0)

    init(closeAfter: Int? = nil) {
        self.closeAfter = closeAfter
    }

    func write(_ text: String) throws {
        let count = writes.withLock { value in
            value += 1
            return value
        }
        if let closeAfter, count > closeAfter { throw OutputClosed() }
        storage.withLock { $0 += text }
    }

    var text: String { storage.withLock { $0 } }
    var lines: [String] { text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }

    /// Polls until `condition` holds for the text, at most `seconds`.
    func wait(seconds: Double = 5, until condition: (String) -> Bool) -> Bool {
        let deadline = monotonicSeconds() + seconds
        while monotonicSeconds() < deadline {
            if condition(text) { return true }
            usleep(2_000)
        }
        return condition(text)
    }
}

/// One call a command made.
struct RecordedCall: Equatable {
    var method: String
    var parameters: JSONObject
    var more: Bool
}

/// A transport with canned replies per method (short name). A method with no canned reply
/// answers `{}`; a list of several replies is streamed to `callMore` and its first element
/// answers `call`.
final class RecordingTransport: ManagerTransport {
    var replies: [String: [Result<JSONObject, VarlinkError>]]
    private(set) var calls: [RecordedCall] = []
    /// Called before `callMore` hands over reply `index` (streaming tests look at the output).
    var beforeReply: ((_ index: Int) -> Void)?

    init(_ replies: [String: [Result<JSONObject, VarlinkError>]] = [:]) {
        self.replies = replies
    }

    private func canned(_ method: String) -> [Result<JSONObject, VarlinkError>] {
        replies[String(method.split(separator: ".").last!)] ?? [.success([:])]
    }

    func call(_ method: String, _ parameters: JSONObject) throws -> JSONObject {
        calls.append(RecordedCall(method: method, parameters: parameters, more: false))
        return try canned(method)[0].get()
    }

    func callMore(_ method: String, _ parameters: JSONObject, each: (JSONObject) throws -> Bool) throws {
        calls.append(RecordedCall(method: method, parameters: parameters, more: true))
        for (index, reply) in canned(method).enumerated() {
            beforeReply?(index)
            guard try each(try reply.get()) else { return }
        }
    }
}

/// 2024-11-29 16:40:01 UTC, the "now" of every test.
let testNow: UInt64 = 1_732_898_401_000_000

/// The outcome of one scenectl run.
struct CtlResult {
    var status: Int32
    var out: String
    var err: String
    var transport: RecordingTransport
    /// The socket paths connected to (empty when the command never connected).
    var connections: [String]
    /// The pagers the command asked for (none started: output stays captured).
    var pagers: [PagerChoice] = []

    var calls: [RecordedCall] { transport.calls }
}

/// Runs scenectl in-process against canned replies, in UTC at `testNow`.
func ctl(_ arguments: [String], replies: [String: [Result<JSONObject, VarlinkError>]] = [:],
         environment: [String: String] = [:], existing: Set<String> = [], uid: uid_t = 1000,
         connectError: VarlinkClientError? = nil, terminal: Bool = false,
         executables: Set<String> = ["/usr/bin/less"],
         beforeReply: ((_ index: Int, _ outSoFar: String) -> Void)? = nil,
         shouldStop: @escaping () -> Bool = { false }) -> CtlResult {
    let out = CapturedOutput(), err = CapturedOutput()
    let transport = RecordingTransport(replies)
    if let beforeReply { transport.beforeReply = { beforeReply($0, out.text) } }
    var connections: [String] = []
    var pagers: [PagerChoice] = []
    let context = Context(
        out: out, err: err, environment: { environment[$0] }, uid: uid, exists: { existing.contains($0) },
        connect: { path, _ in
            connections.append(path)
            if let connectError { throw connectError }
            return transport
        },
        now: { testNow }, utc: true, shouldStop: shouldStop, stdoutIsTerminal: terminal, variable: { environment[$0] },
        executable: { executables.contains($0) },
        startPager: { choice in
            pagers.append(choice)
            return nil
        })
    let status = SceneCtl.run(arguments, context: context)
    return CtlResult(status: status, out: out.text, err: err.text, transport: transport, connections: connections,
                     pagers: pagers)
}
