#if SCENED_PTHREAD_LOCK
import Glibc
#else
import Synchronization
#endif

/// A value behind Synchronization's `Mutex`, with its `withLock`: the project's one lock (the
/// daemon's commit thread and load heartbeat, scenectl's monitor feed, the test support and
/// scened-bench all use it; guarding no value, it is `Locked(())`). A class, so that the lock
/// is shared by reference and never moves.
///
/// Under ThreadSanitizer (`Fuzz/sanitize thread` builds with `-DSCENED_PTHREAD_LOCK`) it is a
/// pthread mutex instead: on Linux `Mutex` locks with futexes inside the uninstrumented
/// standard library, so ThreadSanitizer does not see it and reports every access it guards as
/// a race, and `Mutex` under it can crash the sanitizer's runtime. ThreadSanitizer does see
/// pthread mutexes; both give `withLock` the same meaning, so what it checks (every shared
/// access under the lock) holds for both.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked: the lock is the synchronisation; the value is reached only inside withLock.
#if SCENED_PTHREAD_LOCK
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value and a spare byte: a zero-sized value (`Locked(())`) would share its address with
    /// `mutex`, and ThreadSanitizer would take the exclusive access `body(&value)` makes for a
    /// write of the pointer that another thread reads before it locks (a false race).
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

    public func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.value)
    }
#else
    private let mutex = Mutex<Void>(())
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { _ in try body(&value) }
    }

    /// `withLock` if no other thread holds the lock; nil (and `body` not run) if one does.
    public func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        try mutex.withLockIfAvailable { _ in try body(&value) }
    }
#endif
}
