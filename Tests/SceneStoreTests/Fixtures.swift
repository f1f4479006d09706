import Testing
import SceneCore
@testable import SceneStore

let mail = AppID("com.example.mail")!
let maps = AppID("com.example.maps")!
let notes = AppID("com.example.notes")!
let music = AppID("org.example.music-player")!

func at(_ seconds: Double) -> Timestamp { Timestamp(microseconds: 1_700_000_000_000_000 + Int64(seconds * 1_000_000)) }

/// The public fields of an app record. AppRecord's own == also compares an engine-internal
/// wake-up hint, which a restored engine recomputes; what the store must keep is all of this.
struct AppFields: Equatable, CustomStringConvertible {
    var id: AppID, process: ProcessState
    var active: Int32, inactive: Int32, background: Int32
    var sessions: [SessionID], pendingDiscards: [SessionID], tasks: [TaskToken]
    var idleSince: Timestamp?, backgroundEnteredAt: Timestamp?, launchedAt: Timestamp?
    var launches: UInt32, baseFootprint: UInt64
    var activeModes: BackgroundModes

    init(_ a: AppRecord, storedOnly: Bool = false) {
        id = a.id
        process = a.process
        active = storedOnly ? 0 : a.activeScenes
        inactive = storedOnly ? 0 : a.inactiveScenes
        background = storedOnly ? 0 : a.backgroundScenes
        sessions = storedOnly ? [] : a.sessions.sorted()
        pendingDiscards = a.pendingDiscards
        tasks = storedOnly ? [] : a.tasks
        idleSince = a.idleSince
        backgroundEnteredAt = a.backgroundEnteredAt
        launchedAt = a.launchedAt
        launches = a.launches
        baseFootprint = a.baseFootprint
        activeModes = a.activeModes
    }

    var description: String {
        "\(id) \(process) pending=\(pendingDiscards) idle=\(String(describing: idleSince)) modes=[\(activeModes)]"
    }
}

/// What a store must give back: every stored field of every record, and the counters.
func expectStoredState(_ loaded: EngineSnapshot, equals expected: EngineSnapshot,
                       sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(loaded.apps.map { AppFields($0, storedOnly: true) } == expected.apps.map { AppFields($0, storedOnly: true) },
            sourceLocation: sourceLocation)
    #expect(loaded.sessions == expected.sessions, sourceLocation: sourceLocation)
    #expect(loaded.tasks == expected.tasks, sourceLocation: sourceLocation)
    #expect(loaded.clock == expected.clock, sourceLocation: sourceLocation)
    #expect(loaded.nextSequence == expected.nextSequence, sourceLocation: sourceLocation)
    #expect(loaded.nextSessionNumber == expected.nextSessionNumber, sourceLocation: sourceLocation)
    #expect(loaded.nextTaskNumber == expected.nextTaskNumber, sourceLocation: sourceLocation)
    #expect(loaded.schedules == expected.schedules, sourceLocation: sourceLocation)
    #expect(loaded.notifications == expected.notifications, sourceLocation: sourceLocation)
    #expect(loaded.nextNotificationNumber == expected.nextNotificationNumber, sourceLocation: sourceLocation)
    #expect(loaded.pendingOpens == expected.pendingOpens, sourceLocation: sourceLocation)
    #expect(loaded.nextOpenNumber == expected.nextOpenNumber, sourceLocation: sourceLocation)
    #expect(loaded.activationConditions == expected.activationConditions, sourceLocation: sourceLocation)
}

/// Two engines in the same observable state (derived fields included).
func expectSameEngine(_ a: LifecycleEngine, _ b: LifecycleEngine, sourceLocation: SourceLocation = #_sourceLocation) {
    let x = a.snapshot, y = b.snapshot
    #expect(x.apps.map { AppFields($0) } == y.apps.map { AppFields($0) }, sourceLocation: sourceLocation)
    #expect(x.sessions == y.sessions, sourceLocation: sourceLocation)
    #expect(x.tasks == y.tasks, sourceLocation: sourceLocation)
    #expect(x.clock == y.clock && x.nextSequence == y.nextSequence && x.nextSessionNumber == y.nextSessionNumber
                && x.nextTaskNumber == y.nextTaskNumber, sourceLocation: sourceLocation)
    #expect(a.nextDeadline == b.nextDeadline, sourceLocation: sourceLocation)
}

/// Drives an engine and commits what each command changed, as the daemon does at the end of a
/// loop iteration.
struct Driver {
    var engine: LifecycleEngine
    let store: SceneStore?
    /// Every event committed, in order.
    var events: [LifecycleEvent] = []

    init(engine: LifecycleEngine = LifecycleEngine(clock: at(0)), store: SceneStore?) {
        self.engine = engine
        self.store = store
    }

    @discardableResult
    mutating func run(_ command: Command, at time: Timestamp) throws -> (CommandResult, [Effect]) {
        var effects: [Effect] = []
        let result = try engine.handle(command, now: time, effects: &effects)
        try store?.commit(StoreBatch(effects: effects, engine: engine))
        for case .event(let e) in effects { events.append(e) }
        return (result, effects)
    }

    mutating func connect(_ request: ConnectRequest, at time: Timestamp) throws -> SessionID {
        guard case .session(let id) = try run(.connect(request), at: time).0 else {
            Issue.record("connect returned no session")
            return SessionID(0)
        }
        return id
    }

