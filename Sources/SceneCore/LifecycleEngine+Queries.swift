/// Read-only views the daemon reports.
extension LifecycleEngine {
    /// When the task's expiration handler is (or was) due; nil while its app is in the foreground.
    public func expiry(of task: BackgroundTask) -> Timestamp? {
        guard let app = apps[task.app], app.process == .running, let entered = app.backgroundEnteredAt else { return nil }
        return max(entered + configuration.backgroundTaskBudget, task.beganAt)
    }

    /// When the app will be suspended if nothing changes.
    public func suspensionTime(of app: AppRecord) -> Timestamp? {
        guard app.process == .running, let idle = app.idleSince else { return nil }
        return idle + configuration.suspendDelay
    }

    /// Bytes held by the app's connected scenes.
    public func sceneFootprint(of app: AppRecord) -> UInt64 {
        var total: UInt64 = 0
        for id in app.sessions {
            if let s = sessions[id], s.condition == .live { total &+= s.footprint }
        }
        return total
    }

    /// Sessions with a connected scene, counted from the apps' per-state counts.
    public var liveSessionCount: Int {
        var n = 0
        for app in apps.records { n += Int(app.connectedScenes) }
        return n
    }

    public var foregroundActiveSceneCount: Int {
        var n = 0
        for app in apps.records { n += Int(app.activeScenes) }
        return n
    }
}
