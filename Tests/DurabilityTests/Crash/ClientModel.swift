import ScenedTestSupport
import Varlink

/// The crash test's model of one client's world. Each client has apps of its own, so nothing
/// another client does can change them: the client's acknowledged replies, in order, determine
/// its state exactly, and after a crash its stored state must equal the acknowledged state
/// followed by some prefix of the calls that were still in flight (calls on one connection are
/// handled, committed and answered in order).

enum SceneState: String, Sendable {
    case unattached, foregroundInactive, foregroundActive, background

    /// SceneStore's storage code (StorageCodes).
    var code: Int64 {
        switch self {
        case .unattached: 0
        case .foregroundInactive: 1
        case .foregroundActive: 2
        case .background: 3
        }
    }

    init?(code: Int64) {
        switch code {
        case 0: self = .unattached
        case 1: self = .foregroundInactive
        case 2: self = .foregroundActive
        case 3: self = .background
        default: return nil
        }
    }
}

struct ModelSession: Equatable, CustomStringConvertible {
    var app: String
    var live: Bool
    var state: SceneState
    /// The counter of the last SaveState (the JSON payload carries it); nil: nothing saved.
    var saved: Int?
    var footprint: UInt64
    var protected = false
    /// The number of the Connect call that created it (carried in userInfo).
    var tag: Int

    var description: String {
        "\(app) \(live ? "live" : "archived") \(state.rawValue) saved=\(saved.map(String.init) ?? "-") fp=\(footprint)\(protected ? " protected" : "") op#\(tag)"
    }
}

struct ModelApp: Equatable, CustomStringConvertible {
    /// "running" or "notRunning" (no timer runs in the test, so never "suspended").
    var process: String
    var pendingDiscards: [UInt64]
    var baseFootprint: UInt64 = 0

    var description: String { "\(process) pending=\(pendingDiscards) base=\(baseFootprint)" }
}

struct ModelTask: Equatable, CustomStringConvertible {
    var app: String
    var session: UInt64?
    /// The number of the BeginBackgroundTask call (carried in the task's name).
    var tag: Int

    var description: String { "\(app) session=\(session.map { "s\($0)" } ?? "-") op#\(tag)" }
}

enum Operation: CustomStringConvertible {
    case connect(app: String, background: Bool, footprint: UInt64)
    case activate(UInt64)
    case background(UInt64)
    case deactivate(UInt64)
    case disconnect(UInt64)
    case discard(UInt64)
    case saveState(UInt64, counter: Int)
    case setFootprint(UInt64, UInt64)
    case setProtected(UInt64, Bool)
    case setAppFootprint(String, UInt64)
    case launch(String)
    case terminate(String)
    case beginTask(UInt64)
    case endTask(UInt64)

    var description: String {
        switch self {
        case .connect(let app, let bg, let fp): "Connect(\(app)\(bg ? ", background" : ""), footprint \(fp))"
        case .activate(let s): "Activate(s\(s))"
        case .background(let s): "Background(s\(s))"
        case .deactivate(let s): "Deactivate(s\(s))"
        case .disconnect(let s): "Disconnect(s\(s))"
        case .discard(let s): "Discard(s\(s))"
        case .saveState(let s, let n): "SaveState(s\(s), n=\(n))"
        case .setFootprint(let s, let fp): "SetFootprint(s\(s), \(fp))"
        case .setProtected(let s, let flag): "SetProtected(s\(s), \(flag))"
        case .setAppFootprint(let app, let fp): "SetAppFootprint(\(app), \(fp))"
        case .launch(let app): "Launch(\(app))"
        case .terminate(let app): "Terminate(\(app))"
        case .beginTask(let s): "BeginBackgroundTask(s\(s))"
        case .endTask(let t): "EndBackgroundTask(t\(t))"
        }
    }
}

struct ClientCall: CustomStringConvertible {
    /// Unique per client, across the whole run; tags what the call creates or saves.
    let number: Int
    let operation: Operation

    var description: String { "#\(number) \(operation)" }
}

enum Outcome: Equatable, CustomStringConvertible {
    case ok
    case error(String)

