import Glibc
import SystemdKit

/// Hands a value that is not Sendable to exactly one other thread, which alone uses it after.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs `body` on a new detached thread.
func startThread(_ body: @escaping @Sendable () -> Void) throws {
    switch OSThread.start(body) {
    case .success(let thread): pthread_detach(thread)
    case .failure(let error): throw ControlError(.failure, "cannot start a thread: \(String(cString: strerror(error.code)))")
    }
}
