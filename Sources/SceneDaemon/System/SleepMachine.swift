import SceneCore

/// The machine going to sleep (logind's PrepareForSleep, R31): every foreground scene goes to
/// the background, the answers come in (or their deadlines pass), the apps are suspended and
/// frozen, and only then is the delay inhibitor released. After resume the apps sleep
/// suspended are resumed and the scenes come back as the lock state allows. Pure, like
/// `StopMachine`: bounded by `bound` (logind waits for delay inhibitors only
/// InhibitDelayMaxSec=, 5 s by default).
struct SleepMachine {
    enum Phase: Equatable {
        case awake
        case backgrounding
        /// Suspensions executed: waiting for them to be committed and the processes frozen.
        case suspending
        case asleep
    }

    enum Action: Equatable {
        /// Hold every scene in the background (cause `sleep`), or lift that hold.
        case hold(Bool)
        /// Suspend every running app (cause `sleep`); the daemon reports them back.
        case suspendApps
        case releaseInhibitor
        /// Resume the apps sleep suspended, then lift the hold.
        case resumeApps([AppID])
    }

    struct View: Equatable {
        var now: Timestamp
        var settled: Bool
        var owesAnswers: Bool
        /// Every started app that is to be frozen is.
        var frozen: Bool
    }

    private(set) var phase = Phase.awake
    private var deadline: Timestamp?
    /// While the kernel completes the freezes (it tells no one): when to look again.
    private var recheck: Timestamp?
    static let freezeRecheck = TimeSpan.milliseconds(10)
    /// The apps sleep suspended, to resume after.
    private(set) var suspended: [AppID] = []

    mutating func prepare(now: Timestamp, bound: TimeSpan) -> [Action] {
        guard phase == .awake else { return [] }
        phase = .backgrounding
        deadline = now + bound
        suspended = []
        return [.hold(true)]
    }

    mutating func noteSuspended(_ apps: [AppID]) { suspended += apps }

    mutating func step(_ view: View) -> [Action] {
        guard let deadline, view.settled || view.now >= deadline else { return [] }
        let late = view.now >= deadline
        switch phase {
        case .backgrounding where !view.owesAnswers || late:
            phase = .suspending
            return [.suspendApps]
        case .suspending where view.frozen || late:
            phase = .asleep
            recheck = nil
            return [.releaseInhibitor]
        case .suspending:
            recheck = view.now + Self.freezeRecheck
            return []
        default:
            return []
        }
    }

    /// PrepareForSleep(false): resumed (or the sleep did not happen).
    mutating func resumed() -> [Action] {
        guard phase != .awake else { return [] }
        phase = .awake
        deadline = nil
        recheck = nil
        let apps = suspended
        suspended = []
        return [.resumeApps(apps), .hold(false)]
    }

    var nextDeadline: Timestamp? {
        switch phase {
        case .backgrounding: deadline
        case .suspending: [deadline, recheck].compactMap { $0 }.min()
        case .awake, .asleep: nil
        }
    }
}
