import Testing
@testable import SceneCore

// Shared test support: an engine driven on a virtual clock, whose every event goes through the
// conformance checker and whose state is checked for consistency after every command.

let mail = AppID("com.example.mail")!
let maps = AppID("com.example.maps")!
let notes = AppID("com.example.notes")!

func seconds(_ s: Int64) -> TimeSpan { .seconds(s) }
func at(_ s: Int64) -> Timestamp { Timestamp.zero + .seconds(s) }
func atMs(_ ms: Int64) -> Timestamp { Timestamp.zero + .milliseconds(ms) }

/// One expected event: its name, its session and the state it leaves.
struct Step: Equatable, CustomStringConvertible {
    var name: EventName
    var session: SessionID?
    var state: EventState

    init(_ name: EventName, _ session: SessionID?, _ state: EventState) {
        self.name = name
        self.session = session
        self.state = state
    }
    init(_ e: LifecycleEvent) { self.init(e.name, e.session, e.state) }

    var description: String { "\(name)(\(session.map(\.description) ?? "-")) -> \(state)" }
}

// Scene steps.
func S(_ name: EventName, _ s: SessionID, _ state: SceneActivationState) -> Step { Step(name, s, .scene(state)) }
func configure(_ s: SessionID) -> Step { S(.configurationForConnecting, s, .unattached) }
func connectTo(_ s: SessionID) -> Step { S(.willConnectTo, s, .unattached) }
func enterForeground(_ s: SessionID) -> Step { S(.willEnterForeground, s, .foregroundInactive) }
func becomeActive(_ s: SessionID) -> Step { S(.didBecomeActive, s, .foregroundActive) }
func resignActive(_ s: SessionID) -> Step { S(.willResignActive, s, .foregroundInactive) }
func enterBackground(_ s: SessionID) -> Step { S(.didEnterBackground, s, .background) }
func disconnected(_ s: SessionID) -> Step { S(.didDisconnect, s, .unattached) }
// App steps.
func A(_ name: EventName, _ state: ProcessState, _ s: SessionID? = nil) -> Step { Step(name, s, .process(state)) }
let launched = A(.didFinishLaunching, .running)
let suspendedStep = A(.suspended, .suspended)
let resumedStep = A(.resumed, .running)
let willTerminateStep = A(.willTerminate, .running)
let terminatedStep = A(.terminated, .notRunning)
let memoryWarningStep = A(.didReceiveMemoryWarning, .running)
func discardedStep(_ s: SessionID?) -> Step { A(.didDiscardSceneSessions, .running, s) }
func expireStep(_ s: SessionID?) -> Step { A(.backgroundTaskWillExpire, .running, s) }

