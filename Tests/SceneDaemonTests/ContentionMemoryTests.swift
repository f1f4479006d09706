import Testing
@testable import SceneDaemon

/// An interactive client competes for a few of its own gaps between calls, so that one starved
/// by CPU contention (its round trip grown to hundreds of ms) still holds bulk clients to rounds.
@Suite struct ContentionMemoryTests {
    @Test func firstCallGetsTheShortestMemory() {
        #expect(VarlinkServer.interactiveMemory(afterGap: nil) == VarlinkServer.shortestInteractiveMemory)
    }

    @Test func fastClientsGetTheFloor() {
        #expect(VarlinkServer.interactiveMemory(afterGap: 30) == 50_000)
        #expect(VarlinkServer.interactiveMemory(afterGap: 12_000) == 50_000)
    }

    @Test func starvedClientsAreRememberedForFourGaps() {
        #expect(VarlinkServer.interactiveMemory(afterGap: 20_000) == 80_000)
        #expect(VarlinkServer.interactiveMemory(afterGap: 200_000) == 800_000)
    }

    @Test func aHumanPauseIsCappedWithoutOverflow() {
        #expect(VarlinkServer.interactiveMemory(afterGap: 250_000) == 1_000_000)
        #expect(VarlinkServer.interactiveMemory(afterGap: 60_000_000) == 1_000_000)
        #expect(VarlinkServer.interactiveMemory(afterGap: UInt64.max) == 1_000_000)
    }
}
