/// App slots found by the address of the id's UTF-8 storage, for the restore of a large table:
/// the store hands every session one of a few strings per app (its app record's, or the copy
/// its loading thread read with), so the address finds the slot without hashing the string
/// for every session. A hit is confirmed by comparing the ids, which for one storage is a
/// comparison of two words; a miss goes to the table, and the address it resolved is kept for
/// the next session that holds the same string.
struct AppSlotCache {
    private var keys: [UInt]
    private var slots: [Int32]
    private let mask: Int
    /// Addresses kept; at most half the table, so that a probe always ends.
    private var used = 0

    init(_ records: [AppRecord]) {
        var size = 64
        while size < 8 * records.count { size *= 2 }
        keys = [UInt](repeating: 0, count: size)
        slots = [Int32](repeating: -1, count: size)
        mask = size - 1
        for (slot, record) in records.enumerated() {
            if !Self.isSmall(record.id), let address = Self.address(record.id) { keep(address, slot) }
        }
    }

    private mutating func keep(_ address: UInt, _ slot: Int) {
        guard address != 0, 2 * (used + 1) <= keys.count else { return }
        var i = Self.start(address, mask)
        while keys[i] != 0 && keys[i] != address { i = (i + 1) & mask }
        if keys[i] == 0 { used += 1 }
        keys[i] = address
        slots[i] = Int32(slot)
    }

    @inline(__always)
    private static func address(_ id: AppID) -> UInt? {
        id.rawValue.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
    }

    @inline(__always)
    private static func start(_ address: UInt, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (address >> 4) &* 0x9E37_79B9_7F4A_7C15 >> 20) & mask
    }

    /// The slot of `id`: from the cache when its storage has been seen, else from `table`.
    @inline(__always)
    mutating func slot(of id: AppID, in table: AppTable) -> Int? {
        let address = Self.address(id) ?? 0
        if address != 0 {
            var i = Self.start(address, mask)
            while keys[i] != 0 {
                if keys[i] == address {
                    let slot = Int(slots[i])
                    if table.records[slot].id == id { return slot }
                    break
                }
                i = (i + 1) & mask
            }
        }
        let slot = table.slot(of: id)
        // A string without storage of its own (a small one) is read through a temporary
        // whose address means nothing after: only an id that has storage is kept.
        if let slot, address != 0, !Self.isSmall(id) { keep(address, slot) }
        return slot
    }

    /// Small strings (up to 15 UTF-8 bytes) live in the String value itself.
    @inline(__always)
    private static func isSmall(_ id: AppID) -> Bool { id.rawValue.utf8.count <= 15 }
}