extension Array {
    /// The element at `i`, or nil: a regression then fails the test instead of crashing the run.
    subscript(at i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

func events(_ effects: [Effect]) -> [LifecycleEvent] {
    effects.compactMap { if case .event(let e) = $0 { e } else { nil } }
}

struct Harness {
    var engine: LifecycleEngine
    var checker: ConformanceChecker
    var now: Timestamp
    /// Every event so far.
    var log: [LifecycleEvent] = []
    /// The effects of the last command.
    var lastEffects: [Effect] = []

    init(configuration: EngineConfiguration = .standard, now: Timestamp = .zero) {
        engine = LifecycleEngine(configuration: configuration, clock: now)
        checker = ConformanceChecker(options: .init(timing: configuration, strict: true, consecutiveSequence: true))
        self.now = now
    }

    init(restoring snapshot: EngineSnapshot, configuration: EngineConfiguration = .standard, checker: ConformanceChecker) throws {
        engine = try LifecycleEngine(configuration: configuration, restoring: snapshot)
        self.checker = checker
        now = snapshot.clock
    }

    /// Runs one command at `now` (moved to `time` first, if given); checks every event and the
    /// engine afterwards. Errors are passed through after the same checks.
    @discardableResult
    mutating func run(_ command: Command, at time: Timestamp? = nil,
                      sourceLocation: SourceLocation = #_sourceLocation) throws(LifecycleError) -> [LifecycleEvent] {
        if let time { now = time }
        var effects: [Effect] = []
        var failure: LifecycleError?
        var result: CommandResult?
        do {
            result = try engine.handle(command, now: now, effects: &effects)
        } catch {
            failure = error
        }
        _ = result
        lastEffects = effects
        let new = events(effects)
        log += new
        if case .saveState(let id, let data) = command, failure == nil { checker.noteRestorationSaved(data, for: id) }
        if case .setHolds(let policy) = command, failure == nil { checker.noteHolds(policy) }
        let violations = checker.check(new) + checker.disagreements(with: engine)
            + ConformanceChecker.consistencyViolations(of: engine)
        #expect(violations.isEmpty, "\(command): \(violations)", sourceLocation: sourceLocation)
        if let failure { throw failure }
        return new
    }

    /// Runs a command that must succeed and returns its steps.
    @discardableResult
    mutating func steps(_ command: Command, at time: Timestamp? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) -> [Step] {
        do {
            return try run(command, at: time, sourceLocation: sourceLocation).map(Step.init)
        } catch {
            Issue.record("\(command) failed: \(error)", sourceLocation: sourceLocation)
            return []
        }
    }

    /// Connects a new session and returns its identifier.
    mutating func connect(_ app: AppID, background: Bool = false, userInfo: UserInfo = .empty, footprint: UInt64 = 0,
                          sourceLocation: SourceLocation = #_sourceLocation) -> SessionID {
        let request = ConnectRequest(app: app, userInfo: userInfo, footprint: footprint, background: background)
        let expected = SessionID(engine.nextSessionNumber)
        steps(.connect(request), sourceLocation: sourceLocation)
        #expect(engine.sessions[expected] != nil, sourceLocation: sourceLocation)
        return expected
    }

    /// Begins a task and returns its token.
    mutating func beginTask(app: AppID? = nil, session: SessionID? = nil, name: String = "work",
                            sourceLocation: SourceLocation = #_sourceLocation) -> TaskToken {
        let token = TaskToken(engine.nextTaskNumber)
        steps(.beginTask(BeginTaskRequest(app: app, session: session, name: name)), sourceLocation: sourceLocation)
        #expect(engine.tasks[token] != nil, sourceLocation: sourceLocation)
        return token
    }

    /// Ticks at `time`.
    @discardableResult
    mutating func tick(at time: Timestamp, sourceLocation: SourceLocation = #_sourceLocation) -> [Step] {
        steps(.tick, at: time, sourceLocation: sourceLocation)
    }

    /// Expects the command to be refused with exactly this error, leaving the engine unchanged.
    mutating func refuse(_ command: Command, _ expected: LifecycleError, sourceLocation: SourceLocation = #_sourceLocation) {
        // Fire what is due first, so that only the refused command itself is measured.
        steps(.tick, sourceLocation: sourceLocation)
        let before = engine.snapshot
        do {
            let new = try run(command, sourceLocation: sourceLocation)
            Issue.record("\(command) succeeded with \(new), expected \(expected)", sourceLocation: sourceLocation)
        } catch {
            #expect(error == expected, sourceLocation: sourceLocation)
            #expect(lastEffects.isEmpty, "a refused command had effects: \(lastEffects)", sourceLocation: sourceLocation)
            #expect(engine.snapshot == before, "a refused command changed the engine", sourceLocation: sourceLocation)
        }
    }

    /// Expects a refusal of kind invalidTransition, leaving the engine unchanged.
    mutating func refuseTransition(_ command: Command, sourceLocation: SourceLocation = #_sourceLocation) {
        steps(.tick, sourceLocation: sourceLocation)
        let before = engine.snapshot
        do {
            let new = try run(command, sourceLocation: sourceLocation)
            Issue.record("\(command) succeeded with \(new), expected invalidTransition", sourceLocation: sourceLocation)
        } catch {
            guard case .invalidTransition = error else {
                Issue.record("\(command) failed with \(error), expected invalidTransition", sourceLocation: sourceLocation)
                return
            }
            #expect(lastEffects.isEmpty, sourceLocation: sourceLocation)
            #expect(engine.snapshot == before, "a refused command changed the engine", sourceLocation: sourceLocation)
        }
    }

    func state(_ id: SessionID) -> SceneActivationState? { engine.sessions[id]?.sceneState }
    func condition(_ id: SessionID) -> SessionCondition? {
        if let s = engine.sessions[id] { return s.condition }
        return engine.wasDiscarded(id) ? .discarded : nil
    }
    func process(_ app: AppID) -> ProcessState { engine.apps[app]?.process ?? .notRunning }
    func appState(_ app: AppID) -> ApplicationState? { engine.apps[app]?.applicationState }
}
