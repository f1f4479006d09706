import Foundation
import SceneInterface
import Varlink

// Background work (R34): scheduled tasks run by their launch handlers, notifications handed to
// the app delegate, and the background modes an app declares while it runs an activity.

extension SceneApplication {
    /// performBackgroundTask: the registered launch handler gets the task. Not acknowledged:
    /// the app answers with setTaskCompleted(success:). An identifier with no handler (a
    /// request left by an earlier version of the app) is completed unsuccessfully at once.
    func performBackgroundTask(_ e: AppEvent) async {
        guard let identifier = e.fields["identifier"]?.stringValue else {
            log("performBackgroundTask \(e.seq) names no task: ignored")
            return
        }
        let kind = e.fields["kind"]?.stringValue.flatMap(BackgroundTaskKind.init(rawValue:)) ?? .refresh
        let task = BackgroundTask(identifier: identifier, kind: kind, deadline: e.deadline.map(wallDate), seq: e.seq) {
            [unowned self] task, success in
            self.sendCompletion(of: task, success: success)
        }
        guard let handler = taskScheduler.handler(for: identifier) else {
            log("no launch handler is registered for background task \(identifier): completing it unsuccessfully")
            task.setTaskCompleted(success: false)
            return
        }
        taskScheduler.running[identifier] = task
        await handler(task)
    }

    /// backgroundTaskWillExpire of a scheduled task (it names kind and identifier, not a
    /// token): the task's expiration handler, or without one its unsuccessful completion.
    func expireScheduledTask(_ e: AppEvent) {
        guard let identifier = e.fields["identifier"]?.stringValue else { return }
        guard let task = taskScheduler.running[identifier], !task.isCompleted else {
            log("background task \(identifier) expires but is not running here")
            return
        }
        if !task.expire() {
            log("background task \(identifier) expires and has no expiration handler: completing it unsuccessfully")
            task.setTaskCompleted(success: false)
        }
    }

    /// didReceiveNotification: the delegate's handler, then Acknowledge(seq) when it returns,
    /// as for every bounded callback.
    func receiveNotification(_ e: AppEvent) async {
        if let delegate { await delegate.application(self, didReceiveNotification: RemoteNotification(e)) }
        await answer(e, restoration: nil)
    }

    /// CompleteBackgroundTask, queued now. A refusal (the task expired and scened closed it
    /// already, or scened restarted and the wake is gone) only goes to the log: there is
    /// nothing left to complete.
    private func sendCompletion(of task: BackgroundTask, success: Bool) {
        if taskScheduler.running[task.identifier] === task { taskScheduler.running[task.identifier] = nil }
        var p = base
        p["identifier"] = .string(task.identifier)
        p["success"] = .bool(success)
        let identifier = task.identifier
        requests.send(AppInterface.name + ".CompleteBackgroundTask", p) { [weak self] result in
            if case .failure(let error) = result { self?.log("completing background task \(identifier) failed: \(error)") }
        }
    }

    // MARK: Background modes

    /// Begins an activity of one of the app's `[App] BackgroundModes=` (BeginBackgroundActivity):
    /// until it ends, scened does not suspend the app for idling (it is still warned, counted
    /// and reclaimed under pressure, and suspended for sleep). BackgroundModeNotDeclared if the
    /// app's settings do not name the mode.
    public func beginBackgroundActivity(_ mode: BackgroundMode) async throws {
        var p = base
        p["mode"] = .string(mode.rawValue)
        _ = try await call("BeginBackgroundActivity", p)
        activeBackgroundModes.insert(mode)
    }

    public func endBackgroundActivity(_ mode: BackgroundMode) async throws {
        var p = base
        p["mode"] = .string(mode.rawValue)
        _ = try await call("EndBackgroundActivity", p)
        activeBackgroundModes.remove(mode)
    }
}
