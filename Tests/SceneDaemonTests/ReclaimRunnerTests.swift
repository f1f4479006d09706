import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore
import SystemdKit

@Suite("ReclaimRunner: the daemon's sources into SceneCore's controller")
struct ReclaimRunnerTests {
    @Test("a PSI source's level is an external reading; the sources are reported")
    func psiCounts() throws {
        let host = EngineHost(engine: LifecycleEngine(), clock: DaemonClock(), writer: nil)
        let runner = ReclaimRunner(host: host, logger: JournalLogger(level: .emerg, toJournal: false),
                                   policy: ReclaimPolicy(configuration: ReclaimConfiguration()), budget: 1000,
                                   watermarks: Watermarks(), hold: .seconds(4), simulated: false)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.write("memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        let loop = try EventLoop()
        let inbox = LoopInbox<DaemonInput>()
        let psi = PSISource(loop: loop, inbox: inbox, settings: PSISource.Settings(path: path, windowUSec: 200_000, pollIntervalUSec: 50_000))
        inbox.open { [weak psi] input in if case .psi(let i) = input { _ = psi?.handle(i) } }
        runner.psi = psi
        psi.start()
        defer { psi.stop() }
        #expect(runner.sources(now: host.clock.now()).map(\.detail) == ["\(path): polling"])
        let deadline = Clock.monotonic.now() + 250_000
        while Clock.monotonic.now() < deadline { try loop.runIteration(timeoutUSec: 10_000) }
        try writeTextFile(path, "some avg10=0.00 avg60=0.00 avg300=0.00 total=500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        let limit = Clock.monotonic.now() + 1_000_000
        while runner.level == .normal, Clock.monotonic.now() < limit {
            try loop.runIteration(timeoutUSec: 10_000)
            _ = runner.evaluate(awaitingRelease: false, takesNotice: { _ in false })
        }
        #expect(runner.level == .warning)
        #expect(runner.controller.externalLevel == .warning && runner.controller.gaugeLevel == .normal)
        runner.setOverride(PressureOverride(level: .critical))
        _ = runner.evaluate(awaitingRelease: false, takesNotice: { _ in false })
        #expect(runner.level == .critical)
        #expect(runner.sources(now: host.clock.now()).map(\.name) == ["psi", "override"])
    }
}
