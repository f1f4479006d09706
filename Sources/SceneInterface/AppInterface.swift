/// The interface for app processes (io.scened.App): an app attaches as itself, receives its
/// own callbacks in commit order, and answers those that UIKit bounds in time. Shipped as
/// interfaces/io.scened.App.varlink too (InterfaceFileTests keeps the two equal).
public enum AppInterface {
    public static let name = "io.scened.App"

    public static let text = """
# An app's own side of scened: its process attaches as the app, receives every callback of its
# app in commit order, answers the callbacks UIKit bounds in time, and makes the requests UIKit
# lets an app make, on its own sessions only.
#
# A Varlink connection serves one streaming call at a time: Attach holds its connection, so the
# process makes its other calls (Acknowledge, its requests, Detach) on a second connection.
# Calls are for the app's owner and administrators (org.varlink.service.PermissionDenied);
# Acknowledge and Detach also only from the attached process. Lifecycle errors are those of
# io.scened.Manager (NoSuchSession, InvalidTransition, LimitExceeded, …).
interface io.scened.App

type SceneState (unattached, foregroundInactive, foregroundActive, background)

type ApplicationState (active, inactive, background)

type SessionRole (
  windowApplication,
  windowExternalDisplayNonInteractive,
  carTemplateApplication,
  volumetricApplication,
  immersiveSpaceApplication
)

type EventName (
  didFinishLaunching,
  configurationForConnecting,
  willConnectTo,
  willEnterForeground,
  didBecomeActive,
  willResignActive,
  didEnterBackground,
  didDisconnect,
  didDiscardSceneSessions,
  didReceiveMemoryWarning,
  willTerminate,
  backgroundTaskWillExpire,
  suspended,
  resumed,
  terminated,
  performBackgroundTask,
  didReceiveNotification,
  openURLContexts,
  continueUserActivity
)

# UIOpenURLContext: the URL, and the app that opened it (if an app did).
type URLContext (url: string, sourceApplication: ?string)

# NSUserActivity.
type UserActivity (
  activityType: string,
  title: ?string,
  userInfo: ?object,
  targetContentIdentifier: ?string,
  webpageURL: ?string
)

# State-restoration data: exactly one of a JSON object or base64-encoded opaque bytes.
type RestorationData (json: ?object, base64: ?string)

type ReclaimNote (level: string, usageBefore: int, usageAfter: int, budget: int, score: ?float, reason: string)

# One callback or state change of the app: io.scened.Manager's Event, with what the app needs
# to build its scene and the deadline of a bounded callback.
type Event (
  seq: int,
  # Microseconds since the Unix epoch.
  time: int,
  event: EventName,
  app: string,
  session: ?string,
  scene: ?int,
  state: string,
  appState: ApplicationState,
  # Why: request, timer, reclaim, cap, restore; and what the system does: shutdown (scened or
  # the machine stopping), interruption, lock (the screen locked), session (the login session
  # inactive: a VT or user switch), idle, sleep. New causes may come: take an unknown one as
  # a plain reason, not as an error.
  cause: string,
  sessions: ?[]string,
  # willConnectTo: the state-restoration data to restore the scene from.
  restoration: ?RestorationData,
  # willConnectTo: true when an existing session reconnects (no configurationForConnecting).
  reconnect: ?bool,
  # configurationForConnecting, willConnectTo: the session's role, configuration name and
  # userInfo (UISceneSession).
  role: ?SessionRole,
  configuration: ?string,
  userInfo: ?object,
  task: ?string,
  taskName: ?string,
  # terminated: requested, shutdown (scened or the machine stopping), backgroundTaskExpired,
  # memoryPressure, exited (the process went away without Detach) or hung (it missed a
  # deadline).
  reason: ?string,
  reclaim: ?ReclaimNote,
  # performBackgroundTask, didReceiveNotification, and the backgroundTaskWillExpire of a
  # scheduled task: refresh, processing or notification; the task's identifier, or the
  # notification's id and payload (withheld from a Monitor that may not read the app's data).
  kind: ?string,
  identifier: ?string,
  notification: ?string,
  payload: ?object,
  # didEnterBackground, willTerminate: answer with Acknowledge(seq) before this time
  # (microseconds since the Unix epoch). A didEnterBackground left unanswered gets the process
  # terminated as hung, without willTerminate (R23). backgroundTaskWillExpire: end the task
  # before this time, or the process is terminated (R24). performBackgroundTask: call
  # CompleteBackgroundTask before this time; at it comes backgroundTaskWillExpire, and the
  # app is suspended again one grace period later. didReceiveNotification: answer with
  # Acknowledge(seq) once handled; at this time the app is suspended again anyway (R34).
  deadline: ?int,
  # willConnectTo: UIScene.ConnectionOptions' urlContexts and userActivities;
  # openURLContexts: scene(_:openURLContexts:); continueUserActivity: scene(_:continue:).
  urlContexts: ?[]URLContext,
  userActivities: ?[]UserActivity
)

# The deadlines in force, microseconds.
type Deadlines (didEnterBackground: int, willTerminate: int, backgroundTaskExpiration: int)

# Memory pressure is about to take a scene of the app: save its state now (reclaim grace).
# Answer with AnswerNotice before the deadline: ack (with the scene's state-restoration data,
# if any) and it is disconnected at once; defer (once per scene per pressure episode) and
# another scene is taken instead; silence and it is disconnected at the deadline, from the
# state it saved last, and the app's grace is halved next time. The scene comes back, with its
# saved state, when it is activated again.
type ReclaimNotice (
  id: int,
  # What will happen: disconnect.
  action: string,
  session: string,
  # warning or critical.
  level: string,
  # Microseconds since the Unix epoch.
  deadline: int,
  reason: string
)

# Attaches the calling process as the app's process (requires "more"). One process per app at
# a time (AlreadyAttached). The first reply carries attached; every later one an event or a
# reclaim notice.
#
# Without since, the caller is a new process: the app is launched (didFinishLaunching, then any
# pending didDiscardSceneSessions), after the end of any process the app had without one
# attached (terminated, reason exited). Its archived sessions stay archived until activated.
# With since, the caller is the same process attaching again (scened restarted): it gets the
# app's events from sequence number since on (its last one handled + 1), then live ones; the
# app is not relaunched if it is running.
#
# When the connection closes without Detach, the process is taken for dead: the app is
# terminated with no callback (reason exited), its sessions archived with their saved state.
method Attach(app: string, since: ?int) -> (attached: ?Attached, event: ?Event, notice: ?ReclaimNotice)

type Attached (app: string, pid: int, nextSeq: int, deadlines: Deadlines)

# Answers a bounded callback (an event with a deadline): didEnterBackground, with the scene's
# state-restoration data if it has any to save (stateRestorationActivity(for:)), or
# willTerminate, with restorations: the state of each of the app's scenes, by session id, as
# UIKit asks stateRestorationActivity(for:) on the way down. Each is saved as SaveState saves
# it, and the reply comes once all are committed. Every key must be a session of the app
# (NotOwnSession, NoSuchSession), every payload within MaxRestorationSize (LimitExceeded), the
# whole answer within MaxMessageSize; a refused answer saves nothing and settles nothing, so
# it may be sent again before the deadline. restorations on any other answer is
# org.varlink.service.InvalidParameter. Late answers are refused with DeadlinePassed.
method Acknowledge(
  app: string,
  seq: int,
  restoration: ?RestorationData,
  restorations: ?[string]RestorationData
) -> ()

# Answers a reclaim notice: defer true to keep the scene for now (once per scene per episode;
# a second deferral is taken as an ack), otherwise ack, optionally with the scene's
# state-restoration data, saved before the disconnect. disconnected says whether the scene was
# disconnected now; an unknown or settled notice is NotAwaiting.
method AnswerNotice(app: string, notice: int, restoration: ?RestorationData, defer: ?bool) -> (disconnected: bool)

# Ends the attachment: after willTerminate, or to quit (a running app is terminated without
# callbacks, reason exited). The Attach call then ends.
method Detach(app: string) -> ()

# UIApplication.requestSceneSessionActivation: an existing session (activated, reconnected if
# archived) or, without session, a new one (role, configuration and userInfo as given). url or
# activity (UIKit's userActivity argument; at most one): a new or reconnected scene gets it in
# willConnectTo, a connected one by openURLContexts or continueUserActivity once active. Its
# sourceApplication is the app; the URL's scheme need not be the app's.
method RequestSceneSessionActivation(
  app: string,
  session: ?string,
  role: ?SessionRole,
  configuration: ?string,
  userInfo: ?object,
  url: ?string,
  activity: ?UserActivity
) -> (session: string)

# Opens another app's URL or activity through scened, as io.scened.Manager.Open does (its
# errors, NoHandler included), with the caller's owner's rights; the target gets the URL with
# sourceApplication set to app.
method Open(app: string, url: ?string, activity: ?UserActivity, activate: ?bool) -> (
  target: string,
  session: ?string,
  open: ?string
)

# UISceneActivationConditions of the session's connected scene (NotOwnSession, NoSuchSession;
# InvalidTransition if it has no scene): patterns matched against a whole target content
# identifier, "*" for any run of characters, "?" for one. canActivateFor absent: any (UIKit's
# default); prefersToActivateFor absent: none. At most 32 patterns of 1 to 1,024 bytes each
# (LimitExceeded). Stored; they end with the scene (a reconnected scene declares its own).
method SetActivationConditions(
  app: string,
  session: string,
  canActivateFor: ?[]string,
  prefersToActivateFor: ?[]string
) -> ()

# UIApplication.requestSceneSessionDestruction: the session is discarded.
method RequestSceneSessionDestruction(app: string, session: string) -> ()

# beginBackgroundTask(withName:expirationHandler:); the expiration comes as a
# backgroundTaskWillExpire event.
method BeginBackgroundTask(app: string, session: ?string, name: ?string) -> (task: string)

method EndBackgroundTask(app: string, task: string) -> ()

method SaveState(app: string, session: string, restoration: ?RestorationData) -> ()

method SaveUserInfo(app: string, session: string, userInfo: object) -> ()

# What the process holds: for a session's scene, or (without session) apart from its scenes.
method SetFootprint(app: string, session: ?string, footprint: int) -> ()

type BackgroundTaskKind (refresh, processing)

type BackgroundMode (audio, location, voip, processing)

# BGTaskScheduler.submit: the task runs at or after earliestBegin (microseconds since the Unix
# epoch; now if absent), when scened can wake the app: a suspended app is thawed, a
# not-running app with ExecStart= started (didFinishLaunching, cause background); it receives
# performBackgroundTask (cause background) and is suspended again once it calls
# CompleteBackgroundTask or the deadline and a grace have passed (R34). Tasks falling due
# close together share one wake; processing tasks run only while pressure is normal; nothing
# runs while the machine sleeps or under critical pressure. Stored: a restart loses none.
# Scheduling an identifier again replaces it. At most [Background] MaxScheduledTasks= per
# app (LimitExceeded); identifier: 1 to 255 bytes.
method ScheduleBackgroundTask(app: string, identifier: string, kind: BackgroundTaskKind, earliestBegin: ?int) -> ()

# BGTaskScheduler.cancel(taskRequestWithIdentifier:): io.scened.Manager.NoSuchBackgroundTask
# if none is waiting.
method CancelBackgroundTask(app: string, identifier: string) -> ()

# BGTask.setTaskCompleted(success:): the task handed over by performBackgroundTask is done.
method CompleteBackgroundTask(app: string, identifier: string, success: bool) -> ()

# The app runs an activity of one of its [App] BackgroundModes= (BackgroundModeNotDeclared
# otherwise): until EndBackgroundActivity (or the end of its process) it is not suspended for
# idling, but still warned, counted and reclaimed under pressure, and suspended for sleep.
method BeginBackgroundActivity(app: string, mode: BackgroundMode) -> ()

method EndBackgroundActivity(app: string, mode: BackgroundMode) -> ()

# The background mode is not in the app's [App] BackgroundModes=.
error BackgroundModeNotDeclared (app: string, mode: string, message: string)

# Another process is attached as the app.
error AlreadyAttached (app: string, pid: int, message: string)

# The call needs the app's attached process, and the caller is not it (or none is attached).
# For an app scened starts itself, every request needs it.
error NotAttached (app: string, message: string)

# No bounded callback with this sequence number (or no notice with this id) is waiting for the
# app's answer.
error NotAwaiting (app: string, seq: int, message: string)

# The answer came after the deadline: the process has been terminated as hung.
error DeadlinePassed (app: string, seq: int, message: string)

# The session is not the app's.
error NotOwnSession (app: string, session: string, message: string)

# Ends an Attach call: the app's process was terminated as hung (it missed a deadline) and
# must exit. Also the answer to a request of an app scened starts itself (ExecStart=) whose
# app was terminated (reason "terminated"): that process is on its way out and may not bring
# the app back; only its Acknowledge of willTerminate and Detach are taken.
error Terminated (app: string, reason: string, message: string)
"""
}
