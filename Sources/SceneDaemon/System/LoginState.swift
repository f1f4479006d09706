/// Why an app's scenes may not be foreground-active (rule R29–R30), as the events say it.
enum LoginHoldCause: String, Equatable, Hashable, Sendable {
    /// The screen is locked (a `Lock` signal, or `LockedHint`).
    case lock
    /// The session is not the active one (a VT or user switch, a remote disconnect).
    case session
    /// The user is idle (`IdleHint`), when idleness is followed.
    case idle
}

/// What the login sessions say about the apps of one user.
enum LoginVerdict: Equatable, Hashable, Sendable {
    case free
    case held(LoginHoldCause)
}

/// One login session as logind publishes it.
struct LoginSession: Equatable, Sendable {
    var id: String
    var uid: UInt32
    /// The seat's id; empty for a session without a seat (ssh, a cron job).
    var seat: String = ""
    /// `user`, `greeter`, `lock-screen`, `background`, …
    var sessionClass: String = "user"
    var active: Bool = true
    var lockedHint: Bool = false
    /// A `Lock` signal came and no `Unlock` since (nor a `LockedHint` that went true → false).
    var lockSignalled: Bool = false
    var idleHint: Bool = false
    var remote: Bool = false

    var locked: Bool { lockSignalled || lockedHint }
}

/// A change to a session's properties (the `org.freedesktop.login1.Session` properties scened
/// reads); nil fields are unchanged.
struct LoginSessionChange: Equatable, Sendable {
    var uid: UInt32?
    var seat: String?
    var sessionClass: String?
    var active: Bool?
    var lockedHint: Bool?
    var idleHint: Bool?
    var remote: Bool?

    var isEmpty: Bool { self == LoginSessionChange() }
}

/// The login sessions scened knows and what they mean for each user's apps (rule R30). Pure.
///
/// A user's counted sessions are those of class `user`. With some, the user is held when every
/// one is locked, inactive or (with `followIdle`) idle; the cause is `lock` if any is locked,
/// else `session` if any is inactive, else `idle`. A user with none follows seat0: its active
/// session decides (locked: `lock`; idle, when followed: `idle`); seat0 with sessions but none
/// active holds (`session`); no session on seat0 at all (a headless machine) is free — never
/// "zero sessions, so locked".
struct LoginState: Equatable, Sendable {
    private(set) var sessions: [String: LoginSession] = [:]
    var followIdle = false
    /// Between `PrepareForSleep(true)` and `(false)`.
    var sleeping = false
    /// Between `PrepareForShutdown(true)` and a cancelled shutdown's `(false)`.
    var shuttingDown = false

    static let seat0 = "seat0"
    static let countedClass = "user"

    init(followIdle: Bool = false) { self.followIdle = followIdle }

    // MARK: - Inputs

    /// Applies read or changed properties. A session not known yet is added only when the
    /// change says whose it is (a full read); a change for an unknown session is dropped.
    mutating func apply(_ change: LoginSessionChange, to id: String) {
        var session: LoginSession
        if let known = sessions[id] {
            session = known
        } else {
            guard let uid = change.uid else { return }
            session = LoginSession(id: id, uid: uid)
        }
        if let uid = change.uid { session.uid = uid }
        if let seat = change.seat { session.seat = seat }
        if let c = change.sessionClass { session.sessionClass = c }
        if let active = change.active { session.active = active }
        if let hint = change.lockedHint {
            // A locker that clears the hint has unlocked, also after a Lock signal that its
            // unlock will never answer with Unlock.
            if session.lockedHint && !hint { session.lockSignalled = false }
            session.lockedHint = hint
        }
        if let idle = change.idleHint { session.idleHint = idle }
        if let remote = change.remote { session.remote = remote }
        sessions[id] = session
    }

    /// The `Lock` (true) or `Unlock` (false) signal of a session.
    mutating func lockSignal(_ locked: Bool, for id: String) {
        sessions[id]?.lockSignalled = locked
    }

    mutating func remove(_ id: String) {
        sessions[id] = nil
    }

    /// Keeps only the sessions in `ids` (a fresh ListSessions).
    mutating func retain(only ids: Set<String>) {
        sessions = sessions.filter { ids.contains($0.key) }
    }

    mutating func removeAllSessions() {
        sessions.removeAll()
    }

    // MARK: - Verdicts

    func verdict(forUID uid: UInt32) -> LoginVerdict {
        var counted = 0
        var anyFree = false
        var anyLocked = false
        var anyInactive = false
        for session in sessions.values where session.uid == uid && session.sessionClass == Self.countedClass {
            counted += 1
            let idle = followIdle && session.idleHint
            if !session.locked && session.active && !idle { anyFree = true }
            if session.locked { anyLocked = true }
            if !session.active { anyInactive = true }
        }
        guard counted > 0 else { return seat0Verdict }
        if anyFree { return .free }
        return .held(anyLocked ? .lock : anyInactive ? .session : .idle)
    }

    /// The verdict for a user without a counted session of its own. logind keeps at most one
    /// session active per seat; should it ever show more, any usable one frees, as for a user.
    var seat0Verdict: LoginVerdict {
        var onSeat = 0
        var anyActive = false
        var anyLocked = false
        for session in sessions.values where session.seat == Self.seat0 {
            onSeat += 1
            guard session.active else { continue }
            anyActive = true
            if session.locked {
                anyLocked = true
            } else if !(followIdle && session.idleHint) {
                return .free
            }
        }
        if onSeat == 0 { return .free }
        if !anyActive { return .held(.session) }
        return .held(anyLocked ? .lock : .idle)
    }

    /// Every verdict the state gives: one per user with counted sessions, and seat0's for
    /// everyone else. Two states give the same verdict for every uid iff these are equal.
    var verdicts: VerdictSnapshot {
        var byUID: [UInt32: LoginVerdict] = [:]
        for session in sessions.values where session.sessionClass == Self.countedClass && byUID[session.uid] == nil {
            byUID[session.uid] = verdict(forUID: session.uid)
        }
        return VerdictSnapshot(byUID: byUID, others: seat0Verdict)
    }

    struct VerdictSnapshot: Equatable, Sendable {
        var byUID: [UInt32: LoginVerdict]
        var others: LoginVerdict
    }
}
