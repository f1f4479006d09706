import Glibc
import Testing
@testable import SceneCore

/// Seeded random command sequences over many apps and sessions, with every invariant, the
/// command oracle, the timer stamps and the persistence effects checked after every command.
/// On failure: the seed, the first failing step, and the shortest failing sequence found by
/// replaying prefixes and deleting commands. Replay a seed with `SCENECORE_SEED=<n> swift test`
/// (decimal or 0x-hex); bound the shrinking with `SCENECORE_SHRINK_SECONDS`.
@Suite struct RandomizedTests {
    static let defaultSeed: UInt64 = 0x5CE9_EC0E_2026

    static var seed: UInt64 {
        guard let text = getenv("SCENECORE_SEED").map({ String(cString: $0) }), !text.isEmpty else { return defaultSeed }
        if text.hasPrefix("0x"), let n = UInt64(text.dropFirst(2), radix: 16) { return n }
        return UInt64(text) ?? defaultSeed
    }

    /// How long shrinking may take: `SCENECORE_SHRINK_SECONDS`, 60 by default.
    static var shrinkSeconds: Int64 {
        getenv("SCENECORE_SHRINK_SECONDS").flatMap { Int64(String(cString: $0)) } ?? 60
    }

    typealias Entry = (command: Command, time: Timestamp)

    /// The first failing step of a sequence, replayed from scratch with full checks.
    static func firstFailure(_ entries: [Entry], _ configuration: EngineConfiguration) -> (index: Int, problem: String)? {
        var run = RandomRun(configuration: configuration)
        for (i, entry) in entries.enumerated() {
            if let problem = run.apply(entry.command, at: entry.time, fullCheck: true) { return (i, problem) }
        }
        return nil
    }

    /// The shortest failing prefix, then greedy deletion of chunks of commands while the
    /// sequence still fails (any failure), within a time budget. Deleting a command that
    /// allocated a session or a task renumbers the later references, so that the rest of the
    /// sequence still means the same thing.
    static func shrink(_ entries: [Entry], _ configuration: EngineConfiguration) -> [Entry] {
        shrink(entries, firstFailure: { firstFailure($0, configuration) },
               remove: { list, range in removing(range, from: list, configuration) })
    }

    static func shrink(_ entries: [Entry], firstFailure: ([Entry]) -> (index: Int, problem: String)?,
                       remove: ([Entry], Range<Int>) -> [Entry] = { list, range in
                           var out = list
                           out.removeSubrange(range)
                           return out
                       }) -> [Entry] {
        guard let first = firstFailure(entries) else { return entries }
        var current = Array(entries.prefix(first.index + 1))
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(shrinkSeconds)
        var chunk = max(current.count / 2, 1)
        while clock.now < deadline {
            var i = 0
            var removed = false
            while i < current.count && clock.now < deadline {
                let candidate = remove(current, i..<min(i + chunk, current.count))
                if let f = firstFailure(candidate) {
                    current = Array(candidate.prefix(f.index + 1))
                    removed = true
                } else {
                    i += chunk
                }
            }
            if !removed {
                if chunk == 1 { break }
                chunk = max(chunk / 2, 1)
            }
        }
        return current
    }

    /// Removes the entries in `range`; identifiers allocated by them become unknown ones, and
    /// later identifiers move down to where the shorter sequence allocates them.
    static func removing(_ range: Range<Int>, from entries: [Entry], _ configuration: EngineConfiguration) -> [Entry] {
        var engine = LifecycleEngine(configuration: configuration)
        var effects: [Effect] = []
        var goneSessions: [UInt64] = [], goneTasks: [UInt64] = []
        for (i, entry) in entries.enumerated() {
            effects.removeAll(keepingCapacity: true)
            let result = try? engine.handle(entry.command, now: entry.time, effects: &effects)
            guard range.contains(i) else { continue }
            switch result {
            case .session(let s): goneSessions.append(s.rawValue)
            case .task(let t): goneTasks.append(t.rawValue)
            default: break
            }
        }
        if goneSessions.isEmpty && goneTasks.isEmpty {
            var out = entries
            out.removeSubrange(range)
            return out
        }
        let unknown: UInt64 = 1 << 40
        func map(_ n: UInt64, _ gone: [UInt64]) -> UInt64 {
            gone.contains(n) ? unknown + n : n - UInt64(gone.count(where: { $0 < n }))
        }
        var out: [Entry] = []
        for (i, entry) in entries.enumerated() where !range.contains(i) {
            out.append((entry.command.remapped(session: { SessionID(map($0.rawValue, goneSessions)) },
                                               task: { TaskToken(map($0.rawValue, goneTasks)) }), entry.time))
        }
        return out
    }

