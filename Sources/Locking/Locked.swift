import Glibc

/// A value behind a pthread mutex, with `Mutex`'s `withLock`: the project's one lock (the
/// daemon's commit thread and load heartbeat, scenectl's monitor feed, the test support and
/// scened-bench all use it; guarding no value, it is `Locked(())`).
///
/// Not Synchronization's `Mutex`, on purpose: on Linux that one locks with futexes inside the
/// uninstrumented standard library, so ThreadSanitizer does not see it and reports every access
/// it guards as a race (it did, when LoadHeartbeat used it); `Fuzz/sanitize` runs the suite
/// under ThreadSanitizer, which does see pthread mutexes.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked: the mutex itself is the synchronisation.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value and a spare byte: a zero-sized value (`Locked(())`) would share its address with
    /// `mutex`, and ThreadSanitizer took the exclusive access `body(&value)` makes for a write
    /// of the pointer that another thread reads before it locks (a false race, seen in CI).
    private var storage: (value: Value, padding: UInt8)

    public init(_ value: Value) {
        storage = (value, 0)
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
        return try body(&storage.value)
    }
}
