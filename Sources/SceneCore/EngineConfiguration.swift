/// The engine's timing rules.
public struct EngineConfiguration: Sendable, Equatable {
    /// A running app with no foreground scene and no background task is suspended after this
    /// long (R21, U3; iOS: "shortly after").
    public var suspendDelay: TimeSpan
    /// Background execution time granted to an app's tasks from the moment it enters the
    /// background (D6: ~30 s on recent iOS).
    public var backgroundTaskBudget: TimeSpan
    /// A task still open this long after backgroundTaskWillExpire gets its app terminated with no
    /// willTerminate (R24; ~1 s observed on iOS, more here because clients answer over a socket).
    public var expirationGrace: TimeSpan

    /// What a wake grants each item (R34): a refresh task and a notification ~30 s as on
    /// iOS; a processing task longer (it runs only while pressure is normal).
    public var refreshBudget: TimeSpan
    public var processingBudget: TimeSpan
    public var notificationBudget: TimeSpan
    /// Per app: scheduled tasks, and notifications pending or being handled.
    public var maxScheduledTasks: Int
    public var maxPendingNotifications: Int
    /// Per app: Opens stored while it is not running.
    public var maxPendingOpens: Int

    public init(suspendDelay: TimeSpan = .seconds(5), backgroundTaskBudget: TimeSpan = .seconds(30),
                expirationGrace: TimeSpan = .seconds(2), refreshBudget: TimeSpan = .seconds(30),
                processingBudget: TimeSpan = .seconds(180), notificationBudget: TimeSpan = .seconds(30),
                maxScheduledTasks: Int = 32, maxPendingNotifications: Int = 64,
                maxPendingOpens: Int = 16) {
        self.suspendDelay = suspendDelay
        self.backgroundTaskBudget = backgroundTaskBudget
        self.expirationGrace = expirationGrace
        self.refreshBudget = refreshBudget
        self.processingBudget = processingBudget
        self.notificationBudget = notificationBudget
        self.maxScheduledTasks = maxScheduledTasks
        self.maxPendingNotifications = maxPendingNotifications
        self.maxPendingOpens = maxPendingOpens
    }

    public func budget(of kind: WakeKind) -> TimeSpan {
        switch kind {
        case .refresh: refreshBudget
        case .processing: processingBudget
        case .notification: notificationBudget
        }
    }

    public static let standard = EngineConfiguration()
}
