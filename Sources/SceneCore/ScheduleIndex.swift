/// The earliest `earliestBegin` of all scheduled tasks, kept without scanning them: a min-heap
/// of (time, key) hints. A replaced or removed schedule leaves its entry behind; entries that no
/// longer match the table are dropped when they reach the top, and the heap is rebuilt when the
/// dropped ones outnumber the live ones, so each change costs O(log n) amortized.
struct ScheduleIndex: Sendable {
    struct Entry: Sendable {
        var time: Timestamp
        var key: ScheduleKey
    }

    private var heap: [Entry] = []

    var count: Int { heap.count }

    mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].time < heap[parent].time else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The earliest entry that still matches `table`, dropping the stale ones above it.
    mutating func earliest(in table: [ScheduleKey: ScheduledTask]) -> Timestamp? {
        if heap.count > 2 * table.count + 32 { rebuild(from: table) }
        while let top = heap.first {
            if table[top.key]?.earliestBegin == top.time { return top.time }
            popTop()
        }
        return nil
    }

    mutating func rebuild(from table: [ScheduleKey: ScheduledTask]) {
        heap = []
        heap.reserveCapacity(table.count)
        for task in table.values { push(Entry(time: task.earliestBegin, key: task.key)) }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < heap.count && heap[left].time < heap[least].time { least = left }
            if right < heap.count && heap[right].time < heap[least].time { least = right }
            if least == parent { return }
            heap.swapAt(parent, least)
            parent = least
        }
    }
}
