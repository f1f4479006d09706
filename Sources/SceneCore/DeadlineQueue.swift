/// A binary min-heap of (time, app) wake-ups. Entries are hints: the engine re-derives an app's
/// real deadline when an entry comes due and drops entries that no longer match, so a state
/// change never has to search the heap.
struct DeadlineQueue: Sendable {
    struct Entry: Sendable {
        var time: Timestamp
        var app: AppID
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
            if heap[parent].time <= heap[child].time { break }
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
                if right < n && heap[right].time < heap[left].time { smallest = right }
                if heap[parent].time <= heap[smallest].time { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}
