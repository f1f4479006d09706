import ScenedTestSupport
import Varlink

/// The crash test's checks of a database image taken after a kill, and of the daemon restarted
/// on it. Carries what must hold across kills: the event log only grows, old rows never change,
/// sequence numbers and ids are never handed out twice.
struct StoredStateChecker {
    /// The newest sequence number of the previous image, and the digest of the log up to it.
    private(set) var previousMax: UInt64 = 0
    private var previousDigest = ""
    private var previousNextSequence: UInt64 = 1
    /// Every sequence number an acknowledged reply carried, with its event and session.
    private var acknowledgedEvents: [UInt64: (name: String, session: UInt64?)] = [:]
    /// Every session id and task token ever named to a client (in a reply, or adopted from a
    /// committed but unanswered call).
    private var namedSessions: Set<UInt64> = []
    private var namedTasks: Set<UInt64> = []
    /// What the event log says each session and app is, from all logged events so far.
    private var sessionByEvents: [UInt64: (condition: Int64, state: Int64)] = [:]
    private var discardedByEvents: Set<UInt64> = []
    private var appByEvents: [Int64: Int64] = [:]
    private(set) var lastDump: DatabaseDump?
    /// The highest session id any client was ever given (or found committed for it).
    var highestSessionNamed: UInt64 { namedSessions.max() ?? 0 }

    private(set) var eventsChecked = 0

    /// Checks the image of one crash and resolves every client's calls in flight.
    mutating func check(_ dump: DatabaseDump, clients: [CrashClient], context: String,
                        cleanStop: Bool = false) throws -> (committed: Int, inFlight: Int) {
        func fail(_ what: String) -> TestFailure { TestFailure("\(context): \(what)") }
        guard dump.integrity == ["ok"] else {
            throw fail("PRAGMA integrity_check: \(dump.integrity.prefix(10).joined(separator: "; "))")
        }
        // Calls acknowledged in this cycle: numbers never reused, in the run or within a reply.
        for client in clients {
            for e in client.ackedEvents {
                if let earlier = acknowledgedEvents[e.seq] {
                    throw fail("sequence number \(e.seq) acknowledged twice: \(earlier.name) s\(earlier.session ?? 0), then \(e.name) s\(e.session ?? 0) (client \(client.index), call #\(e.call))")
                }
                acknowledgedEvents[e.seq] = (e.name, e.session)
            }
            for id in client.namedSessions {
                guard namedSessions.insert(id).inserted else { throw fail("session id s\(id) handed out twice (client \(client.index))") }
            }
            for token in client.namedTasks {
                guard namedTasks.insert(token).inserted else { throw fail("task token t\(token) handed out twice (client \(client.index))") }
            }
        }
        guard dump.hasSchema else {
            // Killed before the first schema commit: nothing can have been acknowledged yet.
            guard previousMax == 0, clients.allSatisfy({ $0.acked.sessions.isEmpty && $0.acked.apps.isEmpty }) else {
                throw fail("the database has no schema, but changes had been acknowledged before")
            }
            for client in clients {
                if case .failure(let f) = client.resolve(against: ClientState()) { throw fail(f.message) }
            }
            return (0, 0)
        }
        guard dump.userVersion == 6 else { throw fail("user_version is \(dump.userVersion), expected 6") }

        // The event log: contiguous from 1, old rows unchanged, the counter right after it.
        if let lo = dump.eventMin, let hi = dump.eventMax {
            guard lo == 1, dump.eventCount == hi - lo + 1 else {
                throw fail("the event log has gaps: \(dump.eventCount) rows from #\(lo) to #\(hi)")
            }
            guard dump.nextSequence == hi + 1 else {
                throw fail("counters.next_sequence is \(dump.nextSequence), the log ends at #\(hi)")
            }
        } else {
            guard previousMax == 0 else { throw fail("the event log is empty, it held \(previousMax) events before") }
        }
        guard dump.nextSequence >= previousNextSequence else {
            throw fail("next_sequence went back from \(previousNextSequence) to \(dump.nextSequence)")
        }
        if previousMax > 0 {
            guard (dump.eventMax ?? 0) >= previousMax, dump.hashUpTo == previousDigest else {
                throw fail("the logged events up to #\(previousMax) changed since the last crash (events rewritten or lost)")
            }
        }
        var expectedSeq = previousMax + 1
        for e in dump.newEvents {
            guard e.seq == expectedSeq else { throw fail("event #\(e.seq) follows #\(expectedSeq - 1)") }
            expectedSeq += 1
            try follow(e, dump)
        }
        eventsChecked += dump.newEvents.count

        // Every acknowledged event is logged as it was answered.
        var logged: [UInt64: DatabaseDump.Event] = [:]
        for e in dump.newEvents { logged[e.seq] = e }
        for client in clients {
            for a in client.ackedEvents {
                guard let row = logged[a.seq] else {
                    throw fail("acknowledged event #\(a.seq) \(a.name) s\(a.session ?? 0) (client \(client.index), call #\(a.call)) is not in the log (the log ends at #\(dump.eventMax ?? 0))")
                }
                guard StoredEventName.codes[a.name] == row.name, row.session == a.session else {
                    throw fail("event #\(a.seq) was acknowledged as \(a.name) s\(a.session ?? 0) but is logged as \(StoredEventName.name(row.name)) s\(row.session ?? 0)")
                }
            }
        }

        try checkConsistency(dump, fail)

        // Each client: acknowledged changes all there, the rest a prefix of its calls in flight.
        var committed = 0
        var inFlight = 0
        for client in clients {
            inFlight += client.inFlight.count
            let stored = try ClientState(dump: dump, client: client.index)
            switch client.resolve(against: stored, cleanStop: cleanStop) {
            case .failure(let f):
                throw fail(f.message)
            case .success(let r):
                committed += r.committed
                for id in r.adoptedSessions {
                    guard namedSessions.insert(id).inserted else { throw fail("session id s\(id) used twice (client \(client.index))") }
                }
                for token in r.adoptedTasks {
                    guard namedTasks.insert(token).inserted else { throw fail("task token t\(token) used twice (client \(client.index))") }
                }
            }
        }

        previousMax = dump.eventMax ?? 0
        previousDigest = dump.hashAll
        previousNextSequence = dump.nextSequence
        lastDump = dump
        return (committed, inFlight)
    }

