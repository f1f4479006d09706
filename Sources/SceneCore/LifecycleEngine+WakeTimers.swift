/// The timers of a wake's items (R34): a task item is warned at its deadline
/// (backgroundTaskWillExpire) and closed one grace period later; a notification item is closed
/// at its deadline. A woken app is suspended, never killed, when its last item closes this way.
extension LifecycleEngine {
    /// When the app's earliest open item next needs the timer.
    static func wakeDeadline(of app: AppRecord, configuration: EngineConfiguration) -> Timestamp? {
        var earliest: Timestamp?
        for item in app.wakes {
            let due = closeTime(of: item, grace: configuration.expirationGrace) ?? item.deadline
            if earliest == nil || due < earliest! { earliest = due }
        }
        return earliest
    }

    /// When the item closes unanswered, once that is known: a notification at its deadline, a
    /// task one grace period after its expiration was sent.
    static func closeTime(of item: WakeItem, grace: TimeSpan) -> Timestamp? {
        if item.kind == .notification { return item.deadline }
        return item.expirationSentAt.map { $0 + grace }
    }

    /// Fires the app's due items; returns whether the app was suspended (nothing else is due
    /// for a suspended app).
    mutating func fireWakes(_ slot: Int, effects: inout [Effect]) -> Bool {
        let grace = configuration.expirationGrace
        let before = apps.records[slot].wakes.count
        apps.records[slot].wakes.removeAll { item in Self.closeTime(of: item, grace: grace).map { $0 <= clock } ?? false }
        let closed = apps.records[slot].wakes.count < before
        for i in apps.records[slot].wakes.indices {
            let item = apps.records[slot].wakes[i]
            if item.kind != .notification && item.expirationSentAt == nil && item.deadline <= clock {
                sendExpiration(slot, item: i, cause: .timer, effects: &effects)
            }
        }
        guard closed else { return false }
        settleAfterWake(slot, effects: &effects)
        return apps.records[slot].process != .running
    }
}
