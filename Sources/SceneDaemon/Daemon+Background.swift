import SceneCore

/// The daemon carrying out background work (R34): the wakes `WakePlanner` plans at the end of
/// each pass, in the pass's batch, and the processes it must start first.
extension Daemon {
    func onBackgroundTimer() {
        backgroundTimerFired()
        requestPass()
    }

    func stepBackground() {
        let blocked = system.stop.isStopping || system.sleep.phase != .awake
        let failed = Set(background.planner.launching.keys.filter(startFailed))
        guard let plan = background.plan(host.engine, now: host.clock.now(), pressure: reclaim.level, blocked: blocked,
                                         failedStarts: failed)
        else { return }
        for app in plan.expireProcessing {
            _ = try? host.execute(.expireWakes(app, kind: .processing))
        }
        for app in plan.launches {
            apps.appLog(.info, app, "Starting \(app) for its background work.", id: MessageID.backgroundWake)
            apps.launchForWake(app)
        }
        for request in plan.wakes { wake(request) }
    }

    /// Whether the process started for `app`'s wake is gone without having attached: the
    /// app is not running and scened is no longer starting it.
    private func startFailed(_ app: AppID) -> Bool {
        guard (host.engine.apps[app]?.process ?? .notRunning) == .notRunning,
              !apps.launches.spawning.contains(app) else { return false }
        if case .starting = apps.launches.process(of: app)?.phase { return false }
        return true
    }

    /// One wake; a refusal (the app changed state in between) is left for the next plan.
    private func wake(_ request: WakeRequest) {
        do {
            let (_, events) = try host.execute(.wake(request))
            if host.pending.events[events].first?.name == .resumed { apps.thawForWake(request.app) }
        } catch {
            apps.appLog(.warning, request.app, "Could not wake \(request.app) for its background work: \(error).",
                        id: MessageID.backgroundWake)
        }
    }
}
