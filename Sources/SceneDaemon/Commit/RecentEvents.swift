import SceneCore

/// The most recent events, in memory, for Monitor calls that start a little in the past without
/// a trip to the store.
///
/// Bounded in bytes as well as in count: a reconnection's willConnectTo carries the session's
/// restoration data, and 4,096 of them at 16 KiB would hold 64 MiB here, the very payloads the
/// engine leaves in the store. Past `payloadBudget` the oldest events go; a monitor starting
/// before what is kept reads the store's event log, as it does for anything older.
struct RecentEvents {
    private var ring: [LifecycleEvent?]
    private var head = 0          // index of the oldest kept event
    private(set) var count = 0
    let payloadBudget: Int
    /// What the kept events carry beyond their fixed fields (`payloadBytes(of:)`).
    private(set) var payloadBytes = 0

    init(capacity: Int, payloadBudget: Int = .max) {
        ring = Array(repeating: nil, count: max(capacity, 1))
        self.payloadBudget = payloadBudget
    }

    static func payloadBytes(of e: LifecycleEvent) -> Int {
        switch e.detail {
        case .none: 0
        case .connect(let restoration, _, let open): (restoration?.byteCount ?? 0) + (open?.byteCount ?? 0)
        case .discarded(let ids): ids.count * MemoryLayout<SessionID>.stride
        case .task(_, let name): name.utf8.count
        case .terminated(_, let archived): archived.count * MemoryLayout<SessionID>.stride
        case .wake(let wake): wake.identifier.utf8.count + (wake.payload?.utf8.count ?? 0)
        case .open(let payload): payload.byteCount
        }
    }

    var capacity: Int { ring.count }
    var oldestSequence: UInt64? { count == 0 ? nil : ring[head]!.seq }

    mutating func append(_ event: LifecycleEvent) {
        if count == ring.count { dropOldest() }
        ring[(head + count) % ring.count] = event
        count += 1
        payloadBytes += Self.payloadBytes(of: event)
        // The newest event stays, whatever it carries.
        while payloadBytes > payloadBudget && count > 1 { dropOldest() }
    }

    private mutating func dropOldest() {
        payloadBytes -= Self.payloadBytes(of: ring[head]!)
        ring[head] = nil
        head = (head + 1) % ring.count
        count -= 1
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
