/// Large byte buffers kept for reuse on the loop thread. A batch's replies to one connection
/// can be hundreds of KiB; glibc serves such sizes with fresh mappings (ProcessMemory fixes its
/// mmap threshold at 128 KiB so that memory goes back to the system), and every fresh mapping
/// is page-faulted in again: at 100k transitions/s that cost a fifth of the daemon's time.
/// Reusing the buffer of the last batch removes the faults; the pool is bounded in count and
/// bytes, so what it keeps from a burst is at most `totalBytes`.
struct BufferPool {
    /// Smaller buffers come from the heap, whose free lists already reuse them.
    var smallest = 64 << 10
    var largestBuffer = 4 << 20
    var totalBytes = 16 << 20
    private var free: [[UInt8]] = []
    private(set) var pooledBytes = 0

    var count: Int { free.count }

    /// An empty buffer with room for at least `capacity` bytes.
    mutating func take(reserving capacity: Int) -> [UInt8] {
        if capacity >= smallest, let i = free.firstIndex(where: { $0.capacity >= capacity }) {
            var buffer = free.remove(at: i)
            pooledBytes -= buffer.capacity
            // Emptied here, not in `give`: by now nobody else can share it (emptying a shared
            // array would allocate a copy).
            buffer.removeAll(keepingCapacity: true)
            return buffer
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(capacity)
        return buffer
    }

    /// Keeps `buffer` (its contents are dead) for a later `take` if it is worth keeping and there
    /// is room; the caller is left with an empty array.
    mutating func give(_ buffer: inout [UInt8]) {
        let capacity = buffer.capacity
        guard capacity >= smallest, capacity <= largestBuffer, pooledBytes + capacity <= totalBytes else {
            buffer = []
            return
        }
        var kept: [UInt8] = []
        swap(&kept, &buffer)
        free.append(kept)
        pooledBytes += capacity
    }
}
