import SceneCore
import Testing
@testable import SceneDaemon

/// The machine's shutdown as a booted system delivers it: logind's PrepareForShutdown(true)
/// starts the stop chain, and the service manager's SIGTERM follows, either after the chain
/// (logind waited for scened's delay inhibitor) or during it (no inhibitor: no polkit).
@Suite struct StopMachineShutdownTests {
    let start = Timestamp(microseconds: 1_000_000)
    let timeout = TimeSpan.seconds(20)

    func view(_ seconds: Int64, owes: Bool = false, appsLeft: Bool = false) -> StopMachine.View {
        StopMachine.View(now: start + .seconds(seconds), settled: true, owesAnswers: owes, startedAppsLeft: appsLeft)
    }

    /// The chain of a shutdown through to the inhibitor's release.
    func finishedShutdown() -> StopMachine {
        var stop = StopMachine()
        #expect(stop.begin(now: start, timeout: timeout, forShutdown: true).contains(.holdAll))
        #expect(stop.step(view(0)) == [.terminateStartedApps])
        #expect(stop.step(view(0)) == [.releaseInhibitor])
        return stop
    }

    @Test("SIGTERM after the shutdown's chain (inhibitor released) exits at once")
    func sigtermAfterTheChainExits() {
        var stop = finishedShutdown()
        #expect(stop.begin(now: start + .seconds(1), timeout: timeout, forShutdown: false) == [.exit])
    }

    @Test("a second PrepareForShutdown after the chain changes nothing")
    func secondPrepareChangesNothing() {
        var stop = finishedShutdown()
        #expect(stop.begin(now: start + .seconds(1), timeout: timeout, forShutdown: true) == [])
    }

    @Test("SIGTERM during the shutdown's chain lets the chain finish, then exits; a second SIGTERM stops waiting")
    func sigtermDuringTheChainIsTheFirst() {
        var stop = StopMachine()
        _ = stop.begin(now: start, timeout: timeout, forShutdown: true)
        // The answers are still owed: SIGTERM must neither kill nor exit yet.
        #expect(stop.begin(now: start, timeout: timeout, forShutdown: false) == [])
        #expect(stop.step(view(1, owes: true)) == [])
        #expect(stop.step(view(1)) == [.terminateStartedApps])
        #expect(stop.step(view(1, owes: true, appsLeft: true)) == [])
        #expect(stop.step(view(2)) == [.exit])

        var again = StopMachine()
        _ = again.begin(now: start, timeout: timeout, forShutdown: true)
        _ = again.begin(now: start, timeout: timeout, forShutdown: false)
        #expect(again.begin(now: start, timeout: timeout, forShutdown: false) == [.killLeft, .exit])
    }
}
