import Glibc
import Locking
import SystemdKit

/// A value shared between the bench's main thread and a client thread.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    init(_ value: Value) { storage = Locked(value) }
    var value: Value { storage.withLock { $0 } }
    func set(_ value: Value) { storage.withLock { $0 = value } }
    func update(_ change: (inout Value) -> Void) { storage.withLock { change(&$0) } }
}

/// A client on a POSIX thread of its own, so that an abusive client and the measured one run
/// side by side. It builds its connections on that thread; it must end soon after `stop`.
final class BenchThread: Sendable {
    let stopRequested = Shared(false)
    let finished = Shared(false)
    private let id: Shared<pthread_t?> = Shared(nil)

    init(_ body: @escaping @Sendable (BenchThread) -> Void) {
        // The thread keeps the object alive until it ends.
        guard case .success(let thread) = OSThread.start({
            body(self)
            self.finished.set(true)
        }) else { preconditionFailure("pthread_create failed") }
        id.set(thread)
    }

    var shouldStop: Bool { stopRequested.value }

    /// Asks the thread to end and waits for it.
    func stop() {
        stopRequested.set(true)
        if let thread = id.value {
            pthread_join(thread, nil)
            id.set(nil)
        }
    }
}
