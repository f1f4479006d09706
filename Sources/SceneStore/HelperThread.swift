import Glibc
import SystemdKit

/// Runs one piece of work on a thread of its own while the caller does another; `join()` waits
/// for it and hands back its result (the parallel load of the sessions table).
final class HelperThread<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written once, by the thread before it ends, and read only after
    // pthread_join, which orders the two.
    private var value: Value?
    private var thread: pthread_t?

    /// The work runs on a new thread, or here and now when no thread can be made (it is then
    /// done by the time `join()` is called, as it would be otherwise).
    init(_ body: @escaping @Sendable () -> Value) {
        // The thread holds this object until its work is done; `join` waits for that.
        switch OSThread.start({ self.value = body() }) {
        case .success(let made): thread = made
        case .failure: value = body()
        }
    }

    func join() -> Value {
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
        return value!
    }

    deinit {
        // Never left running: the work may point into memory its caller owns.
        if let thread { pthread_join(thread, nil) }
    }
}

/// A pointer handed to the helper thread, which alone writes through it until joined.
struct UncheckedPointer<Pointee>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Pointee>
    init(_ pointer: UnsafeMutablePointer<Pointee>) { self.pointer = pointer }
}
