import Glibc

/// A failure of the system under test, or of the harness, with enough context to act on.
/// Thrown out of a test, swift-testing records it with this description.
public struct TestFailure: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// strerror(`code`): "No such file or directory".
public func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
