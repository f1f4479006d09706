import Dispatch
import Foundation
import Locking
import SceneInterface
import Varlink

/// The second connection: Acknowledge and the app's requests (the first one holds Attach, and a
/// Varlink connection serves one streaming call at a time). Blocking calls run on a private
/// serial queue, so they never block the main actor; connected lazily, dropped on any
/// transport failure (and when the attach connection drops), reconnected on the next call.
final class RequestChannel: @unchecked Sendable {
    private let queue = DispatchQueue(label: "scene-client.requests")
    /// Only touched on `queue`.
    private var client: VarlinkClient?
    private let path: @Sendable () -> String
    private let timeout: Duration

    init(path: @escaping @Sendable () -> String, timeout: Duration) {
        self.path = path
        self.timeout = timeout
    }

    /// Drops the connection (the daemon it went to is gone).
    func reset() {
        queue.async {
            self.client?.close()
            self.client = nil
        }
    }

    func call(_ method: String, _ parameters: JSONObject) async throws -> JSONObject {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONObject, any Error>) in
            send(method, parameters) { continuation.resume(with: $0) }
        }
    }

    /// Queues the call now, so that it goes before any call queued after it (a task's
    /// completion before the Detach that follows); `done` gets the outcome on the queue.
    func send(_ method: String, _ parameters: JSONObject, done: @escaping @Sendable (Result<JSONObject, any Error>) -> Void) {
        queue.async {
            do {
                let client: VarlinkClient
                if let existing = self.client {
                    client = existing
                } else {
                    client = try VarlinkClient(path: self.path(), timeout: self.timeout)
                    self.client = client
                }
                done(.success(try client.call(method, parameters)))
            } catch let error as VarlinkError {
                done(.failure(error))
            } catch {
                self.client?.close()
                self.client = nil
                done(.failure(error))
            }
        }
    }
}

/// What the attach reader shares with the main actor.
struct AttachState: Sendable {
    /// Where a reattach resumes (Attach's since): the sequence number after the last event
    /// handled, or the first one of the first attach.
    var resumeFrom: UInt64?
    /// The last event handed to the main actor; a replayed one up to it is not handed again.
    var lastEnqueued: UInt64?
    /// Attach calls that succeeded; the highest event sequence number read on the current one.
    var generation = 0
    var highestReadInGeneration: UInt64?
    var attached = false
    var detaching = false
    var stopped = false
    /// The reader ended (detached, terminated, or gave up): no answer can go anywhere now.
    var finished = false
    var daemonPid: Int64?
    var reattaches = 0
}

/// What the reader hands to the main actor, in order.
enum Inbound: Sendable {
    case attached(generation: Int, nextSeq: UInt64, reattach: Bool)
    case event(AppEvent)
    /// A reclaim notice (the grace before a memory-pressure disconnect).
    case notice(ReclaimNotice)
    case ended(SceneApplicationEnding)
    case failed(SceneClientError)
}

/// The first connection: the Attach call, read on its own thread. When it drops while the app
/// has not detached (scened restarted), it reattaches with backoff, with since = the last
/// handled event + 1, and skips what it had already handed over: nothing lost, nothing twice.
final class AttachReader: @unchecked Sendable {
    let app: String
    let path: @Sendable () -> String
    let state: Locked<AttachState>
    let requests: RequestChannel
    let continuation: AsyncStream<Inbound>.Continuation
    let connectTimeout: Duration
    let reattachTimeout: Duration
    let log: @Sendable (String) -> Void

    init(app: String, path: @escaping @Sendable () -> String, state: Locked<AttachState>, requests: RequestChannel,
         continuation: AsyncStream<Inbound>.Continuation, connectTimeout: Duration, reattachTimeout: Duration,
         log: @escaping @Sendable (String) -> Void) {
        self.app = app
        self.path = path
        self.state = state
        self.requests = requests
        self.continuation = continuation
        self.connectTimeout = connectTimeout
        self.reattachTimeout = reattachTimeout
        self.log = log
    }

    func start() {
        let thread = Thread { [self] in self.main() }
        thread.name = "scene-client.attach"
        thread.start()
    }

    private enum Outcome {
        case finished
        /// Try again after a pause (the connection failed or dropped).
        case retry(String)
    }

    private func main() {
        var backoff = 0.05
        var outageStart = ContinuousClock.now
        var reported = false
        while true {
            if state.withLock({ $0.stopped }) { return finish(.ended(.detached)) }
            let before = state.withLock { $0.generation }
            let outcome = attachOnce()
            guard case .retry(let why) = outcome else { return }
            if state.withLock({ $0.detaching || $0.stopped }) { return finish(.ended(.detached)) }
            requests.reset()
            let generation = state.withLock { s -> Int in
                s.attached = false
                return s.generation
            }
            if generation != before {
                // That attach worked for a while: a new outage starts now.
                backoff = 0.05
                reported = false
            }
            if !reported {
                reported = true
                outageStart = ContinuousClock.now
                log(generation > 0 ? "connection to scened lost (\(why)): reattaching" : "cannot attach yet (\(why)): retrying")
            }
            let limit = generation > 0 ? reattachTimeout : connectTimeout
            if ContinuousClock.now - outageStart > limit {
                return finish(.failed(.unreachable(path: path(), detail: why)))
            }
            Thread.sleep(forTimeInterval: backoff)
            backoff = min(backoff * 2, 1.0)
        }
    }

