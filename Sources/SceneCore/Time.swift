/// A point on the engine's clock, in microseconds since the Unix epoch.
///
/// The core never reads a clock: every command carries the time. The daemon derives it from
/// CLOCK_MONOTONIC anchored to the wall clock at start-up, so it never goes backwards within a run
/// and stays meaningful across restarts (stored deadlines keep their sense).
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var microseconds: Int64

    @inlinable public init(microseconds: Int64) { self.microseconds = microseconds }
    public static let zero = Timestamp(microseconds: 0)

    @inlinable public static func < (a: Timestamp, b: Timestamp) -> Bool { a.microseconds < b.microseconds }
    @inlinable public static func + (a: Timestamp, b: TimeSpan) -> Timestamp {
        Timestamp(microseconds: a.microseconds &+ b.microseconds)
    }
    @inlinable public static func - (a: Timestamp, b: TimeSpan) -> Timestamp {
        Timestamp(microseconds: a.microseconds &- b.microseconds)
    }
    @inlinable public static func - (a: Timestamp, b: Timestamp) -> TimeSpan {
        TimeSpan(microseconds: a.microseconds &- b.microseconds)
    }
    public var description: String { "@\(microseconds)us" }
}

/// A length of time in microseconds.
public struct TimeSpan: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var microseconds: Int64

    @inlinable public init(microseconds: Int64) { self.microseconds = microseconds }
    @inlinable public static func seconds(_ s: Int64) -> TimeSpan { TimeSpan(microseconds: s * 1_000_000) }
    @inlinable public static func milliseconds(_ ms: Int64) -> TimeSpan { TimeSpan(microseconds: ms * 1_000) }
    public static let zero = TimeSpan(microseconds: 0)

    @inlinable public static func < (a: TimeSpan, b: TimeSpan) -> Bool { a.microseconds < b.microseconds }
    @inlinable public static func + (a: TimeSpan, b: TimeSpan) -> TimeSpan {
        TimeSpan(microseconds: a.microseconds &+ b.microseconds)
    }
    @inlinable public static func * (a: TimeSpan, k: Int64) -> TimeSpan { TimeSpan(microseconds: a.microseconds * k) }
    public var seconds: Double { Double(microseconds) / 1_000_000 }
    public var description: String { "\(microseconds)us" }
}
