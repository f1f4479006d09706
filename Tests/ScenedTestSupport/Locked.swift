import Glibc

/// A value behind a pthread mutex, with `Mutex`'s `withLock`. The test support uses it instead
/// of Synchronization's `Mutex` because on Linux that one locks inside the uninstrumented
/// standard library, so ThreadSanitizer does not see it and reports every access it guards as
/// a race (`Fuzz/sanitize` runs the suite under ThreadSanitizer); pthread mutexes it sees.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        // Heap-allocated: a pthread mutex must not move, and a stored property may.
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
