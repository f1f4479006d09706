import Testing
@testable import SceneDaemon

/// An interactive client competes for a few of its own gaps between calls, so that one starved
/// by CPU contention (its round trip grown to hundreds of ms) still holds bulk clients to rounds.
@Suite struct ContentionMemoryTests {
    @Test func firstCallGetsTheShortestMemory() {
        #expect(PassScheduler.interactiveMemory(afterGap: nil) == PassScheduler.shortestInteractiveMemory)
    }

    @Test func fastClientsGetTheFloor() {
        #expect(PassScheduler.interactiveMemory(afterGap: 30) == 50_000)
        #expect(PassScheduler.interactiveMemory(afterGap: 12_000) == 50_000)
    }

    @Test func starvedClientsAreRememberedForFourGaps() {
        #expect(PassScheduler.interactiveMemory(afterGap: 20_000) == 80_000)
        #expect(PassScheduler.interactiveMemory(afterGap: 200_000) == 800_000)
    }

    @Test func aHumanPauseIsCappedWithoutOverflow() {
        #expect(PassScheduler.interactiveMemory(afterGap: 250_000) == 1_000_000)
        #expect(PassScheduler.interactiveMemory(afterGap: 60_000_000) == 1_000_000)
        #expect(PassScheduler.interactiveMemory(afterGap: UInt64.max) == 1_000_000)
    }

    /// A client keeping 64 calls in flight has few owed just after a batch of its replies went
    /// out; its recent peak keeps it a bulk client through the whole window.
    @Test(arguments: [8, 64]) func aWindowOf64NeverLooksInteractive(repliesAtOnce: Int) {
        var peak = 0
        var interactiveCalls = 0
        for window in 0..<20 {
            for call in 0..<64 {
                // All its replies out at once: it refills, and the daemon sees 1, 2, … owed.
                // 8 at a time: 57 to 64 owed.
                let owed = repliesAtOnce == 64 ? call + 1 : 57 + call % 8
                peak = ConnectionMachine.recentInFlight(previous: peak, now: window == 0 ? call + 1 : owed)
                if window > 0 && peak <= ConnectionMachine.interactiveWindow { interactiveCalls += 1 }
            }
        }
        #expect(interactiveCalls == 0)
    }

    @Test func aClientThatWaitsIsInteractiveAgainSoon() {
        var peak = 64
        var calls = 0
        while peak > ConnectionMachine.interactiveWindow {
            peak = ConnectionMachine.recentInFlight(previous: peak, now: 1)
            calls += 1
        }
        #expect(calls <= 32)
        // One call in flight at a time: its peak is its one call, at once.
        #expect(ConnectionMachine.recentInFlight(previous: 1, now: 1) == 1)
        #expect(ConnectionMachine.recentInFlight(previous: 0, now: 1) == 1)
        // 16 in flight (the windowed well-behaved client) stays interactive.
        var windowed = 0
        for owed in Array(1...16) + Array(1...16) { windowed = ConnectionMachine.recentInFlight(previous: windowed, now: owed) }
        #expect(windowed <= ConnectionMachine.interactiveWindow)
        // It decays to nothing, never below.
        #expect(ConnectionMachine.recentInFlight(previous: 1, now: 0) == 0)
    }
}
