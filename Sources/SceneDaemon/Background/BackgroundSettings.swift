import SceneCore

/// `[Background]`: how scened runs apps' background work (R34): how many apps it wakes at
/// once, how close together tasks must fall due to share a wake, what each item may take, and
/// the bounds on what apps and notifiers may queue.
struct BackgroundSettings: Equatable, Sendable {
    var maxConcurrentWakes = 4
    var coalesce: Int64 = 30_000_000
    var refreshBudget: Int64 = 30_000_000
    var processingBudget: Int64 = 180_000_000
    var notificationBudget: Int64 = 30_000_000
    var maxScheduledTasks = 32
    var maxPendingNotifications = 64
    var maxNotificationSize = 4096

    static let keys: [SettingKey] = [
        count("MaxConcurrentWakes", \.background.maxConcurrentWakes, 1...10_000),
        SettingKey.timeKey("Background", "CoalesceSec", \.background.coalesce, minimum: 0),
        SettingKey.timeKey("Background", "RefreshBudgetSec", \.background.refreshBudget, minimum: 100_000),
        SettingKey.timeKey("Background", "ProcessingBudgetSec", \.background.processingBudget, minimum: 100_000),
        SettingKey.timeKey("Background", "NotificationBudgetSec", \.background.notificationBudget, minimum: 100_000),
        count("MaxScheduledTasks", \.background.maxScheduledTasks, 1...10_000),
        count("MaxPendingNotifications", \.background.maxPendingNotifications, 1...100_000),
        SettingKey(section: "Background", key: "MaxNotificationSize", apply: { s, v in
            guard let bytes = ConfigValues.bytes(v), bytes >= 2, bytes <= 1 << 20 else {
                return "MaxNotificationSize= must be a size from 2B to 1M, such as 4K"
            }
            s.background.maxNotificationSize = Int(bytes)
            return nil
        }, show: { ConfigValues.formatBytes(UInt64($0.background.maxNotificationSize)) }),
    ]

    private static func count(_ key: String, _ path: WritableKeyPath<DaemonSettings, Int> & Sendable,
                              _ range: ClosedRange<Int>) -> SettingKey {
        SettingKey(section: "Background", key: key, apply: { s, v in
            guard let n = Int(v.trimmingSpaces), range.contains(n) else {
                return "\(key)= must be \(range.lowerBound) to \(range.upperBound)"
            }
            s[keyPath: path] = n
            return nil
        }, show: { "\($0[keyPath: path])" })
    }

    var plannerLimits: WakePlanner.Limits {
        WakePlanner.Limits(maxConcurrentWakes: maxConcurrentWakes, coalesce: TimeSpan(microseconds: coalesce))
    }
}
