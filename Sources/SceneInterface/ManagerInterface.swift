/// The daemon's Varlink interface, served by org.varlink.service.GetInterfaceDescription and
/// enforced for every call (unknown, missing or mistyped parameters → InvalidParameter).
/// The same text is shipped as interfaces/io.scened.Manager.varlink (InterfaceFileTests keeps
/// the two equal); scenectl names its methods and errors through `name`.
public enum ManagerInterface {
    public static let name = "io.scened.Manager"

    public static let text = typesText + """
# Launches an app (didFinishLaunching, then any pending didDiscardSceneSessions). An app
# scened starts itself (ExecStart=) is launched when its process attaches: the call waits for
# that, and its reply then carries no events (Attach and Monitor have them).
method Launch(app: string) -> (events: []Event)

# Terminates an app: willTerminate if it is running and not suspended; its scenes go away with
# no callback and their sessions stay archived.
method Terminate(app: string) -> (events: []Event)

# Connects a new session, launching the app first if needed. To the foreground unless
# background is true.
method Connect(
  app: string,
  role: ?SessionRole,
  configuration: ?string,
  userInfo: ?object,
  footprint: ?int,
  background: ?bool,
  protected: ?bool,
  restoreCostMs: ?int
) -> (session: Session, events: []Event)

# Brings a session to foregroundActive; an archived session reconnects with a new scene and
# gets its state-restoration data back.
method Activate(session: string) -> (session: Session, events: []Event)

# foregroundActive -> foregroundInactive (the app switcher).
method Deactivate(session: string) -> (session: Session, events: []Event)

# To the background, through foregroundInactive.
method Background(session: string) -> (session: Session, events: []Event)

# Releases the session's scene and keeps the session (archived).
method Disconnect(session: string) -> (session: Session, events: []Event)

# Closes the session for ever (didDisconnect if connected, then didDiscardSceneSessions, at once
# or after the app's next launch).
method Discard(session: string) -> (events: []Event)

# Saves the session's state-restoration data; null clears it.
method SaveState(session: string, restoration: ?RestorationData) -> (session: Session)

method SaveUserInfo(session: string, userInfo: object) -> (session: Session)

method SetFootprint(session: string, footprint: int) -> (session: Session)

method SetProtected(session: string, protected: bool) -> (session: Session)

# Memory the app's process holds apart from its scenes.
method SetAppFootprint(app: string, footprint: int) -> (app: App)

# Begins a background task for a session's app (or for an app).
method BeginBackgroundTask(session: ?string, app: ?string, name: ?string) -> (task: BackgroundTask, events: []Event)

method EndBackgroundTask(token: string) -> (events: []Event)

# didReceiveMemoryWarning to every running app, or to those listed that are running.
method MemoryWarning(apps: ?[]string) -> (events: []Event)

# Lists sessions, filtered by app, condition and scene state, without their userInfo and
# restoration data (GetSession has them). With "more", sessions arrive in pieces of at most
# 500 sessions or 256 KiB; without it, answers of more than 10000 sessions are refused with
# org.varlink.service.ExpectedMore.
method ListSessions(app: ?string, condition: ?SessionCondition, state: ?SceneState) -> (sessions: []Session)

method GetSession(session: string) -> (session: Session)

method ListApps() -> (apps: []App)

method GetApp(app: string) -> (app: App)

method GetStatus() -> (status: Status)

# The pressure level, its sources, usage against the budget, and the current and last episode.
method GetPressure() -> (pressure: Pressure)

# How many sessions are in one condition and scene state (GetMetrics).
type SessionTally (condition: SessionCondition, state: SceneState, count: int)

# How many apps are in one process state.
type AppTally (process: ProcessState, count: int)

# Reclaim actions of one kind since start (memoryWarning, suspend, disconnect, terminate,
# discard) and the bytes they freed by the daemon's accounting.
type ReclaimTally (action: string, count: int, bytesFreed: int)

# Events published since start, by name; apps terminated since start, by reason.
type EventTally (event: EventName, count: int)
type TerminationTally (reason: string, count: int)

# Durations in fixed buckets: upper bounds in microseconds, ascending, and how many fell in
# each (above the previous bound, at most this one; not cumulative); overflow: above the last.
# sum in microseconds.
type LatencyHistogram (bounds: []int, counts: []int, overflow: int, sum: int, count: int)

# Figures for monitoring (scenectl metrics): gauges as they are now, counters since start.
type Metrics (
  uptime: int,
  sessions: []SessionTally,
  apps: []AppTally,
  pressure: string,
  usage: int,
  budget: int,
  # Pressure episodes begun since start.
  episodes: int,
  reclaims: []ReclaimTally,
  grace: GraceCounters,
  events: []EventTally,
  terminations: []TerminationTally,
  backgroundTasks: int,
  connections: int,
  passes: int,
  calls: int,
  commits: int,
  # How long each loop pass took.
  passLatency: LatencyHistogram
)

method GetMetrics() -> (metrics: Metrics)

# One candidate victim of reclaim, best first, with the parts of its score.
type ReclaimCandidate (
  rank: int,
  # The scene's session; null for a suspended app's process (terminated at critical).
  session: ?string,
  app: string,
  # 1: aged background scenes and suspended processes; 2: young scenes (critical only).
  tier: int,
  # What keeping it is worth per byte, lowest first: (uses + 1) * (1 + restoreCostMs /
  # meanRestoreCostMs) / bytes.
  score: float,
  # How often it is used: usage sessions, recent activations counted in.
  uses: float,
  restoreCostMs: float,
  meanRestoreCostMs: float,
  # What reclaiming it frees.
  bytes: int,
  lastActiveAt: int,
  # Microseconds in the background.
  backgroundFor: int,
  reason: string
)

# One step of a reclaim plan: what, on which session or apps, and the usage after it.
type ReclaimPlanStep (action: string, session: ?string, apps: ?[]string, usageAfter: int, reason: string, score: ?float)

# The controller's next plan, without acting.
type ReclaimPlan (
  # The level the plan is made for: the current one, or warning while there is no pressure.
  level: string,
  currentLevel: string,
  usage: int,
  budget: int,
  lowWatermark: int,
  candidates: []ReclaimCandidate,
  # Candidates beyond the limit asked for.
  moreCandidates: int,
  # Young scenes held back at warning; background scenes never reclaimed (protected).
  withheld: int,
  protected: int,
  steps: []ReclaimPlanStep,
  # The usage the plan would leave.
  usageAfter: int,
  # Only foreground and protected scenes would be left.
  unrelievable: bool
)

# The reclaim controller's ranking of victims and the plan it would carry out now, at the
# current level or at a given one (warning while there is no pressure), without acting.
method GetReclaimPlan(level: ?string, limit: ?int) -> (plan: ReclaimPlan)

# One reading of the reclaim controller: taken whenever usage, budget or level changed.
type PressureSample (time: int, seq: int, usage: int, budget: int, level: string)

# One reclaim action: warning, suspend, disconnect, terminate or discard, on a session or
# app(s), with the usage when it was taken.
type PressureAction (time: int, seq: int, action: string, target: string, usage: int)

# What the reclaim controller saw and did since the daemon started (at most the last 2,048
# samples and 1,024 actions), from event sequence number since on: the sample in force at
# that point first. time is microseconds since the epoch; seq the next event's number then.
method GetPressureHistory(since: ?int) -> (
  samples: []PressureSample,
  actions: []PressureAction,
  lowWatermark: float,
  highWatermark: float,
  # Entries that no longer fit and were dropped, oldest first.
  droppedSamples: int,
  droppedActions: int
)

# Forces a pressure level (warning or critical; normal forces nothing), for duration
# microseconds or until cleared. Reclaim acts on the highest level of all sources.
method SetPressure(level: string, duration: ?int) -> (pressure: Pressure)

# Removes a forced level.
method ClearPressure() -> (pressure: Pressure)

# Re-reads the configuration and applies it; answers once done. A configuration with errors is
# refused (ConfigurationError) and the one in force stays.
method Reload() -> (configFiles: []string)

# Interruptions, for a shell (a compositor, a launcher, a kiosk UI: an incoming call, the app
# switcher, a notification centre): while any is held, every foregroundActive scene resigns
# active (willResignActive, cause interruption) and stays in the foreground, and no scene
# becomes active; when the last one ends, exactly those scenes get didBecomeActive (R28).
# Interruptions nest and overlap; one ends when EndInterruption names its token or when the
# connection that began it closes. At most 64 per connection (LimitExceeded).
method BeginInterruption(reason: string) -> (token: string, events: []Event)

method EndInterruption(token: string) -> (events: []Event)

# Hands a notification to the app (administrators, and members of its [App] NotifyGroup=: a
# push relay, a fleet agent). A running app receives didReceiveNotification at once; a
# suspended one is thawed for it (R34) and suspended again once it answers or its budget ends;
# while the app cannot run (not running and not startable, the machine asleep, critical
# pressure; warning pressure for priority normal), it waits. The reply means it is stored and
# will be delivered exactly once, across restarts of scened. payload: a JSON object of at most
# [Background] MaxNotificationSize= bytes; priority: normal (default) or high. Refused with
# LimitExceeded (MaxPendingNotifications) when the app has that many waiting or unanswered.
method Notify(app: string, payload: object, priority: ?string) -> (notification: string)

# Opens a URL or continues an activity (UIKit's open(_:) and handoff): the app is the one
# whose [App] URLSchemes= has the URL's scheme (or whose ActivityTypes= has the activity's
# type; NoHandler if none). The scene: session if given (it must be the app's: NotOwnSession),
# else the connected scene whose activation conditions prefer the target content identifier
# (the URL's text, or the activity's targetContentIdentifier), else one whose conditions
# accept it (by default every scene accepts; the foremost, most recently active first), else a
# new scene, which gets it in willConnectTo (urlContexts, userActivities). A connected scene
# gets openURLContexts or continueUserActivity, after willEnterForeground and before
# didBecomeActive when activate (default true) brings it forward. A suspended app is resumed
# to receive it. For an app that is not running the Open is stored and delivered when the app
# launches (its process is started if it has ExecStart=), across restarts of scened: the reply
# then names it (open) instead of a session. Exactly one of url and activity. Who may: the
# app's owner (the user it runs as, [App] User=) and administrators (PermissionDenied
# otherwise). url: an absolute URL of at most [Routing] MaxURLSize= bytes, activity at most
# MaxActivitySize= (LimitExceeded); at most [Routing] MaxPendingOpens= stored per app.
method Open(url: ?string, activity: ?UserActivity, session: ?string, activate: ?bool) -> (
  app: string,
  session: ?string,
  open: ?string,
  events: []Event
)

# Which app handles each URL scheme and activity type (apps.d), for scenectl and the desktop
# entries.
method ListRoutes() -> (routes: []Route)

# The background work scheduled, waiting and under way, for one app or all.
method ListBackgroundWork(app: ?string) -> (
  tasks: []ScheduledTask,
  notifications: []PendingNotification,
  wakes: []WakeItem
)

# Streams events (requires "more"): from sequence number since (as far back as the event log
# reaches) or from now, optionally only one app's or one session's (NoSuchSession if that
# session id was never given out; a discarded session's history can still be followed).
method Monitor(app: ?string, session: ?string, since: ?int) -> (event: Event)

# The history from sequence number since (default: as far back as the event log reaches) up to
# now, as trace lines for scenectl simulate (JSON text, one event each; the first has the
# reclaim settings). Requires "more": pieces of at most 256 KiB. Footprints, restore costs and
# protection are the sessions' current ones (no event records them).
method ExportTrace(since: ?int) -> (lines: []string)

# Open: no app handles the URL's scheme or the activity's type.
error NoHandler (scheme: ?string, activityType: ?string, message: string)

# Open: the session given is not one of the app that handles the URL or activity.
error NotOwnSession (app: string, session: string, message: string)

# EndInterruption: no interruption with this token is held (ended, or never begun).
error NoSuchInterruption (token: string, message: string)

# scened is stopping (SIGTERM, or the machine's shutdown): calls that change state are refused
# until it is started again; reads go on.
error Stopping (message: string)

# Also for a session whose stored record is damaged (quarantined): the message says so.
error NoSuchSession (session: string, message: string)
error SessionDiscarded (session: string, message: string)
error NoSuchApp (app: string, message: string)
error NoSuchTask (token: string, message: string)
# The command does not apply in the current state, which is named.
error InvalidTransition (command: string, app: string, session: ?string, state: string, reason: string, message: string)
# A parameter is well-typed but its value is unacceptable.
error InvalidArgument (parameter: string, reason: string, message: string)
# The session's userInfo or restoration data, kept in the store, could not be read back: its
# stored row is damaged (reason says how). The session is otherwise served; SaveState and
# SaveUserInfo write over the damaged data.
error SavedDataUnavailable (session: string, reason: string, message: string)
# The monitor asked for events older than the event log keeps.
error EventsUnavailable (since: int, oldest: int, message: string)
# The configuration has an error; nothing was changed.
error ConfigurationError (file: string, line: ?int, message: string)
# The change could not be committed to storage and was not made.
error StorageFailure (message: string)
# The message broke the protocol (size, UTF-8, JSON, missing method); the connection is closed.
error ProtocolViolation (reason: string, message: string)
# A limit of the [Limits] configuration section was reached; limit is the setting's name
# (MaxConnections, MaxConnectionsPerUser, MaxOutputPerConnection, MaxBufferedOutput,
# MaxBufferedInput, IdleTimeoutSec, MaxSessionsPerApp, MaxUserInfoSize, MaxRestorationSize)
# and maximum its value. For the connection limits, a slow reader (MaxOutputPerConnection,
# MaxBufferedOutput: its unsent replies were dropped), a stalled message (IdleTimeoutSec) and
# MaxBufferedInput the connection is closed after this error; otherwise only the call failed.
error LimitExceeded (limit: string, maximum: int, message: string)

# No scheduled task (or open wake item) of the app with this identifier.
error NoSuchBackgroundTask (app: string, identifier: string, message: string)
# The app is one scened starts (ExecStart=) and its process could not be started, exited
# before it attached, or did not attach within AttachTimeoutSec=; the call that needed it
# launched was not carried out. The journal has the process's exit status.
error LaunchFailed (app: string, message: string)
"""
}