    mutating func begin(_ request: BeginTaskRequest, at time: Timestamp) throws -> TaskToken {
        guard case .task(let token) = try run(.beginTask(request), at: time).0 else {
            Issue.record("beginTask returned no token")
            return TaskToken(0)
        }
        return token
    }
}

let pressureNote = ReclaimNote(level: "critical", usageBefore: 9_000_000_000, usageAfter: 7_500_000_000,
                               budget: 8_000_000_000, score: 0.8125, reason: "oldest background scene")
let pressureNoteWithoutScore = ReclaimNote(level: "warning ⚠", usageBefore: 5, usageAfter: 4, budget: UInt64.max,
                                           score: nil, reason: "")

/// Drives an engine through every kind of state the store must keep: all scene states and both
/// kept conditions, restoration data as JSON, bytes and empty bytes, odd userInfo, huge
/// footprints, protected sessions, several configurations and roles, pending discards in a
/// non-sorted order, open tasks with and without expirationSentAt, suspended, running and
/// terminated apps, and events with every detail and cause.
func driveEverything(_ d: inout Driver) throws {
    // mail: background, two tasks whose expiration has been sent, one ended.
    let s1 = try d.connect(ConnectRequest(app: mail, userInfo: UserInfo(json: #"{"a":1,"name":"Zoë 🎬"}"#),
                                          footprint: 1_000, restoreCostMs: 50, isProtected: true), at: at(1))
    let s2 = try d.connect(ConnectRequest(app: mail, role: .windowExternalDisplayNonInteractive,
                                          configurationName: "Inbox", footprint: SceneSession.maxFootprint, background: true),
                           at: at(2))
    try d.run(.saveState(s1, .json(#"{"scroll":3,"draft":"héllo"}"#)), at: at(3))
    try d.run(.saveState(s2, .bytes([0, 1, 2, 255, 0])), at: at(3.5))
    try d.run(.setAppFootprint(mail, 1 << 40), at: at(4))
    try d.run(.deactivate(s1), at: at(5))
    try d.run(.activate(s1), at: at(6))
    try d.run(.background(s1), at: at(7))
    let t1 = try d.begin(BeginTaskRequest(session: s2, name: "upload ✓"), at: at(8))
    _ = try d.begin(BeginTaskRequest(app: mail, name: ""), at: at(9))
    try d.run(.tick, at: at(7 + 31))   // budget runs out: both expirations sent
    try d.run(.endTask(t1), at: at(38.5))

    // maps: sessions archived by reclaim and by termination, then discarded while not running.
    let s3 = try d.connect(ConnectRequest(app: maps, role: .carTemplateApplication, configurationName: "Car",
                                          background: true), at: at(10))
    let s4 = try d.connect(ConnectRequest(app: maps, background: true), at: at(11))
    let s5 = try d.connect(ConnectRequest(app: maps, userInfo: UserInfo(json: "{}"), background: true), at: at(12))
    try d.run(.saveState(s4, .bytes([])), at: at(12.5))
    try d.run(.disconnect(s3, cause: .reclaim(pressureNote)), at: at(13))
    try d.run(.terminate(maps, cause: .reclaim(pressureNoteWithoutScore)), at: at(14))
    try d.run(.discard(s5, cause: .cap("MaxSessions")), at: at(15))
    try d.run(.discard(s3), at: at(16))

    // notes: suspended early by reclaim, with an archived session and a live background one.
    let s6 = try d.connect(ConnectRequest(app: notes, configurationName: "Editor", background: true), at: at(17))
    let s7 = try d.connect(ConnectRequest(app: notes, role: .volumetricApplication, background: true), at: at(18))
    try d.run(.disconnect(s6), at: at(19))
    try d.run(.suspend(notes, cause: .reclaim(pressureNote)), at: at(20))
    _ = s7

    // music: foreground scenes (active and inactive), a protected one, warnings with every cause.
    let s8 = try d.connect(ConnectRequest(app: music, role: .immersiveSpaceApplication), at: at(21))
    let s9 = try d.connect(ConnectRequest(app: music, configurationName: "Default Configuration"), at: at(22))
    try d.run(.deactivate(s9), at: at(23))
    try d.run(.setProtected(s8, true), at: at(24))
    try d.run(.setFootprint(s8, 123_456_789), at: at(25))
    try d.run(.saveUserInfo(s8, UserInfo(json: #"{"q":"\"quoted\"\n","n":null}"#)), at: at(26))
    try d.run(.memoryWarning(apps: nil, cause: .restore), at: at(27))
    try d.run(.memoryWarning(apps: [music], cause: .timer), at: at(28))
    // A discard from the foreground: the whole resign/background/disconnect chain, then delivery.
    let s10 = try d.connect(ConnectRequest(app: music), at: at(29))
    try d.run(.discard(s10), at: at(30))
    try d.run(.tick, at: at(38.6))
}

/// Commands after the state above: timers due (mail's task passes its grace: killed), a launch
/// that delivers pending discards, reconnections that hand back restoration data.
let furtherCommands: [(Command, Double)] = [
    (.tick, 41),
    (.launch(maps), 42),
    (.activate(SessionID(1)), 43),
    (.activate(SessionID(4)), 44),
    (.activate(SessionID(6)), 45),
    (.terminate(music), 46),
    (.tick, 100),
]
