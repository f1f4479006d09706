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

    public init(suspendDelay: TimeSpan = .seconds(5), backgroundTaskBudget: TimeSpan = .seconds(30),
                expirationGrace: TimeSpan = .seconds(2)) {
        self.suspendDelay = suspendDelay
        self.backgroundTaskBudget = backgroundTaskBudget
        self.expirationGrace = expirationGrace
    }

    public static let standard = EngineConfiguration()
}
