import Glibc
import SceneCore
import ScenedTestSupport
import Synchronization
import Varlink

/// One client of the crash test: a connection with several calls in flight, a random stream of
/// mutating calls on apps of its own, and the record of what the daemon acknowledged.
///
/// Threads: `runCycle` runs on a thread of its own while the daemon lives; everything else is
/// called by the test between cycles, after that thread has signalled its end.
final class CrashClient: @unchecked Sendable {
    let index: Int
    let appNames: [String]
    private var rng: SplitMix64
    /// The state the acknowledged replies describe.
    private(set) var acked = ClientState()
    /// Sent, not (yet) answered, in order.
    private(set) var inFlight: [ClientCall] = []
    private var nextNumber = 1
    private var saveCounter = 0
    /// Calls in flight at most, this cycle.
    var window = 1
    /// StorageFailure is an acceptable answer (a write failure test): the call then changed
    /// nothing, which the next check of the database verifies.
    var storageFailureAllowed = false
    private(set) var storageFailureMessages: Set<String> = []
    /// Readable while the client runs.
    let storageFailures = Atomic<Int>(0)
    let changesApplied = Atomic<Int>(0)

    // Results of the current cycle, read by the test after it ended.
    struct AckedEvent { var seq: UInt64; var name: String; var session: UInt64?; var call: Int }
    private(set) var ackedEvents: [AckedEvent] = []
    /// Session ids and task tokens first named in an acknowledged reply this cycle.
    private(set) var namedSessions: [UInt64] = []
    private(set) var namedTasks: [UInt64] = []
    private(set) var problems: [String] = []

    // Totals.
    private(set) var acknowledgedTotal = 0
    private(set) var errorsTotal = 0
    /// Calls refused because scened was stopping (a clean stop), this cycle.
    private(set) var stoppingRefusals = 0

    static func appPrefix(_ index: Int) -> String { "org.crash.c\(index)." }

    init(index: Int, seed: UInt64, apps: Int = 3) {
        self.index = index
        rng = SplitMix64(seed: seed)
        appNames = (0..<apps).map { "\(Self.appPrefix(index))a\($0)" }
    }

    // MARK: - One daemon lifetime

    /// Forgets the last cycle's results; called for every daemon lifetime, also one that is
    /// killed before the client connects.
    func beginCycle() {
        ackedEvents = []
        namedSessions = []
        namedTasks = []
        problems = []
        stoppingRefusals = 0
        precondition(inFlight.isEmpty, "in-flight calls must be resolved before the next cycle")
    }

    /// Drives calls until the connection breaks (the daemon was killed) or a problem is found.
    func runCycle(socketPath: String) {
        let connection: PipelinedConnection
        do {
            connection = try PipelinedConnection(path: socketPath)
        } catch {
            return  // killed before we got in
        }
        while true {
            while inFlight.count < window {
                let call = nextCall()
                inFlight.append(call)
                connection.queue(encode(call))
            }
            switch connection.exchange(waitingMilliseconds: 10_000) {
            case .closed:
                return
            case .timedOut:
                problems.append("client \(index): no reply within 10 s to \(inFlight.first.map { "\($0)" } ?? "?") (daemon alive but not answering)")
                return
            case .messages(let messages):
                for message in messages {
                    guard !inFlight.isEmpty else {
                        problems.append("client \(index): a reply arrived with no call in flight: \(String(decoding: message, as: UTF8.self))")
                        return
                    }
                    let call = inFlight.removeFirst()
                    if let problem = acknowledge(call, message) {
                        problems.append(problem)
                        return
                    }
                }
            }
        }
    }

    /// The state if every call in flight succeeds as the model expects (placeholders for what
    /// they create).
    private var predicted: ClientState {
        var state = acked
        for call in inFlight { _ = state.apply(call, newID: nil) }
        return state
    }

