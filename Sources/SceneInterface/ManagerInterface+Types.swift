extension ManagerInterface {
    /// The first part of `text`: the interface's name, its description and its types, and the
    /// blank line before the methods (hence the two empty lines that end the literal).
    static let typesText = """
# scened manages scene sessions with the semantics of UIKit's scene life cycle.
#
# Apps are named by reverse-DNS identifiers (com.example.mail). A session (UISceneSession) is
# named s<number> (s42) and is never reused. A session is live (a scene is connected),
# archived (its scene was released; session and state-restoration data kept) or discarded
# (gone for ever). Every change is answered only once it is committed to storage, and is
# described by the ordered list of events (callbacks and state changes) it caused.
interface io.scened.Manager

# The scene's activation state (UIScene.ActivationState).
type SceneState (unattached, foregroundInactive, foregroundActive, background)

# The app's state derived from its connected scenes (UIApplication.State, rule R18).
type ApplicationState (active, inactive, background)

# The app's process state; a suspended process runs no code.
type ProcessState (notRunning, running, suspended)

# live: a scene is connected; archived: scene released, session kept.
type SessionCondition (live, archived)

# UISceneSession.Role.
type SessionRole (
  windowApplication,
  windowExternalDisplayNonInteractive,
  carTemplateApplication,
  volumetricApplication,
  immersiveSpaceApplication
)

# The callbacks and state-only events, in the public vocabulary.
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

# A URL a scene is opened with (UIOpenURLContext): the URL, and the app that opened it, if
# an app did (io.scened.App Open, RequestSceneSessionActivation).
type URLContext (url: string, sourceApplication: ?string)

# An activity a scene continues (NSUserActivity). activityType is one of an app's
# [App] ActivityTypes=; targetContentIdentifier is matched against the scenes' activation
# conditions.
type UserActivity (
  activityType: string,
  title: ?string,
  userInfo: ?object,
  targetContentIdentifier: ?string,
  webpageURL: ?string
)

# State-restoration data: exactly one of a JSON object or base64-encoded opaque bytes.
type RestorationData (
  # A JSON object.
  json: ?object,
  # Opaque bytes, base64 (RFC 4648) encoded.
  base64: ?string
)

# A scene session.
type Session (
  # s<number>; never reused.
  id: string,
  app: string,
  role: SessionRole,
  configuration: string,
  condition: SessionCondition,
  # unattached while archived.
  state: SceneState,
  # The session's userInfo and state-restoration data: in GetSession and in the replies of
  # commands on the session, never in ListSessions (their sizes are, always).
  userInfo: ?object,
  restoration: ?RestorationData,
  # Bytes of the userInfo JSON text, and of the restoration data (0: none).
  userInfoSize: int,
  restorationSize: int,
  # Bytes the connected scene holds; what a disconnect frees.
  footprint: int,
  # Protected sessions are reclaimed only as a last resort.
  protected: bool,
  # Declared cost of restoring the session, milliseconds (0: unknown).
  restoreCostMs: int,
  # Scene instances so far; a reconnection creates a new one.
  sceneInstance: int,
  # Times in microseconds since the Unix epoch.
  createdAt: int,
  lastActiveAt: int,
  backgroundSince: int,
  activations: int,
  restores: int
)

# An open background task.
type BackgroundTask (
  # t<number>
  token: string,
  app: string,
  session: ?string,
  name: string,
  beganAt: int,
  # When the task expires (backgroundTaskWillExpire); null while the app is in the foreground.
  expiresAt: ?int,
  # When backgroundTaskWillExpire was sent, if it was.
  expirationSentAt: ?int
)

# An app and its derived state.
type App (
  id: string,
  process: ProcessState,
  state: ApplicationState,
  sessions: int,
  liveSessions: int,
  foregroundActiveScenes: int,
  foregroundInactiveScenes: int,
  backgroundScenes: int,
  # Sessions discarded while the app was not running, delivered after its next launch.
  pendingDiscards: []string,
  tasks: []BackgroundTask,
  launches: int,
  launchedAt: ?int,
  # When the running app will be suspended if nothing changes.
  suspendsAt: ?int,
  # Memory the process holds apart from its scenes.
  baseFootprint: int,
  # Sum of the footprints of its live sessions.
  sceneFootprint: int,
  # The process attached as the app through io.scened.App, if one is.
  attachedPid: ?int,
  # For an app scened starts itself (ExecStart= in apps.d/APP.conf): its main process, if
  # one runs, and whether it is frozen (its app is suspended).
  startedPid: ?int,
  frozen: ?bool,
  # The user whose login sessions the app follows: its User=, else scened's own.
  follows: string,
  # How far the system holds its scenes down now (none, inactive or background), and why
  # (interruption, lock, session, idle, sleep, shutdown).
  hold: string,
  holdCause: ?string,
  # [App] BackgroundModes= (audio, location, voip, processing), and those the app declares
  # active now (BeginBackgroundActivity): while one is, the app is not suspended for idling.
  backgroundModes: []string,
  activeModes: []string,
  # [App] URLSchemes= and ActivityTypes=: what Open routes to the app.
  urlSchemes: []string,
  activityTypes: []string,
  # Opens accepted while the app was not running, delivered at its next launch.
  pendingOpens: int,
  # Its scheduled background tasks, notifications waiting, and the items of an open wake.
  scheduledTasks: int,
  pendingNotifications: int,
  wakes: int
)

# What the reclaim policy recorded with an action.
type ReclaimNote (
  level: string,
  usageBefore: int,
  usageAfter: int,
  budget: int,
  score: ?float,
  reason: string
)

# One callback or state change.
type Event (
  # Strictly increasing, never reused, across restarts.
  seq: int,
  # Microseconds since the Unix epoch.
  time: int,
  event: EventName,
  app: string,
  session: ?string,
  # The scene instance of the session (reconnections make new ones).
  scene: ?int,
  # The state after the event: a SceneState for scene callbacks, a ProcessState otherwise.
  state: string,
  appState: ApplicationState,
  # request, timer, reclaim, cap or restore; what the system did: shutdown (a stop of scened
  # or of the machine), interruption, lock, session (no active session: a VT or user switch),
  # idle, sleep.
  cause: string,
  # didDiscardSceneSessions: the sessions discarded; terminated: the sessions archived.
  sessions: ?[]string,
  # willConnectTo: the state-restoration data handed to the new scene.
  restoration: ?RestorationData,
  # willConnectTo: true when an existing session reconnects.
  reconnect: ?bool,
  # backgroundTaskWillExpire: the task.
  task: ?string,
  taskName: ?string,
  # terminated: requested, backgroundTaskExpired, memoryPressure, exited (an attached process
  # went away without detaching), hung (it missed a deadline) or shutdown (scened or the
  # machine stopped and scened ended the process it had started, after willTerminate).
  reason: ?string,
  reclaim: ?ReclaimNote,
  # performBackgroundTask, didReceiveNotification, and the backgroundTaskWillExpire of a
  # scheduled task: refresh, processing or notification; the task's identifier, or the
  # notification's id and payload (withheld from a Monitor that may not read the app's data).
  kind: ?string,
  identifier: ?string,
  notification: ?string,
  payload: ?object,
  # A wake's item closes at this time (microseconds since the Unix epoch).
  deadline: ?int,
  # willConnectTo (UIScene.ConnectionOptions), openURLContexts, continueUserActivity: what
  # the scene is opened with (withheld, like payload, from a Monitor that may not read the
  # app's data).
  urlContexts: ?[]URLContext,
  userActivities: ?[]UserActivity
)

# Which app handles a URL scheme or an activity type, from which apps.d file.
type Route (kind: string, name: string, app: string, file: string)

type BackgroundStatus (
  wakingApps: int,
  maxConcurrentWakes: int,
  scheduledTasks: int,
  pendingNotifications: int,
  nextDue: ?int
)

# A task an app scheduled (io.scened.App.ScheduleBackgroundTask), waiting to fall due.
type ScheduledTask (app: string, identifier: string, kind: string, earliestBegin: int, submittedAt: int)

# A notification accepted by Notify and not delivered yet (size: its payload's bytes).
type PendingNotification (notification: string, app: string, priority: string, queuedAt: int, size: int)

# What an app was handed by a wake and has not answered: a task (identifier) or a
# notification; expiring once backgroundTaskWillExpire went out.
type WakeItem (
  app: string,
  kind: string,
  identifier: ?string,
  notification: ?string,
  seq: int,
  began: int,
  deadline: int,
  expiring: bool
)

type SessionCounts (live: int, archived: int, total: int)

type LoopCounters (passes: int, calls: int, commits: int)

type Status (
  version: string,
  pid: int,
  # Microseconds since the daemon started.
  uptime: int,
  socket: string,
  apps: int,
  runningApps: int,
  suspendedApps: int,
  sessions: SessionCounts,
  foregroundActiveScenes: int,
  backgroundTasks: int,
  # The sequence number the next event will get.
  nextSeq: int,
  connections: int,
  # Counters since start: loop passes, calls handled, batches committed (calls per commit is
  # the size of group commit; calls per pass how much each pass serves).
  loop: LoopCounters,
  # Stored rows found damaged (at start-up, or event-log rows as read): kept, never served.
  quarantined: int,
  # normal, warning or critical.
  pressure: string,
  # Resident bytes by the daemon's accounting, against the memory budget.
  usage: int,
  budget: int,
  # The last finished pressure episode, if any.
  lastEpisode: ?PressureEpisode,
  # The configuration files in force.
  configFiles: []string,
  # What the system does to the scenes: interruptions, locked login sessions, sleep, a stop.
  system: SystemState,
  # Background work: apps awake for it now against [Background] MaxConcurrentWakes=, what
  # waits, and when the next scheduled task falls due.
  background: BackgroundStatus
)

# One interruption held by a shell (BeginInterruption).
type Interruption (token: string, reason: string, since: int)

# A user whose login sessions hold the apps that follow them: lock (locked), session (no
# active session: a VT or user switch) or idle. since: microseconds since the epoch.
type LockedUser (uid: int, user: string, cause: string, since: int)

type SystemState (
  interruptions: []Interruption,
  # How logind is followed: "followed", "off" (FollowLogin=no) or why it is not.
  login: string,
  locked: []LockedUser,
  # Preparing for sleep or asleep (R31); stopping (R32).
  sleeping: bool,
  stopping: bool
)

# One pressure source and what it reports.
type PressureSource (name: string, level: string, detail: string)

# A pressure episode: from leaving normal to returning to it.
type PressureEpisode (
  number: int,
  startedAt: int,
  endedAt: ?int,
  peakLevel: string,
  usageAtStart: int,
  # When usage was first back at the low watermark.
  relievedAt: ?int,
  # Only foreground and protected scenes were left to reclaim.
  unrelievable: bool,
  disconnects: int,
  terminations: int,
  suspensions: int,
  bytesFreed: int
)

# The pressure picture.
type Pressure (
  level: string,
  sources: []PressureSource,
  usage: int,
  budget: int,
  # Watermarks in bytes.
  lowWatermark: int,
  highWatermark: int,
  criticalWatermark: int,
  # An operator's forced level, and until when (microseconds since the epoch; null: until cleared).
  override: ?string,
  overrideUntil: ?int,
  episode: ?PressureEpisode,
  lastEpisode: ?PressureEpisode,
  # The reclaim grace of attached apps since start: notices out now, given, answered ack,
  # deferred, left to their deadline.
  grace: GraceCounters,
  # The memory the apps scened starts really hold, as last read: its share of usage.
  measured: ?MeasuredMemory
)

# Readings of started apps' memory (MemorySource=measured): the sum, over how many apps,
# from where ("memory.current" of their cgroups, or "Pss" of their processes), when, and
# whether a reclaim waits for memory it freed to show before its next batch.
type MeasuredMemory (apps: int, bytes: int, source: string, measuredAt: ?int, awaitingRelease: bool)

type GraceCounters (pending: int, notices: int, acks: int, deferrals: int, timeouts: int)


"""
}
