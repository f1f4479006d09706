import SceneCore

/// The most recent events, in memory, for Monitor calls that start a little in the past without
/// a trip to the store.
struct RecentEvents {
    private var ring: [LifecycleEvent?]
    private var head = 0          // index of the oldest kept event
    private(set) var count = 0

    init(capacity: Int) {
        ring = Array(repeating: nil, count: max(capacity, 1))
    }

    var capacity: Int { ring.count }
    var oldestSequence: UInt64? { count == 0 ? nil : ring[head]!.seq }

    mutating func append(_ event: LifecycleEvent) {
        if count < ring.count {
            ring[(head + count) % ring.count] = event
            count += 1
        } else {
            ring[head] = event
            head = (head + 1) % ring.count
        }
    }

    /// Events with seq ≥ `from`, oldest first, at most `limit`.
    func events(from seq: UInt64, limit: Int) -> [LifecycleEvent] {
        guard count > 0, limit > 0 else { return [] }
        let oldest = ring[head]!.seq
        // Sequence numbers within the ring are consecutive only if no event was dropped between
        // them; they are (every event passes through here), so index arithmetic is exact.
        var start = 0
        if seq > oldest { start = Int(min(UInt64(count), seq - oldest)) }
        var out: [LifecycleEvent] = []
        out.reserveCapacity(min(limit, count - start))
        var i = start
        while i < count && out.count < limit {
            out.append(ring[(head + i) % ring.count]!)
            i += 1
        }
        return out
    }
}
