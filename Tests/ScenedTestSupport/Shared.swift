import Locking

/// A value set on one thread and read on another.
public final class Shared<Value: Sendable>: Sendable {
    private let storage: Locked<Value>

    public init(_ value: Value) { storage = Locked(value) }

    public var value: Value { storage.withLock { $0 } }

    public func update(_ change: (inout Value) -> Void) {
        storage.withLock { change(&$0) }
    }
}
