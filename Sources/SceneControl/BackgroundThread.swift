import Glibc

/// Hands a value that is not Sendable to exactly one other thread, which alone uses it after.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs `body` on a new detached thread.
func startThread(_ body: @escaping @Sendable () -> Void) throws {
    final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let start = Unmanaged.passRetained(Start(body)).toOpaque()
    let rc = pthread_create(&thread, nil, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        start.body()
        return nil
    }, start)
    guard rc == 0 else {
        Unmanaged<Start>.fromOpaque(start).release()
        throw ControlError(.failure, "cannot start a thread: \(String(cString: strerror(rc)))")
    }
    pthread_detach(thread)
}
