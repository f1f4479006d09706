/// An app's open sessions, in id order: a sorted array, not a `Set`. Ids are handed out in
/// increasing order, so a new session is an append; restoring takes each app's ids as the
/// session table yields them, already in order, with nothing to hash (a `Set` would hash
/// every id of a large table while restoring it).
/// Lookups and removals are binary searches; a removal also moves the ids after it, at most
/// MaxSessionsPerApp of them.
public struct SortedSessionIDs: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral,
    CustomStringConvertible {
    private var ids: [SessionID]

    public init() { ids = [] }

    /// Any ids, in any order, repeats allowed: kept sorted and once each.
    public init<S: Sequence>(_ ids: S) where S.Element == SessionID {
        var list = Array(ids)
        if !Self.isAscending(list) {
            list.sort()
            var kept = 0
            for i in list.indices where kept == 0 || list[i] != list[kept - 1] {
                list[kept] = list[i]
                kept += 1
            }
            list.removeLast(list.count - kept)
        }
        self.ids = list
    }

    public init(arrayLiteral elements: SessionID...) { self.init(elements) }

    private static func isAscending(_ list: [SessionID]) -> Bool {
        var i = 1
        while i < list.count {
            if list[i - 1] >= list[i] { return false }
            i += 1
        }
        return true
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { ids.count }
    public subscript(position: Int) -> SessionID { ids[position] }

    /// Where `id` is, or where it would go to keep the order.
    private func position(of id: SessionID) -> (index: Int, found: Bool) {
        var low = 0, high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if ids[mid] < id { low = mid + 1 } else { high = mid }
        }
        return (low, low < ids.count && ids[low] == id)
    }

    /// Binary search (the `Sequence` method would scan).
    public func contains(_ id: SessionID) -> Bool { position(of: id).found }

    /// Whether it was not there already.
    @discardableResult
    public mutating func insert(_ id: SessionID) -> Bool {
        if ids.last.map({ $0 < id }) ?? true {
            ids.append(id)
            return true
        }
        let (index, found) = position(of: id)
        if found { return false }
        ids.insert(id, at: index)
        return true
    }

    /// The id if it was there.
    @discardableResult
    public mutating func remove(_ id: SessionID) -> SessionID? {
        let (index, found) = position(of: id)
        guard found else { return nil }
        return ids.remove(at: index)
    }

    public var description: String { "[" + ids.map(\.description).joined(separator: ", ") + "]" }
}
