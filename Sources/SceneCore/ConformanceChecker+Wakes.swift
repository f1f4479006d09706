// Background wakes (R34), checked from events: a wake's event reaches a running process only,
// carries its item, and a task item's timer never warns it before its deadline.

extension ConformanceChecker {
    func wakeDelivered(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.process != .running { found.flag(.R34, "\(e.name) for a process that is \(app.process)") }
        guard case .wake(let wake) = e.detail else {
            found.flag(.stream, "\(e.name) without its wake item")
            return .process(.running)
        }
        let isTask = e.name == .performBackgroundTask
        if isTask == (wake.kind == .notification) || (!isTask && wake.payload == nil) {
            found.flag(.stream, "\(e.name) with a \(wake.kind) item\(isTask || wake.payload != nil ? "" : " and no payload")")
        }
        if wake.deadline < e.time { found.flag(.R34, "\(e.name) whose deadline \(wake.deadline) is already past") }
        if isTask { app.wakeDeadlines[wake.identifier] = wake.deadline }
        return .process(.running)
    }

    /// A wake's task is warned by its timer at its deadline, or earlier by the system (cause
    /// background, under pressure); scenes in the foreground do not matter to it.
    func wakeWillExpire(_ e: LifecycleEvent, _ wake: WakeDetail, _ app: AppModel, _ found: inout Findings) -> EventState {
        if wake.kind == .notification { found.flag(.stream, "backgroundTaskWillExpire for a notification") }
        if case .timer = e.cause, let deadline = app.wakeDeadlines[wake.identifier], e.time < deadline {
            found.flag(.R34, "task \(wake.identifier) warned at \(e.time), before its deadline \(deadline)")
        }
        return .process(.running)
    }
}
