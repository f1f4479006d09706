import SceneCore
import Testing
@testable import SceneDaemon

/// How a started app's measured memory is charged: its base learned with no scene, the rest
/// split evenly among its live scenes, readings held back after a reclaim until the freed
/// memory shows.
@Suite struct MemorySharesTests {
    let mail = AppID("com.example.mail")!
    let s1 = SessionID(1), s2 = SessionID(2)
    let mib: UInt64 = 1 << 20

    func t(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    @Test func theBaseIsLearnedWithNoSceneAndTheRestSplitEvenly() {
        var shares = MemoryShares()
        #expect(shares.reading(mail, total: 20 * mib, live: [], declaredBase: 0, now: t(0)) == [.setAppFootprint(mail, 20 * mib)])
        let commands = shares.reading(mail, total: 220 * mib, live: [(s1, 0), (s2, 0)], declaredBase: 20 * mib, now: t(1))
        #expect(commands == [.setFootprint(s1, 100 * mib), .setFootprint(s2, 100 * mib)])
        #expect(shares.measuredTotal.bytes == 220 * mib && shares.measuredTotal.apps == 1)
    }

    @Test func smallChangesCommitNothing() {
        var shares = MemoryShares()
        _ = shares.reading(mail, total: 20 * mib, live: [], declaredBase: 0, now: t(0))
        #expect(shares.reading(mail, total: 20 * mib + 4096, live: [], declaredBase: 20 * mib, now: t(1)) == [])
        #expect(shares.reading(mail, total: 120 * mib + 8192, live: [(s1, 100 * mib)], declaredBase: 20 * mib, now: t(2)) == [])
        #expect(shares.reading(mail, total: 130 * mib, live: [(s1, 100 * mib)], declaredBase: 20 * mib, now: t(3)) == [.setFootprint(s1, 130 * mib - (20 * mib + 4096))], "the base learned last (with no scene) counts")
    }

    @Test func withoutAReadingAtBaseTheDeclaredBaseIsUsedNeverAboveTheTotal() {
        var shares = MemoryShares()
        #expect(shares.reading(mail, total: 110 * mib, live: [(s1, 0)], declaredBase: 10 * mib, now: t(0)) == [.setFootprint(s1, 100 * mib)])
        var small = MemoryShares()
        #expect(small.reading(mail, total: 5 * mib, live: [(s1, 0)], declaredBase: 10 * mib, now: t(0))
                == [.setAppFootprint(mail, 5 * mib)], "the base is capped at the total; nothing left for the scene (it already has 0)")
    }

    @Test func afterAReclaimReadingsWaitForTheFreedMemoryToShow() {
        var shares = MemoryShares()
        _ = shares.reading(mail, total: 20 * mib, live: [], declaredBase: 0, now: t(0))
        _ = shares.reading(mail, total: 220 * mib, live: [(s1, 0), (s2, 0)], declaredBase: 20 * mib, now: t(1))
        shares.reclaimed(mail, bytes: 100 * mib, until: t(5_000))
        #expect(shares.awaitingRelease)
        // Not freed yet: charging s2 with everything would make the policy take s2 too.
        #expect(shares.reading(mail, total: 219 * mib, live: [(s2, 100 * mib)], declaredBase: 20 * mib, now: t(100)) == [])
        #expect(shares.awaitingRelease)
        // Freed (half the share is enough: allocators keep some).
        #expect(shares.reading(mail, total: 150 * mib, live: [(s2, 100 * mib)], declaredBase: 20 * mib, now: t(200))
                == [.setFootprint(s2, 130 * mib)])
        #expect(!shares.awaitingRelease)
    }

    @Test func theHoldEnds() {
        var shares = MemoryShares()
        _ = shares.reading(mail, total: 120 * mib, live: [(s1, 100 * mib), (s2, 0)], declaredBase: 20 * mib, now: t(0))
        shares.reclaimed(mail, bytes: 50 * mib, until: t(1_000))
        #expect(shares.reading(mail, total: 120 * mib, live: [(s1, 100 * mib)], declaredBase: 20 * mib, now: t(999)) == [])
        #expect(shares.reading(mail, total: 120 * mib, live: [(s1, 100 * mib)], declaredBase: 20 * mib, now: t(1_000)) == [],
                "the hold is over; the reading agrees with s1's figure already")
        #expect(!shares.awaitingRelease)
        shares.forget(mail)
        #expect(shares.measuredTotal.apps == 0)
    }
}
