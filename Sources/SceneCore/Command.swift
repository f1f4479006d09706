/// Everything that can change the engine. Each command either succeeds with its complete,
/// ordered list of effects, or fails with a `LifecycleError` and changes nothing.
public enum Command: Sendable, Equatable {
    /// Advance the clock: fire suspensions and task expirations that are due.
    case tick
    /// The app's process started (attached): didFinishLaunching with this cause (`background`
    /// when it was started for a wake, R34).
    case launch(AppID, cause: EventCause = .request)
    case terminate(AppID, cause: EventCause = .request)
    /// The app's process died on its own (`exited`) or was killed for missing a deadline
    /// (`hung`): its scenes go with no callback at all, not even willTerminate (R23, §4.3).
    case processDied(AppID, reason: TerminationReason)
    case connect(ConnectRequest)
    case activate(SessionID)
    /// foregroundActive → foregroundInactive: the app-switcher case.
    case deactivate(SessionID)
    case background(SessionID)
    /// Release the scene, keep the session (R12).
    case disconnect(SessionID, cause: EventCause = .request)
    /// Close the session for ever (R13–R15).
    case discard(SessionID, cause: EventCause = .request)
    case saveState(SessionID, RestorationData?)
    case saveUserInfo(SessionID, UserInfo)
    case setFootprint(SessionID, UInt64)
    case setProtected(SessionID, Bool)
    case setAppFootprint(AppID, UInt64)
    case beginTask(BeginTaskRequest)
    case endTask(TaskToken)
    /// didReceiveMemoryWarning to every running, not suspended app (R25), or to the apps listed.
    case memoryWarning(apps: [AppID]?, cause: EventCause = .request)
    /// Suspend an idle app before its suspension delay runs out (reclaim), or every app before
    /// the machine sleeps (cause `sleep`: background tasks do not keep it running, R31).
    case suspend(AppID, cause: EventCause)
    /// Run a suspended app again (after sleep, R31), with no callback.
    case resume(AppID, cause: EventCause)
    /// The holds in force now (interruptions, locks, sleep, a stop: R28–R32).
    case setHolds(HoldPolicy)
    /// BGTaskScheduler.submit: store the task, replacing one with the same identifier.
    case scheduleTask(ScheduledTask)
    /// BGTaskScheduler.cancel(taskRequestWithIdentifier:).
    case cancelTask(AppID, identifier: String)
    /// Store a notification for the app until a wake delivers it.
    case queueNotification(app: AppID, payload: String, priority: NotificationPriority)
    /// Wake the app for these due tasks and pending notifications (R34).
    case wake(WakeRequest)
    /// The app answered a wake's item (CompleteBackgroundTask, or Acknowledge of a
    /// notification): once none is open, a woken app is suspended again.
    case endWake(AppID, WakeItem.Subject, success: Bool)
    /// Send backgroundTaskWillExpire to the app's open task items of this kind now (a
    /// processing task when pressure rises).
    case expireWakes(AppID, kind: WakeKind)
    /// BeginBackgroundActivity / EndBackgroundActivity of a background mode.
    case beginActivity(AppID, BackgroundModes)
    case endActivity(AppID, BackgroundModes)
    /// Open a URL or continue an activity (routing): in the given scene, else in the connected
    /// scene the activation conditions choose, else in a new scene. A running app gets it now
    /// (a suspended one is resumed first, result `.session`); for an app that is not running it
    /// is stored until the app launches (result `.open`).
    case open(OpenRequest)
    /// A connected scene's UISceneActivationConditions (nil: UIKit's defaults). Stored; gone
    /// when the scene disconnects.
    case setActivationConditions(SessionID, ActivationConditions?)
}

public struct ConnectRequest: Sendable, Equatable {
    public var app: AppID
    public var role: SessionRole
    public var configurationName: String
    public var userInfo: UserInfo
    public var footprint: UInt64
    /// Connect straight to the background (a system-requested scene, S4).
    public var background: Bool
    public var restoreCostMs: UInt32
    public var isProtected: Bool
    /// What the new scene is opened with: willConnectTo's urlContexts and userActivities.
    public var open: OpenPayload?

    public init(app: AppID, role: SessionRole = .windowApplication,
                configurationName: String = ConnectRequest.defaultConfigurationName,
                userInfo: UserInfo = .empty, footprint: UInt64 = 0, background: Bool = false,
                restoreCostMs: UInt32 = 0, isProtected: Bool = false, open: OpenPayload? = nil) {
        self.open = open
        self.app = app
        self.role = role
        self.configurationName = configurationName
        self.userInfo = userInfo
        self.footprint = footprint
        self.background = background
        self.restoreCostMs = restoreCostMs
        self.isProtected = isProtected
    }

    /// The name Xcode's template gives the scene configuration in Info.plist.
    public static let defaultConfigurationName = "Default Configuration"
}

public struct BeginTaskRequest: Sendable, Equatable {
    /// The app whose process the task keeps running; taken from the session when one is given.
    public var app: AppID?
    public var session: SessionID?
    public var name: String

    public init(app: AppID? = nil, session: SessionID? = nil, name: String = "") {
        self.app = app
        self.session = session
        self.name = name
    }
}

/// What a successful command returns besides its effects.
public enum CommandResult: Sendable, Equatable {
    case done
    case session(SessionID)
    case task(TaskToken)
    case notification(NotificationID)
    case open(OpenID)
}

/// What the shell must do after a command, in order.
public enum Effect: Sendable, Equatable {
    /// Deliver this event to subscribers and the journal.
    case event(LifecycleEvent)
    /// Persist the session's current record.
    case sessionChanged(SessionID)
    /// Delete the session's record: it was discarded.
    case sessionRemoved(SessionID)
    case appChanged(AppID)
    case taskChanged(TaskToken)
    case taskRemoved(TaskToken)
    case scheduleChanged(ScheduleKey)
    case scheduleRemoved(ScheduleKey)
    case notificationChanged(NotificationID)
    case notificationRemoved(NotificationID)
    case openChanged(OpenID)
    case openRemoved(OpenID)
    /// The session's activation conditions were set or cleared.
    case conditionsChanged(SessionID)
}
