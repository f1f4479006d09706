import SceneCore
@testable import SceneReplay
import SceneTrace
import Testing
@testable import SceneDaemon

/// export-trace's promise, in process: the daemon's own history (its events, budgets and
/// overrides, the sessions' footprints), written as a trace by `HistoryTraceBuilder` and
/// replayed with policy ours, takes the reclaim actions the daemon's controller took.
@Suite("An exported history replays to the daemon's own actions")
struct ExportEquivalenceTests {
    struct DaemonRun {
        var events: [LifecycleEvent] = []
        var runner: ReclaimRunner
        var host: EngineHost
    }

    /// Runs the inputs through the daemon's EngineHost and ReclaimRunner as ReplayEquivalenceTests
    /// does, keeping every committed event (the event log).
    static func daemon(_ inputs: [(ReplayInput, Timestamp)], _ settings: ReplaySettings) -> DaemonRun {
        let start = inputs.first?.1 ?? Timestamp(microseconds: 0)
        let time = VirtualClock(now: 1_000_000)
        let clock = DaemonClock(virtual: time, startingAt: start)
        let host = EngineHost(engine: LifecycleEngine(configuration: settings.engine), clock: clock, writer: nil)
        var reclaim = settings.reclaim
        reclaim.budget = .max
        let runner = ReclaimRunner(host: host, logger: JournalLogger(level: .emerg, toJournal: false),
                                   policy: ReclaimPolicy(configuration: reclaim, order: .ours), budget: 0,
                                   watermarks: settings.reclaim.watermarks, hold: settings.hold, simulated: true)
        var run = DaemonRun(runner: runner, host: host)
        for (input, t) in inputs {
            time.now = 1_000_000 + UInt64(t.microseconds - start.microseconds)
            switch input {
            case .command(let c): _ = try? host.execute(c)
            case .override(let o): runner.setOverride(o)
            case .evaluate(let budget):
                host.tick()
                runner.budget = budget ?? 0
                _ = runner.evaluate(awaitingRelease: false, takesNotice: { _ in false })
            }
            if case .committed(_, let events, _) = host.startCommit() {
                runner.noteActivations(events)
                runner.rememberSessions(events)
                run.events += events
            }
        }
        return run
    }

    /// What the export handler gathers, from the in-process daemon.
    static func export(_ run: DaemonRun, _ settings: ReplaySettings, since: UInt64 = 0) -> Trace {
        var sessions = run.runner.connected
        for (id, s) in run.host.engine.sessions {
            sessions[id] = HistorySession(footprint: s.footprint, restoreCostMs: s.restoreCostMs, isProtected: s.isProtected)
        }
        var apps: [AppID: UInt64] = [:]
        for (id, a) in run.host.engine.apps where a.baseFootprint > 0 { apps[id] = a.baseFootprint }
        var inputs = run.runner.history.samples.map { HistoryInput(seq: $0.seq, time: $0.time, .budget($0.budget)) }
        inputs += run.runner.overrides.map { HistoryInput(seq: $0.seq, time: $0.time, .override($0.override)) }
        inputs += run.runner.decisions.map { HistoryInput(seq: $0.seq, time: $0.time, .decide) }
        inputs = inputs.enumerated().sorted { ($0.element.seq, $0.element.time, $0.offset) < ($1.element.seq, $1.element.time, $1.offset) }
            .map(\.element)
        var header = TraceSettings(source: "scened", since: since, reclaim: settings.reclaim, engine: settings.engine,
                                   hold: settings.hold, gauge: true)
        header.explicitDecisions = true
        return HistoryTraceBuilder.trace(run.events.filter { $0.seq >= since }, settings: header, sessions: sessions,
                                         appFootprints: apps, budget: run.runner.history.samples.first?.budget,
                                         inputs: inputs, end: run.host.clock.now())
    }

