import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore
import SystemdKit

@Suite("PressureMonitor: the highest level of its sources")
struct PressureMonitorTests {
    @Test("simulated level with hold, an override that lapses, PSI counted in")
    func levels() throws {
        let t0 = Timestamp(microseconds: 1_000_000_000)
        let monitor = PressureMonitor(budget: 1000, watermarks: Watermarks(), hold: .seconds(4), simulated: true)
        monitor.update(usage: 950, now: t0)
        #expect(monitor.level == .warning)
        #expect(!monitor.isExternal)
        monitor.update(usage: 100, now: t0 + .seconds(1))
        #expect(monitor.level == .warning)
        #expect(monitor.nextChange == t0 + .seconds(5))
        monitor.update(usage: 100, now: t0 + .seconds(5))
        #expect(monitor.level == .normal)

        monitor.override = PressureMonitor.Override(level: .critical, until: t0 + .seconds(10))
        #expect(monitor.level == .critical)
        #expect(monitor.isExternal)
        #expect(monitor.nextChange == t0 + .seconds(10))
        monitor.update(usage: 100, now: t0 + .seconds(10))
        #expect(monitor.override == nil)
        #expect(monitor.level == .normal)

        // Simulated off: usage no longer counts.
        monitor.reconfigure(budget: 1000, watermarks: Watermarks(), hold: .seconds(4), simulated: false)
        monitor.update(usage: 5000, now: t0 + .seconds(11))
        #expect(monitor.level == .normal)
        #expect(monitor.sources(now: t0 + .seconds(11)).isEmpty)

        // A PSI source's level counts, as an external one.
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.write("memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        let loop = try EventLoop()
        let psi = PSISource(loop: loop, settings: PSISource.Settings(path: path, windowUSec: 200_000, pollIntervalUSec: 50_000))
        monitor.psi = psi
        psi.start()
        defer { psi.stop() }
        #expect(monitor.sources(now: t0).map(\.detail) == ["\(path): polling"])
        let deadline = Clock.monotonic.now() + 250_000
        while Clock.monotonic.now() < deadline { try loop.runIteration(timeoutUSec: 10_000) }
        try writeTextFile(path, "some avg10=0.00 avg60=0.00 avg300=0.00 total=500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        let limit = Clock.monotonic.now() + 1_000_000
        while monitor.level == .normal, Clock.monotonic.now() < limit { try loop.runIteration(timeoutUSec: 10_000) }
        #expect(monitor.level == .warning)
        #expect(monitor.psiLevel == .warning)
        #expect(monitor.isExternal)
    }
}