    private func finish(_ last: Inbound) {
        state.withLock {
            $0.attached = false
            $0.finished = true
        }
        continuation.yield(last)
        continuation.finish()
    }

    /// One Attach call, read until it ends.
    private func attachOnce() -> Outcome {
        let socket = path()
        let client: VarlinkClient
        do {
            client = try VarlinkClient(path: socket, timeout: .milliseconds(200))
        } catch {
            return .retry(error.description)
        }
        defer { client.close() }
        var parameters: JSONObject = ["app": .string(app)]
        let since = state.withLock { $0.generation > 0 ? $0.resumeFrom : nil }
        if let since { parameters["since"] = .int(Int64(since)) }
        do {
            try client.sendRaw(VarlinkCall(method: AppInterface.name + ".Attach", parameters: parameters, more: true).encoded())
        } catch {
            return .retry("\(error)")
        }
        while true {
            let message: JSONValue
            do {
                message = try client.receiveMessage()
            } catch VarlinkClientError.timedOut {
                if state.withLock({ $0.stopped }) {
                    finish(.ended(.detached))
                    return .finished
                }
                continue
            } catch let error as VarlinkClientError {
                if case .invalidReply = error { return unreadable(error) }
                if case .messageTooLarge = error { return unreadable(error) }
                return .retry("\(error)")
            } catch {
                return .retry("\(error)")
            }
            let reply: VarlinkReply
            do {
                reply = try VarlinkReply(from: message)
            } catch {
                finish(.failed(.attachFailed("malformed reply: \(message)")))
                return .finished
            }
            if let error = reply.varlinkError {
                return ended(by: error)
            }
            if let attached = reply.parameters["attached"] {
                let nextSeq = UInt64(max(attached["nextSeq"]?.intValue ?? 0, 0))
                let (generation, reattach) = state.withLock { s -> (Int, Bool) in
                    let reattach = s.generation > 0
                    s.generation += 1
                    s.highestReadInGeneration = nil
                    s.attached = true
                    s.daemonPid = attached["pid"]?.intValue
                    if s.resumeFrom == nil { s.resumeFrom = nextSeq }
                    if reattach { s.reattaches += 1 }
                    return (s.generation, reattach)
                }
                if reattach { log("reattached to scened as \(app), resuming from event \(since ?? nextSeq)") }
                continuation.yield(.attached(generation: generation, nextSeq: nextSeq, reattach: reattach))
            } else if let object = reply.parameters["event"]?.objectValue, let event = AppEvent(object) {
                let fresh = state.withLock { s -> Bool in
                    s.highestReadInGeneration = max(s.highestReadInGeneration ?? 0, event.seq)
                    if let last = s.lastEnqueued, event.seq <= last { return false }
                    s.lastEnqueued = event.seq
                    return true
                }
                if fresh { continuation.yield(.event(event)) }
            } else if let object = reply.parameters["notice"]?.objectValue, let notice = ReclaimNotice(object) {
                continuation.yield(.notice(notice))
            }
            if !reply.continues {
                // The Attach ended without an error: after Detach.
                finish(.ended(.detached))
                return .finished
            }
        }
    }

    /// A message this client cannot read is not an outage: scened would send the same bytes
    /// again to every reattach (they replay from the same event), and each dropped attach
    /// ends the process for it. The run fails instead of looping.
    private func unreadable(_ error: VarlinkClientError) -> Outcome {
        finish(.failed(.attachFailed("scened sent a message this client cannot read: \(error)")))
        return .finished
    }

    private func ended(by error: VarlinkError) -> Outcome {
        let short = error.name.hasPrefix(AppInterface.name + ".") ? String(error.name.dropFirst(AppInterface.name.count + 1)) : error.name
        let generation = state.withLock { $0.generation }
        switch short {
        case "Terminated":
            finish(.ended(.terminated(reason: error.parameters["reason"]?.stringValue ?? "hung")))
            return .finished
        case "AlreadyAttached" where generation > 0:
            // The daemon has not yet seen this process's previous connection close.
            return .retry("\(app) still attached")
        case "AlreadyAttached":
            finish(.failed(.alreadyAttached(app: app, pid: error.parameters["pid"]?.intValue ?? 0)))
            return .finished
        default:
            finish(.failed(.attachFailed(error.description)))
            return .finished
        }
    }
}
