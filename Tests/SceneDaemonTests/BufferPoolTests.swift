import Testing
@testable import SceneDaemon

@Suite struct BufferPoolTests {
    private func buffer(capacity: Int) -> [UInt8] {
        var b = [UInt8](repeating: 7, count: 10)
        b.reserveCapacity(capacity)
        return b
    }

    @Test func reusesAGivenBufferEmptied() {
        var pool = BufferPool()
        var b = buffer(capacity: 200_000)
        let capacity = b.capacity
        pool.give(&b)
        #expect(b.isEmpty && pool.count == 1 && pool.pooledBytes == capacity)
        let again = pool.take(reserving: 150_000)
        #expect(again.isEmpty, "contents of the last use are gone")
        #expect(again.capacity == capacity, "the pooled buffer, not a new one")
        #expect(pool.count == 0 && pool.pooledBytes == 0)
    }

    @Test func takesOnlyABufferLargeEnough() {
        var pool = BufferPool()
        var b = buffer(capacity: 100_000)
        pool.give(&b)
        let bigger = pool.take(reserving: 500_000)
        #expect(bigger.capacity >= 500_000)
        #expect(pool.count == 1, "the small one stays")
    }

    @Test func boundedInSizeAndTotal() {
        var pool = BufferPool()
        pool.totalBytes = 1 << 20
        var small = buffer(capacity: 1_000)
        pool.give(&small)
        var huge = buffer(capacity: pool.largestBuffer + 1)
        pool.give(&huge)
        #expect(pool.count == 0, "too small to be worth it, too large to keep")
        let each = buffer(capacity: 300_000).capacity
        for _ in 0..<10 {
            var b = buffer(capacity: 300_000)
            pool.give(&b)
            #expect(b.isEmpty)
        }
        #expect(pool.count == (1 << 20) / each, "kept until the total would be passed")
        #expect(pool.pooledBytes == pool.count * each)
    }
}
