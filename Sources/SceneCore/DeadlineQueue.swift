/// A binary min-heap of (time, app) wake-ups. Entries are hints: the engine re-derives an app's
/// real deadline when an entry comes due and drops entries that no longer match, so a state
/// change never has to search the heap.
///
/// Entries due at the same time come out in app-identifier order, so the order of simultaneous
/// timer events depends on the state only, not on the order the deadlines were armed in (a
/// restored engine re-arms them app by app and must emit what the original would have).
struct DeadlineQueue: Sendable {
    struct Entry: Sendable {
        var time: Timestamp
        var app: AppID
        /// The app's slot in the engine's table.
        var slot: Int

        /// Due no later than `other`: earlier, or as early and of a lower app identifier.
        func precedes(_ other: Entry) -> Bool {
            time < other.time || (time == other.time && app <= other.app)
        }
    }

    private var heap: [Entry] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var earliest: Entry? { heap.first }

    mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if heap[parent].precedes(heap[child]) { break }
            heap.swapAt(parent, child)
            child = parent
        }
    }

    mutating func popEarliest() -> Entry? {
        guard !heap.isEmpty else { return nil }
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            let n = heap.count
            while true {
                let left = 2 * parent + 1
                if left >= n { break }
                let right = left + 1
                var smallest = left
                if right < n && !heap[left].precedes(heap[right]) { smallest = right }
                if heap[parent].precedes(heap[smallest]) { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}
