import SceneCore

/// Which apps must be started because Opens wait for them: an app with stored Opens that is
/// not running, that scened starts (`ExecStart=`) and is not already starting. Pure; checked
/// every pass, so that Opens stored before a restart of scened get their app started too.
/// An app whose start was asked is asked again only after `retry`: a start that fails (the
/// LaunchTable's start limit, a missing binary) must not make every pass fork again.
struct OpenLaunches {
    private(set) var asked: [AppID: Timestamp] = [:]
    var retry = TimeSpan.seconds(10)

    /// The apps to start now. `busy`: a process of the app is starting, spawning or attached.
    mutating func due(_ engine: LifecycleEngine, startable: Set<AppID>, now: Timestamp,
                      busy: (AppID) -> Bool) -> [AppID] {
        guard !engine.pendingOpens.isEmpty || !asked.isEmpty else { return [] }
        var waiting = Set<AppID>()
        for open in engine.pendingOpens.values { waiting.insert(open.request.app) }
        for app in asked.keys where !waiting.contains(app) { asked[app] = nil }
        var out: [AppID] = []
        for app in waiting.sorted() where startable.contains(app) {
            guard (engine.apps[app]?.process ?? .notRunning) == .notRunning, !busy(app) else { continue }
            if let at = asked[app], now < at + retry { continue }
            asked[app] = now
            out.append(app)
        }
        return out
    }

    /// When an app asked for and still waiting may be asked again: the daemon's timer.
    var nextRetry: Timestamp? { asked.values.min().map { $0 + retry } }
}
