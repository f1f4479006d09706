/// A JSON object that keeps its members in insertion order.
///
/// Small objects dominate Varlink traffic, so members live in an array and lookups are linear.
/// Objects with more than `indexThreshold` members also get a hash index, so that hostile
/// input with thousands of keys cannot make lookups (and the parser's duplicate check) quadratic.
///
/// Equality ignores member order, as JSON object semantics do.
public struct JSONObject: Sendable {
    public typealias Element = (key: String, value: JSONValue)

    /// One member. Storage uses a struct rather than the `Element` tuple because tuple types
    /// have no static metadata: every array allocation would look it up at run time.
    struct Member: Sendable {
        var key: String
        var value: JSONValue
    }

    /// Storage in insertion order; internal so the writer can index it without copying pairs.
    private(set) var members: [Member]
    private var index: [String: Int]?

    static let indexThreshold = 12

    public init() {
        members = []
    }

    public init(minimumCapacity: Int) {
        members = []
        members.reserveCapacity(minimumCapacity)
    }

    /// Builds an object from pairs; a repeated key keeps its first position and its last value.
    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        self.init(minimumCapacity: pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    /// Builds an object from pairs; a repeated key keeps its first position and its last value.
    public init(_ pairs: [(String, JSONValue)]) {
        self.init(minimumCapacity: pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }
    public var values: [JSONValue] { members.map(\.value) }

    /// Reading gives the member's value; assigning `nil` removes the member, assigning a value
    /// replaces it in place or appends it at the end.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let i = position(of: key) else { return nil }
            return members[i].value
        }
        set {
            if let newValue {
                if let i = position(of: key) {
                    members[i].value = newValue
                } else {
                    appendNew(key, newValue)
                }
            } else {
                removeValue(forKey: key)
            }
        }
    }

    public func contains(key: String) -> Bool {
        position(of: key) != nil
    }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let i = position(of: key) else { return nil }
        let removed = members.remove(at: i).value
        index = nil
        if members.count > Self.indexThreshold { rebuildIndex() }
        return removed
    }

    /// Appends a member the caller knows to be absent (the parser checks with `contains` first).
    mutating func appendNew(_ key: String, _ value: JSONValue) {
        members.append(Member(key: key, value: value))
        if index != nil {
            index![key] = members.count - 1
        } else if members.count > Self.indexThreshold {
            rebuildIndex()
        }
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        for i in members.indices where members[i].key == key {
            return i
        }
        return nil
    }

    private mutating func rebuildIndex() {
        var built = [String: Int](minimumCapacity: members.count)
        for (i, member) in members.enumerated() { built[member.key] = i }
        index = built
    }
}

extension JSONObject: Sequence {
    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[Member]>

        public mutating func next() -> Element? {
            base.next().map { ($0.key, $0.value) }
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(base: members.makeIterator())
    }

    public var underestimatedCount: Int { members.count }
}

extension JSONObject: Equatable {
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        // Keys are unique, so equal counts plus every lhs member matching in rhs means equal sets.
        guard lhs.count == rhs.count else { return false }
        for member in lhs.members where rhs[member.key] != member.value {
            return false
        }
        return true
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// A repeated key keeps its first position and its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(minimumCapacity: elements.count)
        for (key, value) in elements { self[key] = value }
    }
}

extension JSONObject: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { JSONValue.object(self).serializedString() }
}