    static func report(seed: UInt64, step: Int, problem: String, entries: [Entry],
                       configuration: EngineConfiguration) -> String {
        let minimal = shrink(entries, configuration)
        let failure = firstFailure(minimal, configuration)
        var text = "seed \(seed) (SCENECORE_SEED=\(seed)): step \(step) failed: \(problem)\n"
        text += "shortest failing sequence found: \(minimal.count) commands (from \(step + 1))"
        if let failure { text += ", failing with: \(failure.problem)" }
        text += "\n"
        for (i, e) in minimal.enumerated() { text += "  \(i): \(e.time) \(e.command)\n" }
        print(text)
        return text
    }

    /// Runs `steps` random commands; returns the run for coverage checks, or records the failure.
    static func run(seed: UInt64, steps: Int, appCount: Int, configuration: EngineConfiguration,
                    systemEvents: Bool = false, backgroundPercent: Int = 10, routingPercent: Int = 4,
                    sourceLocation: SourceLocation = #_sourceLocation) -> RandomRun? {
        var run = RandomRun(configuration: configuration)
        var generator = CommandGenerator(seed: seed, appCount: appCount)
        generator.systemEvents = systemEvents
        generator.backgroundWork = backgroundPercent > 0
        generator.backgroundPercent = backgroundPercent
        generator.routing = routingPercent > 0
        generator.routingPercent = routingPercent
        var entries: [Entry] = []
        entries.reserveCapacity(steps)
        for step in 0..<steps {
            let (command, time) = generator.next(run.engine)
            entries.append((command, time))
            if let problem = run.apply(command, at: time, fullCheck: step % 64 == 0 || step == steps - 1) {
                let text = report(seed: seed, step: step, problem: problem, entries: entries, configuration: configuration)
                Issue.record(Comment(rawValue: text), sourceLocation: sourceLocation)
                return nil
            }
        }
        return run
    }

