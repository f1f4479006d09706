import Glibc

/// A thread of the operating system running one closure (pthread_create): the one place
/// where a daemon's closure is handed to C as a thread's argument.
public enum OSThread {
    /// Starts `body` on a new thread, joinable with `pthread_join`; nil and the error of
    /// pthread_create when it could not start.
    public static func start(_ body: @escaping @Sendable () -> Void) -> Result<pthread_t, OSThreadError> {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let r = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard r == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return .failure(OSThreadError(code: r))
        }
        return .success(thread)
    }

    /// Starts `body` on a thread nobody joins; false when it could not start.
    @discardableResult
    public static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard case .success(let thread) = start(body) else { return false }
        pthread_detach(thread)
        return true
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

public struct OSThreadError: Error, Equatable {
    public let code: Int32
}
