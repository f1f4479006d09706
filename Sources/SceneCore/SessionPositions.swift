/// A position in a packed array, by session number. Numbers are handed out in order and never
/// reused, so they are dense where sessions live: positions are kept in pages of
/// `pageSize` numbers, a page made when a number in it gets a position and freed when its last
/// one goes (a long-lived daemon that made and discarded millions of sessions keeps only the
/// pages of the ones alive). Numbers far past every page (the store may raise its counter past
/// damage) go to a dictionary instead of pages for all the numbers between.
struct SessionPositions: Sendable {
    static let pageShift = 10
    static let pageSize = 1 << pageShift
    /// Past the last page, a number this many pages further still gets pages; beyond, the dictionary.
    static let maxGrowthPages = 1 << 10

    /// Position + 1 per number of the page; an empty array for a page with none.
    private var pages: [[Int32]] = []
    /// Positions held per page (to free a page when it empties).
    private var held: [Int32] = []
    private var far: [UInt64: Int32] = [:]

    @inline(__always)
    func position(_ id: SessionID) -> Int? {
        let n = id.rawValue
        let page = n >> UInt64(Self.pageShift)
        if page < UInt64(pages.count) {
            let entries = pages[Int(page)]
            guard !entries.isEmpty else { return nil }
            let p = entries[Int(n & UInt64(Self.pageSize - 1))]
            return p > 0 ? Int(p - 1) : nil
        }
        return far[n].map { Int($0 - 1) }
    }

    mutating func set(_ id: SessionID, _ position: Int?) {
        let stored = position.map { Int32($0 + 1) } ?? 0
        let n = id.rawValue
        let page = n >> UInt64(Self.pageShift)
        if page >= UInt64(pages.count) {
            guard stored != 0 else {
                far[n] = nil
                return
            }
            guard page < UInt64(pages.count) + UInt64(Self.maxGrowthPages) else {
                far[n] = stored
                return
            }
            let grow = Int(page) + 1 - pages.count
            pages.append(contentsOf: repeatElement([], count: grow))
            held.append(contentsOf: repeatElement(0, count: grow))
            // Numbers kept aside that the pages now reach move in.
            for (k, p) in far where k >> UInt64(Self.pageShift) < UInt64(pages.count) {
                far[k] = nil
                set(SessionID(k), Int(p - 1))
            }
        }
        let at = Int(page), slot = Int(n & UInt64(Self.pageSize - 1))
        if pages[at].isEmpty {
            guard stored != 0 else { return }
            pages[at] = [Int32](repeating: 0, count: Self.pageSize)
        }
        let old = pages[at][slot]
        pages[at][slot] = stored
        if old == 0 && stored != 0 { held[at] += 1 }
        if old != 0 && stored == 0 {
            held[at] -= 1
            if held[at] == 0 { pages[at] = [] }
        }
    }

    /// Positions 0..<count for the ids `id(0..<count)`, none held yet, in any order: what
    /// `set` one by one gives, but a run of ids on one page (ids in order, as a restore gives
    /// them) is written at once instead of through the nested arrays id by id. Returns the
    /// first id found already held (a duplicate), its position and those after it unset.
    @inline(__always)
    mutating func setAll(count: Int, _ id: (Int) -> SessionID) -> SessionID? {
        let mask = UInt64(Self.pageSize - 1)
        var i = 0
        while i < count {
            let first = id(i)
            if position(first) != nil { return first }
            set(first, i)
            let page = first.rawValue >> UInt64(Self.pageShift)
            i += 1
            // Numbers kept far have no page to write into: one at a time.
            guard page < UInt64(pages.count), !pages[Int(page)].isEmpty else { continue }
            var added: Int32 = 0
            var duplicate: SessionID?
            pages[Int(page)].withUnsafeMutableBufferPointer { slots in
                while i < count {
                    let n = id(i).rawValue
                    guard n >> UInt64(Self.pageShift) == page else { break }
                    let slot = Int(n & mask)
                    guard slots[slot] == 0 else {
                        duplicate = SessionID(n)
                        break
                    }
                    slots[slot] = Int32(i + 1)
                    added += 1
                    i += 1
                }
            }
            held[Int(page)] += added
            if let duplicate { return duplicate }
        }
        return nil
    }

    /// Pages that hold a position.
    var pageCount: Int { pages.count { !$0.isEmpty } }
}
