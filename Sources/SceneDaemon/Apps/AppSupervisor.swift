import SceneCore
import SystemdKit
import Varlink

/// The app processes scened deals with: those attached over io.scened.App (`AttachmentTable`),
/// those it starts itself (`LaunchTable`, carried out with `AppLauncher`) and the memory they
/// are measured to hold (`MemoryShares`). The tables decide; this class keeps them and carries
/// out what they return: `AppProcesses` for attached apps, `LaunchShell` for started ones,
/// `MemoryShell` for their readings.
///
/// It reports up only by what it holds: the daemon asks `wantsPass` after handing it work, and
/// a started process's exit reaches the daemon as `DaemonInput.appExited`.
final class AppSupervisor {
    let host: EngineHost
    let server: VarlinkServer
    let logger: JournalLogger
    let loop: EventLoop
    let inbox: LoopInbox<DaemonInput>

    /// The processes attached as apps, and what they owe.
    var attachments = AttachmentTable()
    /// Attached processes whose connection closed, to be terminated as exited.
    var pendingDeaths: [(AppID, Int32)] = []
    var appEntryLog = RateLimiter()
    /// The apps scened starts itself: the table decides, the launcher carries out (made at
    /// the first launch, so that a daemon with no such app never touches cgroups).
    var launches = LaunchTable()
    var launcher: AppLauncher?
    var appSettings: [AppID: AppSettings] = [:]
    /// Calls waiting for their app's process to attach, by app.
    var parked: [AppID: [(connection: Int, call: VarlinkCall)]] = [:]
    /// Launches settled since the last pass: their waiting calls go ahead (nil) or fail.
    var launchOutcomes: [(app: AppID, failure: String?, count: Int)] = []
    /// Started processes that exited, with their status, to be carried out in the pass.
    var pendingExits: [(AppID, String)] = []
    /// How started apps' measured memory is charged, and when they were last read.
    var shares = MemoryShares()
    var lastMeasuredAt: Timestamp?
    /// AppCgroups= as read at start.
    let appCgroups: Bool
    /// The socket a started app is told to attach on (SCENED_SOCKET).
    let socketPath: String

    init(host: EngineHost, server: VarlinkServer, logger: JournalLogger, loop: EventLoop, inbox: LoopInbox<DaemonInput>,
         settings: DaemonSettings, socketPath: String) {
        self.host = host
        self.server = server
        self.logger = logger
        self.loop = loop
        self.inbox = inbox
        self.socketPath = socketPath
        appCgroups = settings.appCgroups
        configure(settings)
    }

    /// The settings that may change at run time (start and reload).
    func configure(_ settings: DaemonSettings) {
        attachments.deadlines = settings.appDeadlines
        appSettings = settings.apps
    }

    /// Work is waiting for the next pass: deaths to carry out, launches settled.
    var wantsPass: Bool { !pendingDeaths.isEmpty || !launchOutcomes.isEmpty || !pendingExits.isEmpty }

    /// Whether an app takes part in the reclaim grace. A suspended app runs no code (and a
    /// started one is frozen): it saved its state as it entered the background and gets no
    /// notice, as iOS gives none to suspended apps.
    func takesNotice(_ app: AppID) -> Bool {
        attachments.attachment(of: app) != nil && host.engine.apps[app]?.process == .running
    }

    /// The earliest deadline of an attached app's answer or of a started app's launch or stop.
    var nextDeadline: Timestamp? {
        var due = attachments.nextDeadline()
        if !launches.isEmpty, let launch = launches.nextDeadline(), due.map({ launch < $0 }) ?? true { due = launch }
        return due
    }
}