    private func nextCall() -> ClientCall {
        let state = predicted
        let number = nextNumber
        nextNumber += 1
        let known = state.sessions.keys.filter { $0 < ClientState.placeholderBase }.sorted()
        let tokens = state.tasks.keys.filter { $0 < ClientState.placeholderBase }.sorted()
        let pick = { (rng: inout SplitMix64) in known[rng.below(known.count)] }
        let r = rng.below(100)
        let op: Operation
        if known.isEmpty || (r < 14 && state.sessions.count < 20) {
            op = .connect(app: appNames[rng.below(appNames.count)], background: rng.chance(40),
                          footprint: UInt64(rng.below(1 << 20)))
        } else if r < 14 {
            op = .discard(pick(&rng))
        } else if r < 24 {
            op = .activate(pick(&rng))
        } else if r < 33 {
            let live = known.filter { state.sessions[$0]!.live }
            op = .background(live.isEmpty || rng.chance(10) ? pick(&rng) : live[rng.below(live.count)])
        } else if r < 39 {
            let foreground = known.filter { state.sessions[$0]!.state == .foregroundActive }
            op = .deactivate(foreground.isEmpty || rng.chance(10) ? pick(&rng) : foreground[rng.below(foreground.count)])
        } else if r < 46 {
            op = .disconnect(pick(&rng))
        } else if r < 52 {
            if rng.chance(10), let gone = rng.pick(state.discarded.sorted()) {
                op = .discard(gone)  // SessionDiscarded
            } else {
                op = .discard(pick(&rng))
            }
        } else if r < 64 {
            saveCounter += 1
            op = .saveState(pick(&rng), counter: saveCounter)
        } else if r < 70 {
            op = .setFootprint(pick(&rng), UInt64(rng.below(1 << 20)))
        } else if r < 74 {
            op = .setProtected(pick(&rng), rng.chance(50))
        } else if r < 77 {
            op = .setAppFootprint(appNames[rng.below(appNames.count)], UInt64(rng.below(1 << 20)))
        } else if r < 81 {
            let stopped = appNames.filter { state.apps[$0]?.process != "running" }
            op = .launch(rng.pick(stopped) ?? appNames[rng.below(appNames.count)])
        } else if r < 86 {
            let running = appNames.filter { state.apps[$0]?.process == "running" }
            op = .terminate(rng.pick(running) ?? appNames[rng.below(appNames.count)])
        } else if r < 93 && tokens.count < 6 {
            op = .beginTask(pick(&rng))
        } else if let token = rng.pick(tokens) {
            op = .endTask(rng.chance(10) ? token + 1_000_000 : token)
        } else {
            op = .beginTask(pick(&rng))
        }
        return ClientCall(number: number, operation: op)
    }

    private func encode(_ call: ClientCall) -> [UInt8] {
        let method: String
        var p = JSONObject()
        switch call.operation {
        case .connect(let app, let background, let footprint):
            method = "Connect"
            p["app"] = .string(app)
            p["background"] = .bool(background)
            p["footprint"] = .int(Int64(footprint))
            p["userInfo"] = .object(["c": .int(Int64(index)), "op": .int(Int64(call.number))])
        case .activate(let s): method = "Activate"; p["session"] = .string("s\(s)")
        case .background(let s): method = "Background"; p["session"] = .string("s\(s)")
        case .deactivate(let s): method = "Deactivate"; p["session"] = .string("s\(s)")
        case .disconnect(let s): method = "Disconnect"; p["session"] = .string("s\(s)")
        case .discard(let s): method = "Discard"; p["session"] = .string("s\(s)")
        case .saveState(let s, let counter):
            method = "SaveState"
            p["session"] = .string("s\(s)")
            let pad = String(repeating: "x", count: counter % 300)
            p["restoration"] = .object(["json": .object(["c": .int(Int64(index)), "n": .int(Int64(counter)),
                                                         "pad": .string(pad)])])
        case .setFootprint(let s, let footprint):
            method = "SetFootprint"
            p["session"] = .string("s\(s)")
            p["footprint"] = .int(Int64(footprint))
        case .setProtected(let s, let flag):
            method = "SetProtected"
            p["session"] = .string("s\(s)")
            p["protected"] = .bool(flag)
        case .setAppFootprint(let app, let footprint):
            method = "SetAppFootprint"
            p["app"] = .string(app)
            p["footprint"] = .int(Int64(footprint))
        case .launch(let app): method = "Launch"; p["app"] = .string(app)
        case .terminate(let app): method = "Terminate"; p["app"] = .string(app)
        case .beginTask(let s):
            method = "BeginBackgroundTask"
            p["session"] = .string("s\(s)")
            p["name"] = .string("c\(index)-op\(call.number)")
        case .endTask(let t): method = "EndBackgroundTask"; p["token"] = .string("t\(t)")
        }
        return VarlinkCall(method: "io.scened.Manager." + method, parameters: p).encoded()
    }