    /// A generated trace without footprint changes: the event log does not record them, and an
    /// export gives each scene its footprint at the end.
    static func steadyTrace(_ scenario: Scenario) -> Trace {
        var trace = TraceGenerator(scenario: scenario, seed: 3, size: .fixture).generate()
        trace.events.removeAll { if case .mem = $0.kind { true } else { false } }
        return trace
    }

    @Test("the generated scenarios, through the daemon, exported and replayed: the same actions in the same order",
          arguments: ["mix", "pingpong", "acks", "spikes"])
    func exportedHistoryTakesTheSameActions(_ scenario: String) throws {
        let trace = Self.steadyTrace(try #require(Scenario(named: scenario)))
        var settings = ReplaySettings(order: .ours)
        settings.budget = UInt64(Double(Replayer.workingSet(of: trace)) * 0.4)
        let replayed = ReplayEquivalenceTests.replay(trace, settings)
        let run = Self.daemon(replayed.inputs, settings)
        let daemonActions = run.runner.history.actions.map { "\($0.kind.rawValue) \($0.target)" }
        #expect(daemonActions.count >= 3, "\(scenario): the daemon must act for the comparison to mean anything")
        #expect(run.runner.history.droppedActions == 0)

        let exported = Self.export(run, settings)
        // Written and read back, as scenectl export-trace and simulate do.
        let text = TraceWriter.write(exported)
        let parsed = try TraceParser.parse(text)
        var replay = ReplaySettings(order: .ours)
        replay.adopt(try #require(parsed.settings))
        replay.recordActions = true
        let result = Replayer.run(parsed, settings: replay)
        #expect(result.metrics.traceRefusals == 0, "\(scenario): \(result.notes)")
        let replayActions = result.actions.map { "\($0.kind) \($0.target)" }
        #expect(replayActions.count == daemonActions.count, "\(scenario): daemon \(daemonActions.count), replay \(replayActions.count)")
        if let i = zip(daemonActions, replayActions).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            Issue.record("\(scenario): action \(i) differs: daemon \(daemonActions[i]), replay \(replayActions[i]); daemon \(daemonActions[max(0, i - 3)..<min(daemonActions.count, i + 4)]) replay \(replayActions[max(0, i - 3)..<min(replayActions.count, i + 4)]) at \(result.actions[i].time)")
        }
        // At the same times, to the millisecond, from the first event.
        let base = run.events.first!.time.microseconds
        let daemonTimes = run.runner.history.actions.map { ($0.time.microseconds - base) / 1000 }
        #expect(daemonTimes == result.actions.map(\.time), "\(scenario)")

        // A smaller budget for the same episode: the replay still runs and acts differently.
        var smaller = replay
        smaller.budget = (settings.budget ?? 0) / 2
        let whatIf = Replayer.run(parsed, settings: smaller)
        #expect(whatIf.actions.map { "\($0.kind) \($0.target)" } != replayActions)
    }

    @Test("an export from a later sequence number starts there and still parses and replays")
    func sinceShortensTheTrace() throws {
        let trace = Self.steadyTrace(.mix)
        var settings = ReplaySettings(order: .ours)
        settings.budget = UInt64(Double(Replayer.workingSet(of: trace)) * 0.4)
        let run = Self.daemon(ReplayEquivalenceTests.replay(trace, settings).inputs, settings)
        let whole = Self.export(run, settings)
        let middle = run.events[run.events.count / 2].seq
        let later = Self.export(run, settings, since: middle)
        #expect(later.events.count < whole.events.count && later.events.count > 2)
        let parsed = try TraceParser.parse(TraceWriter.write(later))
        #expect(parsed.settings?.since == middle)
        // The budget in force at that point opens it.
        #expect(parsed.events.contains { if case .budget(.bytes(let b)) = $0.kind { b == settings.budget } else { false } })
        var replay = ReplaySettings(order: .ours)
        replay.adopt(parsed.settings!)
        let result = Replayer.run(parsed, settings: replay)
        #expect(result.metrics.activations > 0)
    }
}
