import SceneCore

/// What wakes the daemon. Every loop source of the daemon's parts posts one of these to the
/// daemon's inbox (`LoopInbox`), and `Daemon.handle` is the one place that acts on them: this
/// list is the whole of what can happen to the daemon from outside a call.
enum DaemonInput {
    /// The pass was asked for (the defer source).
    case pass
    /// The commit thread finished a batch or a read (its completion pipe).
    case commitFinished
    /// The engine's next deadline, or the reclaim controller's next evaluation, is due.
    case engineTimer
    case reclaimTimer
    /// An attached app's answer or a started app's launch or stop is due.
    case appDeadline
    /// Started apps are due to be measured.
    case measure
    /// An idle daemon's pass for the watchdog.
    case heartbeat
    /// A lock's move to the background, or a stop's or a sleep's bound, is due.
    case systemTimer
    /// A scheduled background task falls due, or a wake's launch is given up (R34).
    case backgroundTimer
    /// SIGTERM or SIGINT, and SIGHUP.
    case stop
    case reload
    /// The rate-limited STATUS= line is due.
    case statusDue
    /// The test hook's always-ready source.
    case livelock
    /// A PSI trigger fired, or its poll, hold or retry timer.
    case psi(PSISource.Input)
    /// logind's bus: a signal, a reply, or the reconnect timer.
    case login(LogindClient.Input)
    /// A started app's pidfd became readable.
    case appExited(AppID)
    /// The listening socket, the clients' epoll set, or one of the server's timers.
    case server(VarlinkServer.Input)
}

/// What a method handler asks of the daemon: taken after the handler returns, in the same
/// pass, so before the batch that holds its reply commits.
enum DaemonRequest {
    /// Reload loaded a configuration: apply it.
    case apply(ConfigLoader.Result)
    /// Reload was refused: the configuration in force stays, STATUS= says why.
    case reloadFailed(ConfigError)
    /// A handler evaluated the reclaim controller (SetPressure, an answered notice).
    case reclaim(ReclaimRunner.Outcome)
    case livelock(seconds: Int)
}
