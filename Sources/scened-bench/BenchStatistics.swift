import Glibc
import Varlink

// Small helpers of the apps case: a queue of indices, percentiles and medians, and the loop's
// counters (passes, calls, commits) read from GetStatus.

/// A first-in first-out queue of indices.
struct IndexQueue {
    private var items: [Int] = []
    private var head = 0
    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    mutating func append(_ i: Int) { items.append(i) }
    mutating func popFirst() -> Int? {
        guard head < items.count else { return nil }
        let i = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 4096 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return i
    }
}

func percentile<T>(_ sorted: [T], _ q: Double) -> T? {
    guard !sorted.isEmpty else { return nil }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
}

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.isEmpty ? 0 : s[s.count / 2]
}

/// The daemon's loop counters (GetStatus): passes, calls, commits.
func loopCounters(_ daemon: BenchDaemon) -> (passes: Int64, calls: Int64, commits: Int64) {
    guard let client = try? VarlinkClient(path: daemon.socket, timeout: .seconds(10)),
          let loop = (try? client.call("io.scened.Manager.GetStatus", [:]))?["status"]?["loop"] else { return (0, 0, 0) }
    return (loop["passes"]?.intValue ?? 0, loop["calls"]?.intValue ?? 0, loop["commits"]?.intValue ?? 0)
}

/// "N calls per commit, M per pass" between two readings of the loop counters.
func batching(_ a: (passes: Int64, calls: Int64, commits: Int64), _ b: (passes: Int64, calls: Int64, commits: Int64)) -> String {
    let calls = Double(b.calls - a.calls)
    let perCommit = b.commits > a.commits ? calls / Double(b.commits - a.commits) : 0
    let perPass = b.passes > a.passes ? calls / Double(b.passes - a.passes) : 0
    return "\(Int(perCommit.rounded())) calls per commit, \(Int(perPass.rounded())) per pass"
}
