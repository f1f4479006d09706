import SceneCore

/// The engine's high-water marks. Stored values only ever grow: a commit with lower ones leaves
/// them as they were.
public struct EngineCounters: Sendable, Equatable {
    public var clock: Timestamp
    /// The sequence number the next event gets.
    public var nextSequence: UInt64
    public var nextSessionNumber: UInt64
    public var nextTaskNumber: UInt64
    /// The number the next queued notification gets ("n…").
    public var nextNotificationNumber: UInt64
    /// The number the next stored Open gets ("o…").
    public var nextOpenNumber: UInt64

    public init(clock: Timestamp, nextSequence: UInt64, nextSessionNumber: UInt64, nextTaskNumber: UInt64,
                nextNotificationNumber: UInt64 = 1, nextOpenNumber: UInt64 = 1) {
        self.nextOpenNumber = nextOpenNumber
        self.clock = clock
        self.nextSequence = nextSequence
        self.nextSessionNumber = nextSessionNumber
        self.nextTaskNumber = nextTaskNumber
        self.nextNotificationNumber = nextNotificationNumber
    }

    /// The engine's current marks.
    public init(_ engine: LifecycleEngine) {
        self.init(clock: engine.clock, nextSequence: engine.nextSequence, nextSessionNumber: engine.nextSessionNumber,
                  nextTaskNumber: engine.nextTaskNumber, nextNotificationNumber: engine.nextNotificationNumber,
                  nextOpenNumber: engine.nextOpenNumber)
    }

    /// Nothing yet: what a new database holds.
    public static let initial = EngineCounters(clock: .zero, nextSequence: 1, nextSessionNumber: 1, nextTaskNumber: 1)
}
