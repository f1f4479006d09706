/// UIApplicationDelegate, for a scened app: the process-level callbacks. Every method has a
/// default, so an app implements only what it needs. Called on the main actor, one at a time,
/// strictly in the order scened committed the events; a method may be async, and the next
/// callback waits until it returns.
@MainActor
public protocol ApplicationDelegate: AnyObject {
    /// didFinishLaunching: the first callback of every new process.
    func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool
    /// A new session is about to get its first scene: the configuration to make it with.
    func application(_ application: SceneApplication, configurationForConnecting connectingSceneSession: SceneSession,
                     options: SceneConnectionOptions) async -> SceneConfiguration
    /// Sessions closed for ever (R14, R19): release what was kept for them.
    func application(_ application: SceneApplication, didDiscardSceneSessions sceneSessions: Set<SceneSession>) async
    func applicationDidReceiveMemoryWarning(_ application: SceneApplication) async
    /// Bounded (≈ 5 s): the answer goes to scened when this returns.
    func applicationWillTerminate(_ application: SceneApplication) async
    /// A notification scened hands the app (io.scened.Manager.Notify; UIKit's
    /// application(_:didReceiveRemoteNotification:fetchCompletionHandler:)). Bounded
    /// (NotificationBudgetSec=, 30 s): SceneClient acknowledges it when this returns; a suspended
    /// app was thawed for it and is suspended again after the answer or the deadline.
    func application(_ application: SceneApplication, didReceiveNotification notification: RemoteNotification) async
    /// A bounded callback's handler returned after its deadline (not UIKit: there the process
    /// would simply be killed). The default writes a line to standard error.
    func application(_ application: SceneApplication, didOverrunDeadline overrun: DeadlineOverrun) async
}

extension ApplicationDelegate {
    public func application(_ application: SceneApplication, didFinishLaunchingWithOptions launchOptions: LaunchOptions?) async -> Bool {
        true
    }
    public func application(_ application: SceneApplication, configurationForConnecting connectingSceneSession: SceneSession,
                            options: SceneConnectionOptions) async -> SceneConfiguration {
        SceneConfiguration(name: connectingSceneSession.configuration, role: connectingSceneSession.role)
    }
    public func application(_ application: SceneApplication, didDiscardSceneSessions sceneSessions: Set<SceneSession>) async {}
    public func applicationDidReceiveMemoryWarning(_ application: SceneApplication) async {}
    public func applicationWillTerminate(_ application: SceneApplication) async {}
    public func application(_ application: SceneApplication, didReceiveNotification notification: RemoteNotification) async {}
    public func application(_ application: SceneApplication, didOverrunDeadline overrun: DeadlineOverrun) async {
        application.log("overran: \(overrun)")
    }
}

/// UISceneDelegate (UIWindowSceneDelegate's life-cycle part): one instance per connected scene,
/// made by the configuration's factory. Same ordering rules as ApplicationDelegate.
@MainActor
public protocol SceneDelegate: AnyObject {
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: SceneConnectionOptions) async
    func sceneWillEnterForeground(_ scene: Scene) async
    func sceneDidBecomeActive(_ scene: Scene) async
    func sceneWillResignActive(_ scene: Scene) async
    /// Bounded (≈ 5 s) together with stateRestorationActivity(for:), which comes right after.
    func sceneDidEnterBackground(_ scene: Scene) async
    /// The scene is gone (reclaimed, or its session discarded); the session may reconnect later
    /// with a new scene and the state saved last.
    func sceneDidDisconnect(_ scene: Scene) async
    /// Asked when the scene enters the background: the data to restore it from (UIKit's
    /// stateRestorationActivity(for:)). It goes to scened in the didEnterBackground answer and
    /// comes back in a later willConnectTo; nil keeps what was saved before.
    func stateRestorationActivity(for scene: Scene) async -> RestorationData?
    /// Memory pressure is about to disconnect the scene (not UIKit: scened's reclaim grace).
    /// Return true to keep it for now, in the middle of something (once per pressure episode;
    /// another scene is taken instead). Otherwise stateRestorationActivity(for:) is asked and
    /// the scene is disconnected at once with what it returns.
    func sceneShouldDeferDisconnect(_ scene: Scene, notice: ReclaimNotice) async -> Bool
    /// URLs opened in this connected scene (io.scened.Manager Open, another app's Open, or a
    /// request with a URL). With activation it comes after sceneWillEnterForeground and before
    /// sceneDidBecomeActive; a new scene gets its URLs in willConnectTo's options instead.
    func scene(_ scene: Scene, openURLContexts urlContexts: Set<OpenURLContext>) async
    /// Just before scene(_:continue:), for each activity, with its type.
    func scene(_ scene: Scene, willContinueUserActivityWithType userActivityType: String) async
    /// An activity to continue in this connected scene (placed as openURLContexts is).
    func scene(_ scene: Scene, continue userActivity: UserActivity) async
}

extension SceneDelegate {
    public func scene(_ scene: Scene, willConnectTo session: SceneSession, options connectionOptions: SceneConnectionOptions) async {}
    public func sceneWillEnterForeground(_ scene: Scene) async {}
    public func sceneDidBecomeActive(_ scene: Scene) async {}
    public func sceneWillResignActive(_ scene: Scene) async {}
    public func sceneDidEnterBackground(_ scene: Scene) async {}
    public func sceneDidDisconnect(_ scene: Scene) async {}
    public func stateRestorationActivity(for scene: Scene) async -> RestorationData? { nil }
    public func sceneShouldDeferDisconnect(_ scene: Scene, notice: ReclaimNotice) async -> Bool { false }
    public func scene(_ scene: Scene, openURLContexts urlContexts: Set<OpenURLContext>) async {}
    public func scene(_ scene: Scene, willContinueUserActivityWithType userActivityType: String) async {}
    public func scene(_ scene: Scene, continue userActivity: UserActivity) async {}
}

/// UIScene: one connected scene instance of a session. A reconnection makes a new Scene.
@MainActor
public final class Scene {
    public private(set) var session: SceneSession
    /// The daemon's scene instance number within the session (1, 2, … per reconnection).
    public let instance: Int64
    public internal(set) var activationState: SceneActivationState
    /// Strong, unlike UIKit's weak reference: nothing else keeps the delegate.
    public let delegate: any SceneDelegate
    public unowned let application: SceneApplication
    /// UIScene.activationConditions: which Opens this scene takes. Setting it sends them to
    /// scened (SetActivationConditions) in the order set, after the requests made before; a
    /// refusal goes to the log (`SceneApplication.setActivationConditions` reports it). scened
    /// stores them until the scene disconnects: a new daemon started on the same state has
    /// them, and a setting scened could not be reached for is sent again once reattached.
    public var activationConditions: SceneActivationConditions {
        get { conditions }
        set {
            conditions = newValue
            application.sendActivationConditions(of: self)
        }
    }
    var conditions = SceneActivationConditions.default

    init(session: SceneSession, instance: Int64, delegate: any SceneDelegate, application: SceneApplication) {
        self.session = session
        self.instance = instance
        self.delegate = delegate
        self.application = application
        activationState = .unattached
    }

    func update(_ body: (inout SceneSession) -> Void) { body(&session) }
}
