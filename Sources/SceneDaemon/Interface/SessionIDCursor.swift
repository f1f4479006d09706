import SceneCore

/// The sessions a listing goes through, in increasing order of id, taken one by one.
///
/// Ids are handed out in sequence, so the sessions alive are usually a dense part of the
/// numbers: a bitmap over them is built in one pass with no sort, is smaller than an array of
/// the ids, and yields them in order as the listing is read (the first piece can go out before
/// the order of the rest is worked out). Where the ids are sparse (most of the numbers handed
/// out discarded since) a sorted array is smaller, and is used instead.
struct SessionIDCursor {
    private enum Storage {
        /// Bit `i` of `words` stands for id `base + i`.
        case bitmap(words: [UInt64], base: UInt64)
        case sorted([SessionID])
    }

    private var storage: Storage
    /// The position of `current`: a bit (bitmap) or an element (sorted).
    private var position = 0
    /// The next id to take; nil once all are taken.
    private(set) var current: SessionID?
    /// How many ids there are in all.
    let count: Int

    init(_ ids: [SessionID]) {
        count = ids.count
        guard var low = ids.first?.rawValue else {
            storage = .sorted([])
            return
        }
        var high = low
        for id in ids {
            low = min(low, id.rawValue)
            high = max(high, id.rawValue)
        }
        let words = (high - low) / 64 + 1
        if words <= UInt64(ids.count) {
            var bits = [UInt64](repeating: 0, count: Int(words))
            for id in ids {
                let i = id.rawValue - low
                bits[Int(i / 64)] |= 1 << (i % 64)
            }
            storage = .bitmap(words: bits, base: low)
        } else {
            storage = .sorted(ids.sorted())
        }
        current = find(from: 0)
    }

    /// Takes the current id and moves to the next one.
    mutating func advance() {
        guard current != nil else { return }
        current = find(from: position + 1)
    }

    /// The first id at or after `start`, with `position` set to it.
    private mutating func find(from start: Int) -> SessionID? {
        switch storage {
        case .sorted(let ids):
            guard start < ids.count else { return nil }
            position = start
            return ids[start]
        case .bitmap(let words, let base):
            var w = start / 64
            guard w < words.count else { return nil }
            // The bits below `start` in its word were taken already.
            var word = words[w] & (~0 << UInt64(start % 64))
            while word == 0 {
                w += 1
                guard w < words.count else { return nil }
                word = words[w]
            }
            position = w * 64 + word.trailingZeroBitCount
            return SessionID(base + UInt64(position))
        }
    }
}
