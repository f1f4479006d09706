import SceneCore
@testable import SceneReplay
import SceneTrace
import Testing
@testable import SceneDaemon

/// The replay is the daemon: a trace run through the replayer and through the daemon's own
/// EngineHost and ReclaimRunner, in-process on a virtual clock, takes the same reclaim actions at
/// the same times and leaves the engines in the same state.
@Suite("Replayer and daemon run one reclaim controller")
struct ReplayEquivalenceTests {
    struct Action: Equatable, CustomStringConvertible {
        var time: Int64
        var command: Command
        var description: String { "t=\(time / 1000) ms \(command)" }
    }

    /// The replayer's run: what it fed its engine and controller, the actions taken, its engine.
    static func replay(_ trace: Trace, _ settings: ReplaySettings) -> (inputs: [(ReplayInput, Timestamp)], actions: [Action], engine: LifecycleEngine) {
        var inputs: [(ReplayInput, Timestamp)] = []
        var actions: [Action] = []
        var replayer = Replayer(trace: trace, settings: settings)
        replayer.inputObserver = { inputs.append(($0, $1)) }
        replayer.stepObserver = { command, ok, t in if ok { actions.append(Action(time: t.microseconds, command: command)) } }
        replayer.run()
        return (inputs, actions, replayer.engine)
    }

    /// The daemon side: the inputs fed the way the daemon's loop feeds them (a command runs at its
    /// time; at each evaluation the engine's due timers fire and the runner evaluates).
    static func daemon(_ inputs: [(ReplayInput, Timestamp)], _ settings: ReplaySettings) -> (actions: [Action], host: EngineHost) {
        let start = inputs.first?.1 ?? Timestamp(microseconds: 0)
        let time = VirtualClock(now: 1_000_000)
        let clock = DaemonClock(virtual: time, startingAt: start)
        let host = EngineHost(engine: LifecycleEngine(configuration: settings.engine), clock: clock, writer: nil)
        let logger = JournalLogger(level: .emerg, toJournal: false)
        var reclaim = settings.reclaim
        reclaim.budget = .max
        let runner = ReclaimRunner(host: host, logger: logger, policy: ReclaimPolicy(configuration: reclaim, order: settings.order),
                                   budget: 0, watermarks: settings.reclaim.watermarks, hold: settings.hold, simulated: true)
        var actions: [Action] = []
        for (input, t) in inputs {
            time.now = 1_000_000 + UInt64(t.microseconds - start.microseconds)
            switch input {
            case .command(let c):
                _ = try? host.execute(c)
            case .override(let o):
                runner.setOverride(o)
            case .evaluate(let budget):
                host.tick()
                runner.budget = budget ?? 0
                for (command, ok) in runner.evaluate(awaitingRelease: false, takesNotice: { _ in false }).executed where ok {
                    actions.append(Action(time: host.clock.now().microseconds, command: command))
                }
            }
            // As the daemon's pass ends: the batch commits and the policy learns of activations.
            if case .committed(_, let events, _) = host.startCommit() { runner.noteActivations(events) }
        }
        return (actions, host)
    }

    @Test("a generated trace of each scenario: identical reclaim actions at identical times, identical sessions",
          arguments: ["mix", "pingpong", "size", "spikes", "acks"])
    func sameActions(_ scenario: String) throws {
        let kind = try #require(Scenario(named: scenario))
        let trace = TraceGenerator(scenario: kind, seed: 3, size: .fixture).generate()
        for share in [0.3, 0.5] {
            var settings = ReplaySettings(order: .ours)
            // The daemon run here has no attached processes to give reclaim notices to, so the
            // replay leaves out the grace its ack profiles would get (GraceTests cover it).
            settings.grace = nil
            settings.budget = UInt64(Double(Replayer.workingSet(of: trace)) * share)
            let replayed = Self.replay(trace, settings)
            #expect(!replayed.actions.isEmpty, "\(scenario) at \(share): the trace must make the controller act")
            let (actions, host) = Self.daemon(replayed.inputs, settings)
            #expect(actions.count == replayed.actions.count,
                    "\(scenario) at \(share): the daemon took \(actions.count) actions, the replayer \(replayed.actions.count)")
            if let i = zip(actions, replayed.actions).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                Issue.record("\(scenario) at \(share): action \(i) differs: daemon \(actions[i]), replayer \(replayed.actions[i])")
            }
            // The same end state: every session's condition, scene state and footprint.
            #expect(Set(host.engine.sessions.keys) == Set(replayed.engine.sessions.keys))
            for (id, s) in replayed.engine.sessions {
                guard let d = host.engine.sessions[id] else { continue }
                #expect(d.condition == s.condition && d.sceneState == s.sceneState && d.footprint == s.footprint, "\(scenario) \(id)")
            }
        }
    }
}
