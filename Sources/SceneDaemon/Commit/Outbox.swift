import Varlink

/// Everything held until its batch commits, in one place: the replies of each connection and
/// the journal entries about a batch still being gathered. (Monitor events need no holding:
/// they are made from a batch only once it is committed.) Each entry is tagged with the batch
/// being gathered when it was made; settling a batch releases, in order, what is tagged with
/// it or an earlier one. No I/O: the server writes the replies, the logger the entries.
final class Outbox {
    /// One connection's replies for one batch, framed and concatenated.
    struct Replies {
        var batch: UInt64
        var bytes: [UInt8]
        var count: Int
    }

    /// A journal entry that takes its place among a batch's events once the batch commits:
    /// `position` events of the batch come before it.
    struct HeldEntry {
        var batch: UInt64
        var position: Int
        var entry: LogEntry
    }

    private var replies: [Int: [Replies]] = [:]
    /// Connections with replies held, in the order they first held one since the last release.
    private var waiting: [Int] = []
    private var inWaiting = Set<Int>()
    private var entries: [HeldEntry] = []
    /// The size of each connection's last released batch of replies: the next one is likely as
    /// big, and reserving it at once spares the doublings (each a fresh mapping above glibc's
    /// mmap threshold, page-faulted in and copied) of a buffer grown from empty.
    private var lastSize: [Int: Int] = [:]
    /// Buffers of released replies come back here once written, for the next batch.
    private var pool = BufferPool()

    // MARK: Replies

    /// Appends one framed reply for `connection` to `batch`; returns its size. `build` writes
    /// one object; `expected` is what the caller knows it may write (a listing's piece).
    @discardableResult
    func holdReply(connection: Int, batch: UInt64, expected: Int = 0, _ build: (inout JSONWriter) -> Void) -> Int {
        var list = replies.removeValue(forKey: connection) ?? []
        if inWaiting.insert(connection).inserted { waiting.append(connection) }
        if list.last?.batch != batch {
            let hint = min(max(lastSize[connection] ?? 0, expected), Self.largestHint)
            list.append(Replies(batch: batch, bytes: pool.take(reserving: hint), count: 0))
        }
        let last = list.count - 1
        // Swapped out so the buffer stays uniquely referenced (no copy on append).
        var writer = JSONWriter()
        swap(&writer.bytes, &list[last].bytes)
        let before = writer.bytes.count
        build(&writer)
        writer.bytes.append(0)
        let size = writer.bytes.count - before
        swap(&writer.bytes, &list[last].bytes)
        list[last].count += 1
        replies[connection] = list
        return size
    }

    /// The batch of `connection`'s last held reply, if any (a stream message goes behind it).
    func lastBatch(connection: Int) -> UInt64? { replies[connection]?.last?.batch }

    func hasReplies(connection: Int) -> Bool { replies[connection] != nil }

    /// Forgets a connection's replies (the peer is gone, or is being cut off).
    func dropReplies(connection: Int) {
        replies[connection] = nil
        lastSize[connection] = nil
    }

    /// A hint is only a guess: never reserve more than this up front.
    static let largestHint = 4 << 20

    /// A written buffer, empty now, for the next batch's replies (the caller's only reference).
    func recycle(_ buffer: inout [UInt8]) { pool.give(&buffer) }

    var pooledBytes: Int { pool.pooledBytes }

    /// Releases every reply of batches up to `through`, connection by connection, each
    /// connection's in order: `deliver(connection, bytes, count)`. With `failure`, every such
    /// reply becomes that error instead (none of the changes it described was kept).
    func releaseReplies(through: UInt64, failure: VarlinkError?,
                        deliver: (_ connection: Int, _ bytes: [UInt8], _ count: Int, _ heldBytes: Int) -> Void) {
        guard !waiting.isEmpty else { return }
        var errorBytes: [UInt8] = []
        if let failure {
            var w = JSONWriter()
            w.varlinkError(failure)
            w.bytes.append(0)
            errorBytes = w.bytes
        }
        // Taken out first, delivered after: delivering may hold new replies (a stream that
        // ended lets the connection's next calls run), which must not be mixed up with these.
        var deliveries: [(Int, [UInt8], Int, Int)] = []
        let list = waiting
        waiting.removeAll(keepingCapacity: true)
        inWaiting.removeAll(keepingCapacity: true)
        for connection in list {
            guard var held = replies.removeValue(forKey: connection) else { continue }
            var released = 0
            while released < held.count, held[released].batch <= through {
                let r = held[released]
                if failure == nil {
                    lastSize[connection] = r.bytes.count
                    deliveries.append((connection, r.bytes, r.count, r.bytes.count))
                } else {
                    var out: [UInt8] = []
                    out.reserveCapacity(errorBytes.count * r.count)
                    for _ in 0..<r.count { out += errorBytes }
                    deliveries.append((connection, out, r.count, r.bytes.count))
                }
                released += 1
            }
            held.removeFirst(released)
            if !held.isEmpty {
                replies[connection] = held
                waiting.append(connection)
                inWaiting.insert(connection)
            }
        }
        // Each buffer is moved out before delivery so that the receiver holds the only
        // reference and can adopt it without a copy.
        for i in deliveries.indices {
            let (connection, _, count, heldBytes) = deliveries[i]
            var bytes: [UInt8] = []
            swap(&bytes, &deliveries[i].1)
            deliver(connection, bytes, count, heldBytes)
        }
    }

    // MARK: Journal entries

    func holdEntry(batch: UInt64, position: Int, _ entry: LogEntry) {
        entries.append(HeldEntry(batch: batch, position: position, entry: entry))
    }

    /// The entries of batches up to `through`, in the order they were held.
    func releaseEntries(through: UInt64) -> [HeldEntry] {
        guard let first = entries.first, first.batch <= through else { return [] }
        let due = entries.prefix { $0.batch <= through }
        entries.removeFirst(due.count)
        return Array(due)
    }
}
