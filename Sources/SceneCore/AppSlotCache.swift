/// App slots found by the address of the id's UTF-8 storage, for the restore of a large table:
/// the store hands every session the very string its app record holds, so the address finds
/// the slot that hashing the string would (hashing was a tenth of the restore at a million
/// sessions). A hit is confirmed by comparing the ids, which for one storage is a comparison of
/// two words; any other string (a copy, a small string with no storage) goes to the table.
struct AppSlotCache {
    private var keys: [UInt]
    private var slots: [Int32]
    private let mask: Int

    init(_ records: [AppRecord]) {
        var size = 16
        while size < 2 * records.count { size *= 2 }
        keys = [UInt](repeating: 0, count: size)
        slots = [Int32](repeating: -1, count: size)
        mask = size - 1
        for (slot, record) in records.enumerated() {
            guard let address = Self.address(record.id) else { continue }
            var i = Self.start(address, mask)
            while keys[i] != 0 && keys[i] != address { i = (i + 1) & mask }
            keys[i] = address
            slots[i] = Int32(slot)
        }
    }

    @inline(__always)
    private static func address(_ id: AppID) -> UInt? {
        id.rawValue.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
    }

    @inline(__always)
    private static func start(_ address: UInt, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (address >> 4) &* 0x9E37_79B9_7F4A_7C15 >> 20) & mask
    }

    /// The slot of `id`, from the cache when its storage is a record's, else from `table`.
    @inline(__always)
    func slot(of id: AppID, in table: AppTable) -> Int? {
        if let address = Self.address(id), address != 0 {
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
        return table.slot(of: id)
    }
}
