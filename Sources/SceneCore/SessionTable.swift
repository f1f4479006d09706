/// The engine's sessions by id, as a dictionary would hold them but packed: the sessions in
/// one array (swap-removed, so in no particular order) and their positions by session number
/// (SessionPositions). A dictionary of a million sessions is a hash table kept at most
/// three-quarters full, so about half of its 2²¹ buckets (104 bytes each) are empty: 218 MB
/// where the sessions need 96. Here they take their stride plus 4 bytes of position each, and a
/// lookup is two array reads instead of a hash and a probe.
///
/// Iterates as `(key, value)` pairs, like a dictionary; equality is a dictionary's (order aside).
public struct SessionTable: Sendable, Equatable {
    /// Settable inside the core, in place, by position (an id must not change).
    public internal(set) var values: [SceneSession] = []
    private var positions = SessionPositions()

    public init() {}

    /// Sessions with distinct ids, in any order.
    public init(_ sessions: [SceneSession], name: String = "sessions") throws(LifecycleError) {
        values.reserveCapacity(sessions.count)
        for s in sessions where updateValue(s, forKey: s.id) != nil {
            throw .invalidArgument(name: name, reason: "session \(s.id) appears twice")
        }
    }

    /// Adopts `sessions` as they are, without a copy (the store's load: a million sessions in
    /// id order are never held twice). Ids must be distinct.
    public init(adopting sessions: consuming [SceneSession], name: String = "sessions") throws(LifecycleError) {
        values = sessions
        let duplicate = values.withUnsafeBufferPointer { values in positions.setAll(count: values.count) { values[$0].id } }
        if let duplicate { throw .invalidArgument(name: name, reason: "session \(duplicate) appears twice") }
    }

    public var count: Int { values.count }
    public var isEmpty: Bool { values.isEmpty }
    public var keys: LazyMapSequence<[SceneSession], SessionID> { values.lazy.map(\.id) }

    public mutating func reserveCapacity(_ n: Int) { values.reserveCapacity(n) }

    /// The position of `id` in `values`, if it is here.
    @inline(__always)
    public func index(forKey id: SessionID) -> Int? { positions.position(id) }

    public subscript(id: SessionID) -> SceneSession? {
        get { positions.position(id).map { values[$0] } }
        set {
            if let newValue {
                _ = updateValue(newValue, forKey: id)
            } else {
                _ = removeValue(forKey: id)
            }
        }
    }

    /// Every session in place (restoring: no copy of a million records). `body` must not change ids.
    mutating func updateEach<E: Error>(_ body: (inout SceneSession) throws(E) -> Void) throws(E) {
        for i in values.indices { try body(&values[i]) }
    }

    /// Adds or replaces; returns the session replaced. `value.id` must be `id`.
    @discardableResult
    public mutating func updateValue(_ value: SceneSession, forKey id: SessionID) -> SceneSession? {
        precondition(value.id == id, "session \(value.id) stored as \(id)")
        if let at = positions.position(id) {
            let old = values[at]
            values[at] = value
            return old
        }
        positions.set(id, values.count)
        values.append(value)
        return nil
    }

    @discardableResult
    public mutating func removeValue(forKey id: SessionID) -> SceneSession? {
        guard let at = positions.position(id) else { return nil }
        let last = values.count - 1
        if at != last {
            values.swapAt(at, last)
            positions.set(values[at].id, at)
        }
        positions.set(id, nil)
        return values.removeLast()
    }

    /// Pages of positions held (for tests: a page goes when its last session does).
    var pagesInUse: Int { positions.pageCount }

    public static func == (a: SessionTable, b: SessionTable) -> Bool {
        guard a.count == b.count else { return false }
        return a.values.allSatisfy { b[$0.id] == $0 }
    }
}

extension SessionTable: Sequence {
    public typealias Element = (key: SessionID, value: SceneSession)

    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[SceneSession]>
        public mutating func next() -> Element? { base.next().map { ($0.id, $0) } }
    }

    public func makeIterator() -> Iterator { Iterator(base: values.makeIterator()) }
    public var underestimatedCount: Int { values.count }
}
