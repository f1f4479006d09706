import Glibc
import SceneCore
import SceneInterface
import Varlink

/// The system's side of the life cycle as one part: interruptions held by shells, the lock
/// state of login sessions, sleep and a stop (`SystemHolds`, `StopMachine`, `SleepMachine`),
/// turned into the holds the engine applies (R28–R32). The method handlers of
/// Begin/EndInterruption and the daemon (logind's news, signals, timers) change it; only
/// `applyHolds` touches the engine.
final class SystemEvents {
    private let host: EngineHost
    private let logger: JournalLogger
    private(set) var holds = SystemHolds()
    var stop = StopMachine()
    var sleep = SleepMachine()
    /// How logind is followed, for status and show-app: "followed", "off" or why not.
    var loginState = "off"
    /// The logind client, while `[System] FollowLogin=` is on (the daemon starts and stops it).
    var login: LogindClient?
    private(set) var appUIDs: [AppID: UInt32] = [:]
    let daemonUID = getuid()
    /// One shell's interruptions at once: a loop beginning them is refused, not stored.
    static let maxInterruptionsPerConnection = 64

    init(host: EngineHost, logger: JournalLogger, settings: DaemonSettings) {
        self.host = host
        self.logger = logger
        configure(settings)
    }

    func configure(_ settings: DaemonSettings) {
        appUIDs = settings.apps.compactMapValues(\.uid)
        holds.lockedBackground = TimeSpan(microseconds: settings.lockedBackground)
    }

    /// The user whose login sessions the app follows: its `User=`, else scened's own.
    func uid(of app: AppID) -> UInt32 { appUIDs[app] ?? daemonUID }

    /// Every user some app follows.
    var followedUIDs: Set<UInt32> { Set(appUIDs.values).union([daemonUID]) }

    /// Applies the holds in force now; the events it caused (empty when nothing changed).
    @discardableResult
    func applyHolds() -> Range<Int> {
        let policy = holds.policy(now: host.clock.now(), daemonUID: daemonUID, appUIDs: appUIDs)
        let none = host.pending.events.count..<host.pending.events.count
        guard policy != host.engine.holds else { return none }
        let text = Self.describe(policy)
        logger.daemon(.info, MessageID.systemHold, "The system holds scenes: \(text).", [("SCENED_HOLD", text)])
        return (try? host.execute(.setHolds(policy)))?.events ?? none
    }

    /// The holds in words, for the journal: "none", or each hold with whom it concerns.
    static func describe(_ policy: HoldPolicy) -> String {
        var parts: [String] = []
        func add(_ hold: Hold, _ whom: String) {
            if hold.level != .none { parts.append("\(whom) \(hold.level) (\(hold.cause.name))") }
        }
        add(policy.system, "every app")
        add(policy.standard, "apps of scened's user")
        for (app, hold) in policy.apps.sorted(by: { $0.key < $1.key }) { add(hold, app.rawValue) }
        return parts.isEmpty ? "none" : parts.joined(separator: "; ")
    }

    func beginInterruption(reason: String, owner: Int) throws(VarlinkError) -> (token: String, events: Range<Int>) {
        guard !reason.isEmpty, reason.utf8.count <= 255 else {
            throw MethodDispatcher.error(for: .invalidArgument(name: "reason", reason: "must be 1 to 255 bytes"))
        }
        let limit = Self.maxInterruptionsPerConnection
        guard holds.interruptionCount(ownedBy: owner) < limit else {
            var p = JSONObject([("limit", .string("MaxInterruptionsPerConnection")), ("maximum", .int(Int64(limit)))])
            p["message"] = .string("this connection already holds \(limit) interruptions; end one first")
            throw VarlinkError(name: ConnectionLimits.errorName, parameters: p)
        }
        let token = holds.beginInterruption(reason: reason, owner: owner, now: host.clock.now())
        return (token, applyHolds())
    }

    func endInterruption(_ token: String) throws(VarlinkError) -> Range<Int> {
        guard holds.endInterruption(token) else {
            var p = JSONObject([("token", .string(token))])
            p["message"] = .string("no interruption \(token) is held")
            throw VarlinkError(name: ManagerInterface.name + ".NoSuchInterruption", parameters: p)
        }
        return applyHolds()
    }

    /// Interruptions whose connection closed end with it, as a logind inhibitor ends with its
    /// fd. Whether any did.
    func endInterruptions(closedIn server: VarlinkServer) -> Bool {
        var ended = 0
        for owner in holds.interruptionOwners {
            let conn = server.connections[owner]
            if conn == nil || conn!.isClosed { ended += holds.endInterruptions(ownedBy: owner) }
        }
        guard ended > 0 else { return false }
        applyHolds()
        return true
    }

    /// The verdicts of logind's sessions for every followed user (none without logind).
    func updateLocks() {
        let now = host.clock.now()
        for uid in followedUIDs {
            var cause: EventCause?
            if let login, case .held(let why) = login.state.verdict(forUID: uid) {
                switch why {
                case .lock: cause = .lock
                case .session: cause = .session
                case .idle: cause = .idle
                }
            }
            holds.setLock(uid: uid, cause: cause, now: now)
        }
        applyHolds()
    }

    func setSleeping(_ sleeping: Bool) {
        holds.sleeping = sleeping
        applyHolds()
    }

    func setStopping(_ stopping: Bool) {
        holds.stopping = stopping
        applyHolds()
    }

    /// When something here is next due: a lock's move to the background, a stop's or a
    /// sleep's bound.
    var nextDeadline: Timestamp? {
        [holds.nextEscalation(after: host.clock.now()), stop.nextDeadline, sleep.nextDeadline].compactMap { $0 }.min()
    }
}
