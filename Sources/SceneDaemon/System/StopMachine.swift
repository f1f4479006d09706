import SceneCore

/// A stop of scened (SIGTERM: `systemctl stop`, a restart, a shutdown) or of the machine
/// (logind's PrepareForShutdown), R32: first every foreground scene goes to the background
/// and its answer is awaited, then the apps scened started get willTerminate and are ended,
/// then scened exits. The whole stop is bounded by `[Lifecycle] StopTimeoutSec=`, which
/// must be shorter than the unit's TimeoutStopSec=. Pure: the daemon says what it sees at each
/// pass and carries out the actions.
struct StopMachine {
    enum Phase: Equatable {
        case running
        /// The scenes were sent to the background; their answers are awaited.
        case backgrounding
        /// The started apps were told willTerminate and are ending.
        case terminating
        /// Done: exit now (a stop) or wait for the service manager's SIGTERM (a shutdown).
        case finished
    }

    enum Action: Equatable {
        /// Hold every scene in the background, cause `shutdown`.
        case holdAll
        /// Terminate the started apps with cause `shutdown`.
        case terminateStartedApps
        /// Tell the service manager how much longer the stop may take (EXTEND_TIMEOUT_USEC=).
        case extendTimeout(microseconds: UInt64)
        /// Kill what is left of the started apps.
        case killLeft
        /// Let the machine's shutdown go on (release the delay inhibitor).
        case releaseInhibitor
        case exit
    }

    /// What the daemon sees at a pass.
    struct View: Equatable {
        var now: Timestamp
        /// Everything executed is committed and delivered.
        var settled: Bool
        /// An attached app owes an answer to a bounded callback.
        var owesAnswers: Bool
        /// A process scened started is still there.
        var startedAppsLeft: Bool
    }

    private(set) var phase = Phase.running
    private(set) var deadline: Timestamp?
    /// Begun for the machine's shutdown: stay up once finished, until SIGTERM.
    private(set) var forShutdown = false
    /// Slack for the last commit and the exit, on top of StopTimeoutSec=, in EXTEND_TIMEOUT_USEC=.
    static let exitSlack = TimeSpan.seconds(5)

    var isStopping: Bool { phase == .backgrounding || phase == .terminating }

    /// SIGTERM or SIGINT (`forShutdown` false), or PrepareForShutdown(true).
    mutating func begin(now: Timestamp, timeout: TimeSpan, forShutdown: Bool) -> [Action] {
        switch phase {
        case .running:
            phase = .backgrounding
            deadline = now + timeout
            self.forShutdown = forShutdown
            return [.extendTimeout(microseconds: UInt64((timeout + Self.exitSlack).microseconds)), .holdAll]
        case .backgrounding, .terminating:
            // A second signal: stop waiting. logind's second word changes nothing.
            guard !forShutdown else { return [] }
            if self.forShutdown {
                // The service manager's SIGTERM during the shutdown's chain (logind waited for
                // no inhibitor) is the first: the chain goes on, then scened exits.
                self.forShutdown = false
                return []
            }
            phase = .finished
            return [.killLeft, .exit]
        case .finished:
            // After the shutdown's chain, the service manager's SIGTERM ends scened.
            return forShutdown ? [] : [.exit]
        }
    }

    /// Moves on when what it waits for is done or the time is up.
    mutating func step(_ view: View) -> [Action] {
        guard let deadline, view.settled || view.now >= deadline else { return [] }
        let late = view.now >= deadline
        switch phase {
        case .backgrounding where !view.owesAnswers || late:
            phase = .terminating
            return [.terminateStartedApps]
        case .terminating where late:
            phase = .finished
            return [.killLeft] + finish()
        case .terminating where !view.owesAnswers && !view.startedAppsLeft:
            phase = .finished
            return finish()
        default:
            return []
        }
    }

    private func finish() -> [Action] { forShutdown ? [.releaseInhibitor] : [.exit] }

    /// The machine's shutdown was cancelled (PrepareForShutdown(false)) after its stop finished
    /// or while it runs: scened serves on; what was ended stays ended.
    mutating func cancelShutdown() -> Bool {
        guard forShutdown, phase != .running else { return false }
        phase = .running
        deadline = nil
        forShutdown = false
        return true
    }

    /// When the stop next needs a look even if nothing happens.
    var nextDeadline: Timestamp? { isStopping ? deadline : nil }
}
