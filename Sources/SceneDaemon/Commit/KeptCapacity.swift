/// The arrays and sets a batch is gathered in are emptied keeping their room, so that a busy
/// daemon does not reallocate (and fault in) them per batch. But one huge batch (a restart
/// after a long pause suspends every app: a million sessions change at once) would leave them
/// that big for the rest of the daemon's life: 200 MB kept for a million sessions. Room is kept
/// up to what ordinary batches need; beyond it, it goes back to the allocator.
enum KeptCapacity {
    /// Elements whose room is kept: far above a pass's batch under load (a few thousand).
    static let elements = 1 << 14
}

extension Array {
    /// `removeAll`, keeping the room only if it is at most `KeptCapacity.elements`.
    mutating func removeAllKeepingOrdinaryCapacity() {
        removeAll(keepingCapacity: capacity <= KeptCapacity.elements)
    }
}

extension Set {
    mutating func removeAllKeepingOrdinaryCapacity() {
        removeAll(keepingCapacity: capacity <= KeptCapacity.elements)
    }
}