    @Test func hundredThousandRandomCommandsKeepEveryInvariant() {
        let seed = Self.seed
        guard let run = Self.run(seed: seed, steps: 100_000, appCount: 10, configuration: .standard) else { return }
        #expect(run.commandsApplied == 100_000)
        // The run is only worth something if it went everywhere: every event, every refusal.
        for name in EventName.allCases {
            #expect((run.eventCounts[name] ?? 0) > 0, "seed \(seed): no \(name) in the run")
        }
        for kind in ["no such app", "no such session", "session s", "no such background task", "cannot", "invalid"] {
            #expect((run.errorCounts[kind] ?? 0) > 0 || run.errorCounts.keys.contains { $0.hasPrefix(kind) },
                    "seed \(seed): no refusal \(kind) in the run: \(run.errorCounts)")
        }
        #expect(run.engine.nextSessionNumber > 2_000, "seed \(seed): few sessions")
        #expect(run.engine.apps.count >= 8)
    }

    /// Other timing rules: short and long suspension delays, budgets shorter than the delay,
    /// long graces.
    @Test(arguments: [
        EngineConfiguration(suspendDelay: .seconds(1), backgroundTaskBudget: .seconds(3), expirationGrace: .milliseconds(500)),
        EngineConfiguration(suspendDelay: .seconds(20), backgroundTaskBudget: .seconds(4), expirationGrace: .seconds(10)),
        EngineConfiguration(suspendDelay: .milliseconds(1), backgroundTaskBudget: .milliseconds(1), expirationGrace: .milliseconds(1)),
    ])
    func randomCommandsUnderOtherTimings(_ configuration: EngineConfiguration) {
        let seed = Self.seed &+ UInt64(configuration.suspendDelay.microseconds)
        guard let run = Self.run(seed: seed, steps: 10_000, appCount: 8, configuration: configuration) else { return }
        #expect((run.eventCounts[.suspended] ?? 0) > 0)
        #expect((run.eventCounts[.backgroundTaskWillExpire] ?? 0) > 0)
        #expect((run.eventCounts[.terminated] ?? 0) > 0)
    }

    /// The shrinker itself: a long random sequence in which, at some point, a session with an
    /// open task is discarded, comes down to the three commands that matter (connect, begin a
    /// task for the session, discard it), thanks to the renumbering of identifiers.
    @Test func shrinkerFindsTheCommandsThatMatter() {
        var generator = CommandGenerator(seed: 7, appCount: 8)
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        var entries: [Entry] = []
        for _ in 0..<2_000 {
            let (c, t) = generator.next(engine)
            entries.append((c, t))
            _ = try? engine.handle(c, now: t, effects: &effects)
        }
        func failure(_ list: [Entry]) -> (index: Int, problem: String)? {
            var e = LifecycleEngine()
            var fx: [Effect] = []
            for (i, entry) in list.enumerated() {
                let hadTask: Bool
                if case .discard(let id, _) = entry.command {
                    hadTask = e.tasks.values.contains { $0.session == id }
                } else {
                    hadTask = false
                }
                let ok = (try? e.handle(entry.command, now: entry.time, effects: &fx)) != nil
                if hadTask && ok { return (i, "discarded a session with an open task") }
            }
            return nil
        }
        #expect(failure(entries) != nil, "the random sequence never discards a session with a task")
        let minimal = Self.shrink(entries, firstFailure: failure, remove: { Self.removing($1, from: $0, .standard) })
        #expect(minimal.count == 3, "\(minimal.map(\.command))")
        if minimal.count == 3 {
            if case .connect = minimal[0].command {} else { Issue.record("first is \(minimal[0].command)") }
            if case .beginTask = minimal[1].command {} else { Issue.record("second is \(minimal[1].command)") }
            if case .discard = minimal[2].command {} else { Issue.record("third is \(minimal[2].command)") }
        }
    }

    @Test func generatorIsDeterministic() {
        var a = CommandGenerator(seed: 42, appCount: 8)
        var b = CommandGenerator(seed: 42, appCount: 8)
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        for _ in 0..<500 {
            let x = a.next(engine), y = b.next(engine)
            #expect(x.0 == y.0 && x.1 == y.1)
            _ = try? engine.handle(x.0, now: x.1, effects: &effects)
        }
    }
}

extension Command {
    /// The same command with its session and task identifiers mapped.
    func remapped(session f: (SessionID) -> SessionID, task g: (TaskToken) -> TaskToken) -> Command {
        switch self {
        case .activate(let s): return .activate(f(s))
        case .deactivate(let s): return .deactivate(f(s))
        case .background(let s): return .background(f(s))
        case .disconnect(let s, let c): return .disconnect(f(s), cause: c)
        case .discard(let s, let c): return .discard(f(s), cause: c)
        case .saveState(let s, let d): return .saveState(f(s), d)
        case .saveUserInfo(let s, let u): return .saveUserInfo(f(s), u)
        case .setFootprint(let s, let b): return .setFootprint(f(s), b)
        case .setProtected(let s, let p): return .setProtected(f(s), p)
        case .beginTask(var r):
            r.session = r.session.map(f)
            return .beginTask(r)
        case .endTask(let t): return .endTask(g(t))
        case .tick, .launch, .terminate, .processDied, .connect, .setAppFootprint, .memoryWarning, .suspend, .resume,
             .setHolds, .scheduleTask, .cancelTask, .queueNotification, .wake, .endWake, .expireWakes, .beginActivity,
             .endActivity, .open, .setActivationConditions: return self
        }
    }
}
