/// The engine's apps: a table indexed by slot, so that the engine's hot paths reach an app's
/// record without hashing its identifier. Apps are never removed, so a slot never changes.
/// Read like a dictionary from outside (`engine.apps[id]`, `.values`, `for (id, app) in ...`).
public struct AppTable: Sendable, Equatable, RandomAccessCollection {
    public typealias Element = (key: AppID, value: AppRecord)

    var records: [AppRecord] = []
    var slots: [AppID: Int] = [:]

    public var startIndex: Int { 0 }
    public var endIndex: Int { records.count }
    public subscript(position: Int) -> Element { (records[position].id, records[position]) }

    public internal(set) subscript(id: AppID) -> AppRecord? {
        get {
            guard let slot = slots[id] else { return nil }
            return records[slot]
        }
        set {
            // The engine itself writes through slots; this serves tests that build odd states.
            guard let record = newValue else { return }
            if let slot = slots[id] { records[slot] = record } else { _ = insert(record) }
        }
    }

    public static func == (a: AppTable, b: AppTable) -> Bool { a.records == b.records && a.slots == b.slots }

    /// As Dictionary's: each app's identifier with the transformed record.
    public func mapValues<T>(_ transform: (AppRecord) throws -> T) rethrows -> [AppID: T] {
        var out: [AppID: T] = [:]
        out.reserveCapacity(records.count)
        for record in records { out[record.id] = try transform(record) }
        return out
    }

    public var values: [AppRecord] { records }
    public var keys: [AppID] { records.map(\.id) }

    func slot(of id: AppID) -> Int? { slots[id] }

    /// Adds a record (its identifier must be new) and returns its slot.
    mutating func insert(_ record: AppRecord) -> Int {
        let slot = records.count
        records.append(record)
        slots[record.id] = slot
        return slot
    }
}
