import SceneCore

/// What holds the scenes down, as the system says (R28–R32): interruptions held by shells, the
/// lock state of each user's login sessions, sleep, a stop. Pure: the daemon feeds it what
/// happened and asks for the `HoldPolicy` the engine is to apply.
///
/// An app follows the sessions of the user its process runs as: `[App] User=`, else scened's
/// own user (the policy's `standard` hold).
struct SystemHolds {
    struct Interruption: Equatable {
        let token: String
        let reason: String
        /// The connection that holds it: the interruption ends when it closes.
        let owner: Int
        let since: Timestamp
    }

    /// Why a user's sessions hold their apps, and since when.
    struct Lock: Equatable {
        var cause: EventCause
        var since: Timestamp
    }

    /// In the order they began.
    private(set) var interruptions: [Interruption] = []
    private var nextToken: UInt64 = 1
    private(set) var locks: [UInt32: Lock] = [:]
    var sleeping = false
    var stopping = false
    /// `[System] LockedBackgroundSec=`: a lock first resigns active scenes, and sends them to the
    /// background this long after (zero: at once, as iOS does).
    var lockedBackground: TimeSpan = .zero

    mutating func beginInterruption(reason: String, owner: Int, now: Timestamp) -> String {
        let token = "i\(nextToken)"
        nextToken += 1
        interruptions.append(Interruption(token: token, reason: reason, owner: owner, since: now))
        return token
    }

    /// Ends one interruption; false if no such token is held.
    mutating func endInterruption(_ token: String) -> Bool {
        guard let i = interruptions.firstIndex(where: { $0.token == token }) else { return false }
        interruptions.remove(at: i)
        return true
    }

    /// Ends every interruption held by a connection that closed; how many there were.
    mutating func endInterruptions(ownedBy owner: Int) -> Int {
        let before = interruptions.count
        interruptions.removeAll { $0.owner == owner }
        return before - interruptions.count
    }

    func interruptionCount(ownedBy owner: Int) -> Int {
        interruptions.reduce(0) { $0 + ($1.owner == owner ? 1 : 0) }
    }

    /// The distinct connections holding interruptions.
    var interruptionOwners: Set<Int> { Set(interruptions.map(\.owner)) }

    /// A user's sessions now hold (with this cause) or free their apps. A lock that only
    /// changes its cause keeps its start, so the delay to the background is not restarted.
    mutating func setLock(uid: UInt32, cause: EventCause?, now: Timestamp) {
        guard let cause else {
            locks[uid] = nil
            return
        }
        if locks[uid] == nil { locks[uid] = Lock(cause: cause, since: now) } else { locks[uid]!.cause = cause }
    }

    /// The holds in force at `now`.
    func policy(now: Timestamp, daemonUID: UInt32, appUIDs: [AppID: UInt32]) -> HoldPolicy {
        var system = Hold.none
        if !interruptions.isEmpty { system = Hold(.inactive, cause: .interruption) }
        if sleeping { system = system.joined(with: Hold(.background, cause: .sleep)) }
        // A stop outranks sleep: its cause is what the events must say.
        if stopping { system = Hold(.background, cause: .shutdown) }
        var policy = HoldPolicy(system: system, standard: hold(uid: daemonUID, now: now))
        for (app, uid) in appUIDs where uid != daemonUID {
            policy.apps[app] = hold(uid: uid, now: now)
        }
        return policy
    }

    private func hold(uid: UInt32, now: Timestamp) -> Hold {
        guard let lock = locks[uid] else { return .none }
        return Hold(now >= lock.since + lockedBackground ? .background : .inactive, cause: lock.cause)
    }

    /// When a lock's resignation next turns into the background, if one is waiting to.
    func nextEscalation(after now: Timestamp) -> Timestamp? {
        locks.values.map { $0.since + lockedBackground }.filter { $0 > now }.min()
    }
}
