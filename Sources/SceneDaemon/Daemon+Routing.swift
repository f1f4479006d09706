import SceneCore

/// The daemon starting the apps that stored Opens wait for: each pass, after the background
/// work's plan, any app with stored Opens that scened starts and that is neither running nor
/// starting is started; its Attach launches it and the engine delivers the Opens in that launch.
extension Daemon {
    func stepRouting() {
        guard !host.engine.pendingOpens.isEmpty || !openLaunches.asked.isEmpty else { return }
        guard !system.stop.refusesChanges, system.sleep.phase == .awake else { return }
        let apps = self.apps
        let due = openLaunches.due(host.engine, startable: background.startable, now: host.clock.now()) { app in
            apps.attachments.attachment(of: app) != nil || apps.launches.spawning.contains(app)
                || apps.launches.process(of: app) != nil
        }
        for app in due {
            let waiting = host.engine.apps[app]?.pendingOpens.count ?? 0
            apps.appLog(.info, app, "Starting \(app) for the \(waiting) Open\(waiting == 1 ? "" : "s") waiting for it.",
                        id: MessageID.routedOpen)
            apps.launchForWake(app)
        }
    }
}
