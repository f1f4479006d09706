/// What the reclaim controller saw and did, for charts of a real episode: every change of
/// usage, budget or level, and every reclaim action, each with the event sequence number
/// current at the time (so a chart can start where an operator saw something in the log).
/// Bounded: the oldest entries go first; in memory only, so it starts with the daemon.
public struct PressureHistory: Sendable, Equatable {
    public struct Sample: Sendable, Equatable {
        public var time: Timestamp
        /// The next event's sequence number when the sample was taken.
        public var seq: UInt64
        public var usage: UInt64
        public var budget: UInt64
        public var level: PressureLevel
    }

    public struct Action: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable { case warning, suspend, disconnect, terminate, discard }
        public var time: Timestamp
        public var seq: UInt64
        public var kind: Kind
        /// The session or app acted on (warnings name up to three apps, then how many more).
        public var target: String
        /// Usage when the action was taken.
        public var usage: UInt64
    }

    public let sampleCapacity: Int
    public let actionCapacity: Int
    public private(set) var samples: [Sample] = []
    public private(set) var actions: [Action] = []
    /// Entries dropped because the history was full.
    public private(set) var droppedSamples = 0
    public private(set) var droppedActions = 0

    /// Capacities sized so that the whole history is one reply of a few hundred KiB (at most
    /// about 1 MiB with the longest app ids), far below MaxOutputPerConnection.
    public init(sampleCapacity: Int = 2048, actionCapacity: Int = 1024) {
        self.sampleCapacity = max(sampleCapacity, 2)
        self.actionCapacity = max(actionCapacity, 1)
    }

    /// Records the readings if anything changed since the last sample.
    public mutating func record(time: Timestamp, seq: UInt64, usage: UInt64, budget: UInt64, level: PressureLevel) {
        if let last = samples.last, last.usage == usage, last.budget == budget, last.level == level { return }
        append(&samples, Sample(time: time, seq: seq, usage: usage, budget: budget, level: level),
               capacity: sampleCapacity, dropped: &droppedSamples)
    }

    public mutating func record(_ action: ReclaimAction, time: Timestamp, seq: UInt64, usage: UInt64) {
        let (kind, target): (Action.Kind, String)
        switch action {
        case .memoryWarning(let apps):
            // Bounded: a warning may go to every app, and the history must stay small.
            let named = apps.prefix(3).map(\.rawValue).joined(separator: ",")
            (kind, target) = (.warning, apps.count > 3 ? named + " and \(apps.count - 3) more" : named)
        case .suspend(let app): (kind, target) = (.suspend, app.rawValue)
        case .disconnect(let session): (kind, target) = (.disconnect, session.description)
        case .terminate(let app): (kind, target) = (.terminate, app.rawValue)
        case .discard(let session): (kind, target) = (.discard, session.description)
        }
        append(&actions, Action(time: time, seq: seq, kind: kind, target: target, usage: usage),
               capacity: actionCapacity, dropped: &droppedActions)
    }

    /// The samples and actions from sequence number `seq` on, with the sample in force at that
    /// point first, so that a chart starts at the right height.
    public func since(_ seq: UInt64) -> (samples: [Sample], actions: [Action]) {
        let start = samples.firstIndex { $0.seq >= seq } ?? samples.endIndex
        let from = start > samples.startIndex && (start == samples.endIndex || samples[start].seq > seq) ? start - 1 : start
        return (Array(samples[from...]), actions.filter { $0.seq >= seq })
    }

    private func append<T>(_ list: inout [T], _ item: T, capacity: Int, dropped: inout Int) {
        if list.count >= capacity {
            // Drop an eighth at once: amortised O(1) without a ring's index arithmetic.
            let excess = max(capacity / 8, 1)
            list.removeFirst(excess)
            dropped += excess
        }
        list.append(item)
    }
}
