import Glibc
import Locking

/// Runs `body` on a new POSIX thread, so that blocking socket code never occupies a Swift
/// concurrency thread the other side might need; `join()` waits for it.
public final class TestThread: Sendable {
    private let thread = Locked<pthread_t?>(nil)

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    public init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var id = pthread_t()
        let result = pthread_create(&id, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(result == 0, "pthread_create failed")
        thread.withLock { $0 = id }
    }

    public func join() {
        guard let id = thread.withLock({ $0 }) else { return }
        pthread_join(id, nil)
        thread.withLock { $0 = nil }
    }
}