    /// Applies one logged event to what the log says about sessions and apps.
    private mutating func follow(_ e: DatabaseDump.Event, _ dump: DatabaseDump) throws {
        func scene(_ condition: Int64, _ state: Int64) {
            if let s = e.session { sessionByEvents[s] = (condition, state) }
        }
        switch e.name {
        case 1, 6: scene(0, 0)         // configurationForConnecting, willConnectTo: live, unattached
        case 7, 9: scene(0, 1)         // willEnterForeground, willResignActive: foregroundInactive
        case 8: scene(0, 2)            // didBecomeActive
        case 10: scene(0, 3)           // didEnterBackground
        case 11: scene(1, 0)           // didDisconnect: archived, unattached
        case 2:                        // didDiscardSceneSessions
            for id in try dump.detailSessions(e) {
                sessionByEvents[id] = nil
                discardedByEvents.insert(id)
            }
        case 14:                       // terminated: its live sessions archived
            for id in try dump.detailSessions(e) { sessionByEvents[id] = (1, 0) }
            appByEvents[e.appRef] = 0
        case 0, 13: appByEvents[e.appRef] = 1   // didFinishLaunching, resumed
        case 12: appByEvents[e.appRef] = 2      // suspended
        default: break
        }
    }

    /// No half-applied change: rows agree with each other and with the event log.
    private func checkConsistency(_ dump: DatabaseDump, _ fail: (String) -> TestFailure) throws {
        var apps: [Int64: DatabaseDump.App] = [:]
        var pending: Set<UInt64> = []
        for a in dump.apps {
            apps[a.ref] = a
            pending.formUnion(a.pendingDiscards)
            guard appByEvents[a.ref] == a.process else {
                throw fail("app \(a.id) is stored with process \(a.process), its last logged event says \(appByEvents[a.ref].map(String.init) ?? "nothing")")
            }
        }
        var sessions: Set<UInt64> = []
        for s in dump.sessions {
            sessions.insert(s.id)
            guard let app = apps[s.appRef] else { throw fail("s\(s.id) names app ref \(s.appRef), which is not stored") }
            guard !pending.contains(s.id) else { throw fail("s\(s.id) is stored and also awaits its discard") }
            switch s.condition {
            case 0:
                guard app.process != 0 else { throw fail("s\(s.id) is live but its app \(app.id) is not running") }
                guard (1...3).contains(s.sceneState) else { throw fail("live s\(s.id) has scene state \(s.sceneState)") }
            case 1:
                guard s.sceneState == 0 else { throw fail("archived s\(s.id) has scene state \(s.sceneState), not unattached") }
            default:
                throw fail("s\(s.id) has condition \(s.condition)")
            }
            guard let byEvents = sessionByEvents[s.id] else {
                throw fail("s\(s.id) is stored but the event log never connected it")
            }
            guard byEvents == (s.condition, s.sceneState) else {
                throw fail("s\(s.id) is stored as condition \(s.condition) state \(s.sceneState), its last logged event says condition \(byEvents.condition) state \(byEvents.state)")
            }
            guard s.id < dump.nextSession else { throw fail("s\(s.id) is not below counters.next_session \(dump.nextSession)") }
        }
        for (id, _) in sessionByEvents where !sessions.contains(id) && !pending.contains(id) {
            throw fail("the event log shows s\(id) alive, but it is neither stored nor awaiting its discard")
        }
        for id in pending where discardedByEvents.contains(id) {
            throw fail("s\(id) awaits its discard, but didDiscardSceneSessions for it is logged already")
        }
        // The suspension clock and the task budget agree with the scenes and tasks (what
        // refreshActivity maintains): a running app with no foreground scene has entered the
        // background, and is idle unless it holds a task; one with a foreground scene is neither.
        var foreground: Set<Int64> = []
        for s in dump.sessions where s.condition == 0 && (s.sceneState == 1 || s.sceneState == 2) { foreground.insert(s.appRef) }
        var withTasks: Set<Int64> = []
        for t in dump.tasks { withTasks.insert(t.appRef) }
        for a in dump.apps {
            let expectation: (idle: Bool, background: Bool)
            if a.process != 1 {
                expectation = (false, false)
            } else if foreground.contains(a.ref) {
                expectation = (false, false)
            } else {
                expectation = (!withTasks.contains(a.ref), true)
            }
            guard (a.idleSince != nil) == expectation.idle, (a.backgroundEnteredAt != nil) == expectation.background else {
                throw fail("app \(a.id) (process \(a.process), foreground scene \(foreground.contains(a.ref)), tasks \(withTasks.contains(a.ref))) is stored with idle_since \(a.idleSince.map(String.init) ?? "NULL") and background_entered_at \(a.backgroundEnteredAt.map(String.init) ?? "NULL")")
            }
        }
        for t in dump.tasks {
            guard apps[t.appRef] != nil else { throw fail("t\(t.token) names app ref \(t.appRef), which is not stored") }
            if let s = t.session, !sessions.contains(s) { throw fail("t\(t.token) names s\(s), which is not stored") }
            guard t.token < dump.nextTask else { throw fail("t\(t.token) is not below counters.next_task \(dump.nextTask)") }
        }
    }