    var description: String {
        switch self {
        case .ok: "success"
        case .error(let name): name
        }
    }
}

struct ClientState: Equatable {
    var apps: [String: ModelApp] = [:]
    var sessions: [UInt64: ModelSession] = [:]
    var tasks: [UInt64: ModelTask] = [:]
    /// Sessions this client discarded: further calls on them fail with SessionDiscarded. Not
    /// stored as such, so not part of the comparison with a database.
    var discarded: Set<UInt64> = []

    /// Identifiers for what an unanswered call creates, until the daemon names it.
    static let placeholderBase: UInt64 = 1 << 62

    /// A clean stop's background chain (R32): no scene stays in the foreground.
    mutating func sendForegroundScenesToBackground() {
        for (id, s) in sessions where s.live && (s.state == .foregroundActive || s.state == .foregroundInactive) {
            sessions[id]!.state = .background
        }
    }

    func sameStoredState(as other: ClientState) -> Bool {
        apps == other.apps && sessions == other.sessions && tasks == other.tasks
    }

    private mutating func ensureRunning(_ app: String) {
        // A cold launch delivers the pending discards (R14); the base footprint stays.
        if apps[app]?.process != "running" {
            apps[app] = ModelApp(process: "running", pendingDiscards: [], baseFootprint: apps[app]?.baseFootprint ?? 0)
        }
    }

    private func missing(_ id: UInt64) -> Outcome {
        .error(discarded.contains(id) ? "SessionDiscarded" : "NoSuchSession")
    }

    /// Applies a call as scened would. `newID` is the session id or task token the daemon gave a
    /// Connect or BeginBackgroundTask (nil: a placeholder). A refused call changes nothing.
    mutating func apply(_ call: ClientCall, newID: UInt64?) -> Outcome {
        let placeholder = Self.placeholderBase + UInt64(call.number)
        switch call.operation {
        case .connect(let app, let background, let footprint):
            ensureRunning(app)
            sessions[newID ?? placeholder] = ModelSession(app: app, live: true,
                                                          state: background ? .background : .foregroundActive,
                                                          saved: nil, footprint: footprint, tag: call.number)
        case .activate(let id):
            guard var s = sessions[id] else { return missing(id) }
            ensureRunning(s.app)
            s.live = true
            s.state = .foregroundActive
            sessions[id] = s
        case .background(let id):
            guard var s = sessions[id] else { return missing(id) }
            guard s.live else { return .error("InvalidTransition") }
            if s.state == .foregroundActive || s.state == .foregroundInactive { s.state = .background }
            sessions[id] = s
        case .deactivate(let id):
            guard var s = sessions[id] else { return missing(id) }
            guard s.live, s.state == .foregroundActive || s.state == .foregroundInactive else {
                return .error("InvalidTransition")
            }
            s.state = .foregroundInactive
            sessions[id] = s
        case .disconnect(let id):
            guard var s = sessions[id] else { return missing(id) }
            s.live = false
            s.state = .unattached
            sessions[id] = s
        case .discard(let id):
            guard let s = sessions[id] else { return missing(id) }
            if apps[s.app]?.process != "running" { apps[s.app]?.pendingDiscards.append(id) }
            sessions[id] = nil
            for (token, task) in tasks where task.session == id { tasks[token]?.session = nil }
            discarded.insert(id)
        case .saveState(let id, let counter):
            guard sessions[id] != nil else { return missing(id) }
            sessions[id]!.saved = counter
        case .setFootprint(let id, let footprint):
            guard sessions[id] != nil else { return missing(id) }
            sessions[id]!.footprint = footprint
        case .setProtected(let id, let flag):
            guard sessions[id] != nil else { return missing(id) }
            sessions[id]!.protected = flag
        case .setAppFootprint(let app, let footprint):
            guard apps[app] != nil else { return .error("NoSuchApp") }
            apps[app]!.baseFootprint = footprint
        case .launch(let app):
            if apps[app]?.process == "running" { return .error("InvalidTransition") }
            ensureRunning(app)
        case .terminate(let app):
            guard let a = apps[app] else { return .error("NoSuchApp") }
            guard a.process == "running" else { return .error("InvalidTransition") }
            for (id, s) in sessions where s.app == app && s.live {
                sessions[id]!.live = false
                sessions[id]!.state = .unattached
            }
            for (token, task) in tasks where task.app == app { tasks[token] = nil }
            apps[app]!.process = "notRunning"
        case .beginTask(let id):
            guard let s = sessions[id] else { return missing(id) }
            guard apps[s.app]?.process == "running" else { return .error("InvalidTransition") }
            tasks[newID ?? placeholder] = ModelTask(app: s.app, session: id, tag: call.number)
        case .endTask(let token):
            guard tasks[token] != nil else { return .error("NoSuchTask") }
            tasks[token] = nil
        }
        return .ok
    }

