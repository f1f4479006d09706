/// Changing the timing rules of a running engine (a daemon reload).
extension LifecycleEngine {
    /// New delays apply to every app from now on: each app's deadline is re-derived and queued;
    /// wake-ups queued under the old rules are dropped when they come due (they no longer match).
    public mutating func reconfigure(_ configuration: EngineConfiguration) {
        guard configuration != self.configuration else { return }
        self.configuration = configuration
        for slot in apps.records.indices {
            apps.records[slot].scheduledWake = nil
            schedule(slot)
        }
    }
}