    /// Checks a reply against the model and, when it describes a change, applies it. Returns a
    /// problem when the daemon and the model disagree.
    private func acknowledge(_ call: ClientCall, _ message: [UInt8]) -> String? {
        let text = String(decoding: message, as: UTF8.self)
        guard case .object(let reply)? = try? JSONParser.parse(message) else {
            return "client \(index): reply to \(call) is not a JSON object: \(text)"
        }
        let errorName = reply["error"]?.stringValue
        let parameters = reply["parameters"]?.objectValue ?? [:]
        var newID: UInt64?
        if errorName == nil {
            switch call.operation {
            case .connect:
                guard let id = parameters["session"]?["id"]?.identifierNumber else {
                    return "client \(index): Connect reply without a session id: \(text)"
                }
                newID = id
            case .beginTask:
                guard let token = parameters["task"]?["token"]?.identifierNumber else {
                    return "client \(index): BeginBackgroundTask reply without a token: \(text)"
                }
                newID = token
            default:
                break
            }
        }
        if storageFailureAllowed, errorName == "io.scened.Manager.StorageFailure" {
            storageFailures.add(1, ordering: .relaxed)
            storageFailureMessages.insert(parameters["message"]?.stringValue ?? "(no message)")
            acknowledgedTotal += 1
            return nil
        }
        if errorName == "io.scened.Manager.Stopping" {
            // A clean stop began: refused, nothing changed (the test checks a stop was asked for).
            stoppingRefusals += 1
            acknowledgedTotal += 1
            return nil
        }
        var next = acked
        let expected = next.apply(call, newID: newID)
        switch (expected, errorName) {
        case (.ok, nil):
            break
        case (.error(let name), let got?) where got == "io.scened.Manager." + name:
            acknowledgedTotal += 1
            errorsTotal += 1
            return nil
        default:
            return "client \(index): \(call): the model expected \(expected), the daemon answered \(text)\n  acknowledged state before it:\n    "
                + acked.sessions.sorted { $0.key < $1.key }.map { "s\($0.key): \($0.value)" }.joined(separator: "\n    ")
        }
        // The reply must show the state the model predicts.
        if case .object(let session)? = parameters["session"], let id = session["id"]?.identifierNumber {
            guard let model = next.sessions[id] else {
                return "client \(index): \(call): the reply shows s\(id), which the model does not have: \(text)"
            }
            let condition = session["condition"]?.stringValue
            let state = session["state"]?.stringValue
            if condition != (model.live ? "live" : "archived") || state != model.state.rawValue {
                return "client \(index): \(call): the reply shows s\(id) \(condition ?? "?") \(state ?? "?"), the model \(model): \(text)"
            }
            if case .saveState(_, let counter) = call.operation,
               session["restoration"]?["json"]?["n"]?.intValue != Int64(counter) {
                return "client \(index): \(call): the reply does not show the saved state: \(text)"
            }
            if session["protected"]?.boolValue != model.protected || session["footprint"]?.intValue != Int64(model.footprint) {
                return "client \(index): \(call): the reply shows s\(id) protected/footprint otherwise than the model \(model): \(text)"
            }
        }
        if case .object(let app)? = parameters["app"], let name = app["id"]?.stringValue, let model = next.apps[name] {
            if app["process"]?.stringValue != model.process || app["baseFootprint"]?.intValue != Int64(model.baseFootprint) {
                return "client \(index): \(call): the reply shows app \(name) otherwise than the model \(model): \(text)"
            }
        }
        for event in parameters["events"]?.arrayValue ?? [] {
            guard let seq = event["seq"]?.intValue, let name = event["event"]?.stringValue else {
                return "client \(index): \(call): an event without seq or name: \(text)"
            }
            ackedEvents.append(AckedEvent(seq: UInt64(seq), name: name, session: event["session"]?.identifierNumber,
                                          call: call.number))
        }
        if case .connect = call.operation, let newID { namedSessions.append(newID) }
        if case .beginTask = call.operation, let newID { namedTasks.append(newID) }
        acked = next
        changesApplied.add(1, ordering: .relaxed)
        acknowledgedTotal += 1
        return nil
    }

    // MARK: - After a crash

    /// Matches the stored state against the acknowledged state followed by 0, 1, ... of the
    /// calls that were in flight, and adopts the first that fits. Returns the number of
    /// unacknowledged calls found committed, or a description of why nothing fits.
    /// After a clean stop every foreground scene went to the background (R32) once the calls
    /// were done: that is applied to each candidate state (`cleanStop`).
    func resolve(against stored: ClientState, cleanStop: Bool = false)
        -> Result<(committed: Int, adoptedSessions: [UInt64], adoptedTasks: [UInt64]), TestFailure> {
        var state = acked
        var fits: Int?
        for m in 0...inFlight.count {
            if m > 0 {
                let call = inFlight[m - 1]
                var newID: UInt64?
                switch call.operation {
                case .connect: newID = stored.sessions.first { $0.value.tag == call.number }?.key
                case .beginTask: newID = stored.tasks.first { $0.value.tag == call.number }?.key
                default: break
                }
                _ = state.apply(call, newID: newID)
            }
            var candidate = state
            if cleanStop { candidate.sendForegroundScenesToBackground() }
            if candidate.sameStoredState(as: stored) {
                fits = m
                break
            }
        }
        guard let m = fits else {
            var lines = ["client \(index): the stored state is neither the acknowledged one nor one the \(inFlight.count) calls in flight lead to.",
                         "  in flight: \(inFlight.map(\.description).joined(separator: "; "))",
                         "  acknowledged vs stored:"]
            lines += acked.differences(from: stored, "acknowledged", "stored").map { "    " + $0 }
            return .failure(TestFailure(lines.joined(separator: "\n")))
        }
        if cleanStop { state.sendForegroundScenesToBackground() }
        let adoptedSessions = state.sessions.keys.filter { acked.sessions[$0] == nil && !acked.discarded.contains($0) }.sorted()
        let adoptedTasks = state.tasks.keys.filter { acked.tasks[$0] == nil }.sorted()
        acked = state
        inFlight = []
        return .success((m, adoptedSessions, adoptedTasks))
    }
}
