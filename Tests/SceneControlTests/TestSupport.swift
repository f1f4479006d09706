import Glibc
import SceneControl
import Synchronization
import Varlink

/// What a command wrote; thread-safe, because streaming tests read it while a command runs.
final class CapturedOutput: TextOutput, Sendable {
    private let storage = Mutex<String>("")
    /// After this many writes the next one fails like a closed pipe (EPIPE); nil: never.
    private let closeAfter: Int?
    private let writes = Mutex(0)

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

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
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
        for reply in canned(method) {
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

    var calls: [RecordedCall] { transport.calls }
}

/// Runs scenectl in-process against canned replies, in UTC at `testNow`.
func ctl(_ arguments: [String], replies: [String: [Result<JSONObject, VarlinkError>]] = [:],
         environment: [String: String] = [:], existing: Set<String> = [], uid: uid_t = 1000,
         connectError: VarlinkClientError? = nil) -> CtlResult {
    let out = CapturedOutput(), err = CapturedOutput()
    let transport = RecordingTransport(replies)
    var connections: [String] = []
    let context = Context(
        out: out, err: err, environment: { environment[$0] }, uid: uid, exists: { existing.contains($0) },
        connect: { path, _ in
            connections.append(path)
            if let connectError { throw connectError }
            return transport
        },
        now: { testNow }, utc: true)
    let status = SceneCtl.run(arguments, context: context)
    return CtlResult(status: status, out: out.text, err: err.text, transport: transport, connections: connections)
}

/// A fresh directory under /tmp, removed with everything in it by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/scenectl-tests-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed")
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func remove() {
        Self.removeTree(path)
    }

    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR, let dir = opendir(path) {
            var children: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name != "." && name != ".." { children.append(name) }
            }
            closedir(dir)
            for child in children { removeTree(path + "/" + child) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}

/// Runs `body` on a new POSIX thread, so blocking socket code never occupies a Swift
/// concurrency thread; `join()` waits for it.
final class TestThread: Sendable {
    private let thread: Mutex<pthread_t?> = Mutex(nil)

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var id = pthread_t()
        let result = pthread_create(&id, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(result == 0, "pthread_create failed")
        thread.withLock { $0 = id }
    }

    func join() {
        guard let id = thread.withLock({ $0 }) else { return }
        pthread_join(id, nil)
        thread.withLock { $0 = nil }
    }
}

/// A value set on one thread and read on another.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    init(_ value: Value) { storage = Mutex(value) }

    var value: Value { storage.withLock { $0 } }

    func update(_ change: (inout Value) -> Void) {
        storage.withLock { change(&$0) }
    }
}