    /// What differs between two states, for failure messages.
    func differences(from other: ClientState, _ mine: String, _ theirs: String) -> [String] {
        var out: [String] = []
        for app in Set(apps.keys).union(other.apps.keys).sorted() where apps[app] != other.apps[app] {
            out.append("app \(app): \(mine) \(apps[app].map { "\($0)" } ?? "absent"), \(theirs) \(other.apps[app].map { "\($0)" } ?? "absent")")
        }
        for id in Set(sessions.keys).union(other.sessions.keys).sorted() where sessions[id] != other.sessions[id] {
            out.append("s\(id): \(mine) \(sessions[id].map { "\($0)" } ?? "absent"), \(theirs) \(other.sessions[id].map { "\($0)" } ?? "absent")")
        }
        for t in Set(tasks.keys).union(other.tasks.keys).sorted() where tasks[t] != other.tasks[t] {
            out.append("t\(t): \(mine) \(tasks[t].map { "\($0)" } ?? "absent"), \(theirs) \(other.tasks[t].map { "\($0)" } ?? "absent")")
        }
        return out
    }
}

extension ClientState {
    /// The part of a database that belongs to client `index` (its apps, their sessions and
    /// tasks), in the model's terms.
    init(dump: DatabaseDump, client index: Int) throws {
        let prefix = CrashClient.appPrefix(index)
        var appByRef: [Int64: String] = [:]
        for app in dump.apps {
            appByRef[app.ref] = app.id
            guard app.id.hasPrefix(prefix) else { continue }
            let process = switch app.process {
            case 0: "notRunning"
            case 1: "running"
            case 2: "suspended"
            default: "process code \(app.process)"
            }
            apps[app.id] = ModelApp(process: process, pendingDiscards: app.pendingDiscards, baseFootprint: app.baseFootprint)
        }
        for s in dump.sessions {
            guard let app = appByRef[s.appRef], app.hasPrefix(prefix) else { continue }
            guard case .object(let info)? = try? JSONParser.parse(s.userInfo), let tag = info["op"]?.intValue,
                  info["c"]?.intValue == Int64(index) else {
                throw TestFailure("stored s\(s.id) of \(app) has a userInfo no Connect of client \(index) sent: \(s.userInfo)")
            }
            var saved: Int?
            if let text = s.restoration {
                guard case .object(let r)? = try? JSONParser.parse(text), let n = r["n"]?.intValue else {
                    throw TestFailure("stored s\(s.id) has restoration data no SaveState sent: \(text)")
                }
                saved = Int(n)
            }
            guard let state = SceneState(code: s.sceneState), s.condition == 0 || s.condition == 1 else {
                throw TestFailure("stored s\(s.id) has condition \(s.condition), scene state \(s.sceneState)")
            }
            sessions[s.id] = ModelSession(app: app, live: s.condition == 0, state: state, saved: saved,
                                          footprint: s.footprint, protected: s.protected, tag: Int(tag))
        }
        for t in dump.tasks {
            guard let app = appByRef[t.appRef], app.hasPrefix(prefix) else { continue }
            let namePrefix = "c\(index)-op"
            guard t.name.hasPrefix(namePrefix), let tag = Int(t.name.dropFirst(namePrefix.count)) else {
                throw TestFailure("stored t\(t.token) has a name no BeginBackgroundTask of client \(index) sent: \(t.name)")
            }
            tasks[t.token] = ModelTask(app: app, session: t.session, tag: tag)
        }
    }
}