    /// The daemon restarted on the image restores it exactly: the same sessions in the same
    /// condition, state, saved state and footprint, the same apps, and the event numbering
    /// continuing where the log ends.
    func checkRestored(_ daemon: Scened, context: String) throws {
        func fail(_ what: String) -> TestFailure { TestFailure("\(context): \(what)") }
        let client = try daemon.client(timeout: .seconds(20))
        let status = try client.call("io.scened.Manager.GetStatus")["status"] ?? .null
        let dump = lastDump
        let expectedNext = dump?.nextSequence ?? 1
        guard status["nextSeq"]?.intValue == Int64(expectedNext) else {
            throw fail("after the restart nextSeq is \(status["nextSeq"] ?? .null), the stored counter says \(expectedNext)")
        }
        let listed = try client.call("io.scened.Manager.ListSessions")["sessions"]?.arrayValue ?? []
        var restored: [UInt64: JSONValue] = [:]
        for s in listed { if let id = s["id"]?.identifierNumber { restored[id] = s } }
        let stored = dump?.sessions ?? []
        guard restored.count == stored.count else {
            throw fail("the restarted daemon has \(restored.count) sessions, the database \(stored.count)")
        }
        var appNames: [Int64: String] = [:]
        for a in dump?.apps ?? [] { appNames[a.ref] = a.id }
        for s in stored {
            guard let r = restored[s.id] else { throw fail("s\(s.id) is stored but not restored") }
            let condition = s.condition == 0 ? "live" : "archived"
            let state = SceneState(code: s.sceneState)?.rawValue
            guard r["condition"]?.stringValue == condition, r["state"]?.stringValue == state,
                  r["footprint"]?.intValue == Int64(s.footprint), r["app"]?.stringValue == appNames[s.appRef],
                  r["protected"]?.boolValue == s.protected,
                  r["sceneInstance"]?.intValue == s.sceneInstance else {
                throw fail("s\(s.id) restored as \(r), stored as \(condition) \(state ?? "?") footprint \(s.footprint)")
            }
            // Listings carry no restoration data (only its size): GetSession has it.
            let full = s.restoration == nil && r["restorationSize"]?.intValue == 0 ? r
                : (try client.call("io.scened.Manager.GetSession", ["session": .string("s\(s.id)")])["session"] ?? .null)
            if let text = s.restoration {
                let savedN = (try? JSONParser.parse(text))?["n"]
                guard full["restoration"]?["json"]?["n"] == savedN else {
                    throw fail("s\(s.id) restored with restoration \(full["restoration"] ?? .null), stored \(text)")
                }
            } else if full["restoration"] != nil || r["restorationSize"]?.intValue != 0 {
                throw fail("s\(s.id) restored with restoration data it never had")
            }
        }
        let listedApps = try client.call("io.scened.Manager.ListApps")["apps"]?.arrayValue ?? []
        guard listedApps.count == (dump?.apps.count ?? 0) else {
            throw fail("the restarted daemon has \(listedApps.count) apps, the database \(dump?.apps.count ?? 0)")
        }
        for a in dump?.apps ?? [] {
            guard let r = listedApps.first(where: { $0["id"]?.stringValue == a.id }) else { throw fail("app \(a.id) not restored") }
            let process = ["notRunning", "running", "suspended"][Int(a.process)]
            let pending = r["pendingDiscards"]?.arrayValue?.compactMap(\.identifierNumber) ?? []
            guard r["process"]?.stringValue == process, pending == a.pendingDiscards,
                  r["baseFootprint"]?.intValue == Int64(a.baseFootprint) else {
                throw fail("app \(a.id) restored as \(r), stored as \(process) pending \(a.pendingDiscards)")
            }
        }
        let tasks = dump?.tasks.count ?? 0
        guard status["backgroundTasks"]?.intValue == Int64(tasks) else {
            throw fail("the restarted daemon has \(status["backgroundTasks"] ?? .null) background tasks, the database \(tasks)")
        }
        // Deadlines come back as they were: suspension from idle_since, task expiry from the
        // background entry and the task's start (the test runs with 1 h for both).
        let hour: Int64 = 3_600_000_000
        for a in dump?.apps ?? [] {
            guard let r = listedApps.first(where: { $0["id"]?.stringValue == a.id }) else { continue }
            let suspendsAt = a.process == 1 ? a.idleSince.map { $0 + hour } : nil
            guard r["suspendsAt"]?.intValue == suspendsAt else {
                throw fail("app \(a.id) restored with suspendsAt \(r["suspendsAt"] ?? .null), stored idle_since \(a.idleSince.map(String.init) ?? "NULL")")
            }
            for t in dump?.tasks ?? [] where t.appRef == a.ref {
                guard let rt = r["tasks"]?.arrayValue?.first(where: { $0["token"]?.identifierNumber == t.token }) else {
                    throw fail("t\(t.token) of \(a.id) is stored but not restored")
                }
                let expiresAt = a.process == 1 ? a.backgroundEnteredAt.map { max($0 + hour, t.beganAt) } : nil
                guard rt["beganAt"]?.intValue == t.beganAt, rt["expiresAt"]?.intValue == expiresAt,
                      rt["session"]?.identifierNumber == t.session, rt["name"]?.stringValue == t.name else {
                    throw fail("t\(t.token) restored as \(rt), stored began_at \(t.beganAt), background_entered_at \(a.backgroundEnteredAt.map(String.init) ?? "NULL")")
                }
            }
        }
    }
}
