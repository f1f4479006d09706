import SceneCore

/// Readings of the memory started apps really hold, turned into the engine's figures by
/// `MemoryShares` (which decides how they are charged).
extension AppSupervisor {
    /// Whether any started app is measured (what the measuring timer waits for).
    var measuresApps: Bool {
        launches.processes.keys.contains { appSettings[$0]?.launch.memory == .measured }
    }

    /// Reads every measured started app that is attached and brings the engine's figures to
    /// what it holds. Frozen processes are read like others (reading /proc wakes nothing).
    func measureStartedApps() {
        guard let launcher else { return }
        let now = host.clock.now()
        lastMeasuredAt = now
        for (app, p) in launches.processes where p.phase == .running && appSettings[app]?.launch.memory == .measured {
            measure(app, launcher, now)
        }
    }

    /// One app's reading (also taken as it attaches: with no scene yet, that is its base).
    func measure(_ app: AppID, _ launcher: AppLauncher, _ now: Timestamp) {
        guard let total = launcher.measure(app), let record = host.engine.apps[app] else { return }
        var live: [(SessionID, UInt64)] = []
        for id in record.sessions.sorted() {
            if let s = host.engine.sessions[id], s.condition == .live { live.append((id, s.footprint)) }
        }
        for command in shares.reading(app, total: total, live: live, declaredBase: record.baseFootprint, now: now) {
            _ = try? host.execute(command)
        }
    }

    /// A reclaim step freed `bytes` of a measured app: its readings wait for that to show.
    func noteReclaimed(_ app: AppID, bytes: UInt64, settle: TimeSpan) {
        guard launches.process(of: app) != nil, appSettings[app]?.launch.memory == .measured else { return }
        let limit = TimeSpan(microseconds: settle.microseconds * ReclaimPolicy.releaseWaitLimit)
        shares.reclaimed(app, bytes: bytes, until: host.clock.now() + limit)
    }
}
