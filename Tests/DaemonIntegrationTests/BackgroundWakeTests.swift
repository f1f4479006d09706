import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

/// Issue 36 item 5: scheduled background tasks (BGTaskScheduler) of a real app scened starts
/// itself, in a real cgroup: a frozen app is thawed for its task and frozen again (R34).
@Suite("Background tasks of real processes (R34)", .serialized)
struct BackgroundWakeTests {
    static let wakeMessageID = "8c1f4a7e25d94b0c9e3a6f5d2b71c084"

    /// "event cause" of each event of the process `pid`, from `name` on.
    static func briefs(_ app: WakeApp, pid: Int64? = nil, from name: String? = nil) -> [String] {
        let records = app.records.filter { pid == nil || $0["pid"]?.intValue == pid }
        let events = records.compactMap { $0["event"]?.objectValue.map(ObservedEvent.init) }
        let tail = name.map { n in Array(events.drop { $0.event != n }) } ?? events
        return tail.map { "\($0.event) \($0.cause)" }
    }

    /// "event cause" of the app's events in scened's event log, from the first (or the last)
    /// `name` on.
    static func logged(_ daemon: DaemonProcess, _ app: String, from name: String, last: Bool = false) throws -> [String] {
        let events = try StopSupport.events(daemon, since: 0).filter { $0.app == app }
        let start = (last ? events.lastIndex { $0.event == name } : events.firstIndex { $0.event == name }) ?? events.endIndex
        return events[start...].map { "\($0.event) \($0.cause)" }
    }

    @Test("a refresh task of a frozen app: thawed when it falls due, performBackgroundTask (cause background), completed, frozen again; one journal entry names it",
          .timeLimit(.minutes(3)))
    func refreshTaskThawsAndFreezes() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.refresher", flags: ["delay=1.5"])
        let journal = try JournalCapture(workspace)
        let daemon = try DaemonProcess(workspace, wrapper: journal.wrapper)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        let pid = try #require(try app.pid(daemon))

        // Due in 4 s; meanwhile the app goes home, is suspended (300 ms) and frozen.
        let begin = Wakes.wallMicroseconds() + 4_000_000
        try app.call("ScheduleBackgroundTask", ["identifier": "feed", "kind": "refresh", "earliestBegin": .int(begin)])
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)
        let waiting = try Wakes.listWork(daemon, app.app)["tasks"]?.arrayValue ?? []
        #expect(waiting.map { $0["identifier"]?.stringValue } == ["feed"], "\(waiting)")
        #expect(app.events("performBackgroundTask").isEmpty, "not before it falls due")

        // Falls due: thawed, handed the task; the app completes it 1.5 s later.
        try WakeApp.waitFrozen(cgroup, false, seconds: 15)
        let thawedAt = Wakes.wallMicroseconds()
        #expect(thawedAt >= begin - 100_000, "thawed \(Double(begin - thawedAt) / 1e3) ms before earliestBegin")
        let handed = try #require(try app.waitEvents("performBackgroundTask").first)
        #expect(handed.cause == "background")
        #expect(handed.object["kind"]?.stringValue == "refresh")
        #expect(handed.object["identifier"]?.stringValue == "feed")
        #expect(handed.state == "running")
        let deadline = handed.object["deadline"]?.intValue ?? 0
        #expect(abs(deadline - (handed.time + 30_000_000)) < 1_000_000, "the refresh budget (30 s): \(handed.object)")
        #expect(WakeApp.frozen(cgroup) == false, "thawed while the task runs")
        let during = try Wakes.listWork(daemon, app.app)
        #expect(during["tasks"]?.arrayValue?.isEmpty == true, "handed over: no longer scheduled \(during)")
        #expect(during["wakes"]?.arrayValue?.count == 1, "one open item: \(during)")

        // Completed: suspended (cause background) and frozen again; nothing left open.
        try WakeApp.waitFrozen(cgroup, true)
        // The app is frozen before it reads the reply and the suspended event: scened's log.
        let story = try Self.logged(daemon, app.app, from: "resumed")
        #expect(story == ["resumed background", "performBackgroundTask background", "suspended background"], "\(story)")
        let after = try Wakes.listWork(daemon, app.app)
        #expect(after["wakes"]?.arrayValue?.isEmpty == true && after["tasks"]?.arrayValue?.isEmpty == true, "\(after)")
        #expect(try app.pid(daemon) == pid, "the same process throughout")

        let entries = journal.entries(messageID: Self.wakeMessageID)
        #expect(entries.count == 1, "one backgroundWake entry: \(entries)")
        #expect(entries.first.map(JournalCapture.message)?.contains("feed") == true, "it names the task: \(entries)")
        #expect(entries.first?.contains("SCENED_WAKE=refresh:feed") == true, "\(entries)")
        try Wakes.assertConformant(daemon, "a refresh wake")
    }

    @Test("a task that is never completed: backgroundTaskWillExpire at its deadline, then after the grace the app is suspended and frozen, not killed",
          .timeLimit(.minutes(3)))
    func uncompletedTaskExpires() throws {
        let workspace = try Workspace(configuration: Wakes.configuration(background: "RefreshBudgetSec=2s"))
        let app = try WakeApp(workspace, app: "com.example.dawdler", flags: ["no-complete"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        let pid = try #require(try app.pid(daemon))
        try app.call("ScheduleBackgroundTask", ["identifier": "sync", "kind": "refresh",
                                                "earliestBegin": .int(Wakes.wallMicroseconds() + 2_000_000)])
        try daemon.call("Background", ["session": .string(session)])
        try WakeApp.waitFrozen(cgroup, true)

        let handed = try #require(try app.waitEvents("performBackgroundTask").first)
        let deadline = try #require(handed.object["deadline"]?.intValue)
        #expect(abs(deadline - handed.time - 2_000_000) < 200_000, "RefreshBudgetSec=2s: \(handed.object)")
        let expiry = try #require(try app.waitEvents("backgroundTaskWillExpire", seconds: 10).first)
        #expect(expiry.cause == "timer")
        #expect(expiry.object["identifier"]?.stringValue == "sync" && expiry.object["kind"]?.stringValue == "refresh",
                "names the task: \(expiry.object)")
        #expect(expiry.time >= deadline - 50_000 && expiry.time < deadline + 1_000_000,
                "at the deadline: \(Double(expiry.time - deadline) / 1e3) ms after it")
        // Suspended one grace later, and frozen before it may read that: scened's log.
        try StopSupport.waitFor("suspended after the grace", seconds: 10) {
            try StartedAppTests.app(daemon, app.app)["process"]?.stringValue == "suspended"
        }
        try WakeApp.waitFrozen(cgroup, true)
        let logged = try StopSupport.events(daemon, since: expiry.seq).filter { $0.app == app.app }
        #expect(logged.map { "\($0.event) \($0.cause)" } == ["backgroundTaskWillExpire timer", "suspended background"],
                "\(logged.map(\.description))")
        let suspended = try #require(logged.last)
        let grace = Double(suspended.time - expiry.time) / 1e6
        #expect(grace > 0.9 && grace < 2.0, "suspended one grace (1 s) after the expiration: \(grace) s")
        #expect(try app.pid(daemon) == pid && kill(pid, 0) == 0, "suspended, not killed (R34)")
        #expect(app.events("terminated").isEmpty)
        #expect(try StartedAppTests.app(daemon, app.app)["process"]?.stringValue == "suspended")
        #expect(try Wakes.listWork(daemon, app.app)["wakes"]?.arrayValue?.isEmpty == true, "the item is closed")
        try Wakes.assertConformant(daemon, "an expired task")
        print("uncompleted task: expiration \(Format.fixed(Double(expiry.time - deadline) / 1e3, 1)) ms after the deadline, "
              + "suspended \(Format.fixed(grace, 2)) s later")
    }

    @Test("a task submitted again while the app handles it: handed over again once the first is completed, then the app is frozen",
          .timeLimit(.minutes(3)))
    func resubmittedWhileHandled() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.again", flags: ["delay=1.5"])
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let session = try Wakes.foreground(daemon, app)
        let cgroup = try app.cgroup(daemon)
        try app.call("ScheduleBackgroundTask", ["identifier": "feed", "kind": "refresh",
                                                "earliestBegin": .int(Wakes.wallMicroseconds() + 1_500_000)])
        try daemon.call("Background", ["session": .string(session)])
        try app.waitEvents("performBackgroundTask")
        // While it is handled: the same identifier again, due now.
        try app.call("ScheduleBackgroundTask", ["identifier": "feed", "kind": "refresh"])
        let both = try app.waitEvents("performBackgroundTask", count: 2, seconds: 10)
        let firstDone = try #require(app.records.first { $0["reply_to"]?.stringValue == "CompleteBackgroundTask" })
        #expect(firstDone["reply"]?["error"] == nil, "the first completed: \(firstDone)")
        #expect(both.last!.time >= Int64((firstDone["t"]?.doubleValue ?? 0) * 1e6) - 50_000,
                "handed over again only after the first was completed")
        try WakeApp.waitFrozen(cgroup, true)
        // The first completion suspends the app (the engine counts no scheduled task as work
        // left) and the next plan resumes it for the second: both shapes are right here.
        let logged = try Self.logged(daemon, app.app, from: "resumed")
        #expect(logged.filter { $0.hasPrefix("performBackgroundTask") }.count == 2 && logged.last == "suspended background"
                && logged.allSatisfy { $0.hasSuffix(" background") }, "\(logged)")
        print("a task submitted again while handled: \(logged.joined(separator: ", "))")
        #expect(try Wakes.listWork(daemon, app.app)["tasks"]?.arrayValue?.isEmpty == true)
        try Wakes.assertConformant(daemon, "a task submitted again while handled")
    }

    @Test("a not-running app with ExecStart= and a task falling due: started, didFinishLaunching (cause background), performBackgroundTask, suspended after completing",
          .timeLimit(.minutes(3)))
    func notRunningAppIsStartedForItsTask() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.sleeper")
        let daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        _ = try Wakes.foreground(daemon, app)
        let first = try #require(try app.pid(daemon))
        try app.call("ScheduleBackgroundTask", ["identifier": "nightly", "kind": "refresh",
                                                "earliestBegin": .int(Wakes.wallMicroseconds() + 3_000_000)])
        try daemon.call("Terminate", ["app": .string(app.app)])
        try StopSupport.waitFor("the first process gone") { StopSupport.gone(first) }
        #expect(try StartedAppTests.app(daemon, app.app)["process"]?.stringValue == "notRunning")
        #expect(try Wakes.listWork(daemon, app.app)["tasks"]?.arrayValue?.count == 1, "the task outlives the process")

        try app.waitEvents("performBackgroundTask")
        let second = try #require(try app.pid(daemon))
        #expect(second != first, "a new process")
        let story = Self.briefs(app, pid: Int64(second))
        #expect(story.first == "didFinishLaunching background", "\(story)")
        #expect(story.contains("performBackgroundTask background"), "\(story)")
        let cgroup = try app.cgroup(daemon)
        try WakeApp.waitFrozen(cgroup, true)
        let done = try Self.logged(daemon, app.app, from: "didFinishLaunching", last: true)
        #expect(done == ["didFinishLaunching background", "performBackgroundTask background", "suspended background"], "\(done)")
        #expect(try Wakes.listWork(daemon, app.app)["tasks"]?.arrayValue?.isEmpty == true)
        try Wakes.assertConformant(daemon, "an app started for its task")
    }

    @Test("a task scheduled, then scened killed -9 and restarted on the same state: the task still runs, once",
          .timeLimit(.minutes(3)))
    func taskSurvivesAKilledDaemon() throws {
        let workspace = try Workspace(configuration: Wakes.configuration())
        let app = try WakeApp(workspace, app: "com.example.durable")
        var daemon = try DaemonProcess(workspace)
        _ = try Wakes.foreground(daemon, app)
        let first = try #require(try app.pid(daemon))
        try app.call("ScheduleBackgroundTask", ["identifier": "backup", "kind": "processing",
                                                "earliestBegin": .int(Wakes.wallMicroseconds() + 4_000_000)])
        daemon.crash()
        daemon = try DaemonProcess(workspace)
        defer { if daemon.child.isRunning { try? daemon.stop() } }
        let stored = try Wakes.listWork(daemon, app.app)["tasks"]?.arrayValue ?? []
        #expect(stored.map { $0["identifier"]?.stringValue } == ["backup"], "stored: \(stored)")
        #expect(stored.first?["kind"]?.stringValue == "processing")

        let handed = try app.waitEvents("performBackgroundTask", seconds: 20)
        #expect(handed.count == 1 && handed.first?.object["identifier"]?.stringValue == "backup", "\(handed)")
        let runner = try #require(try app.pid(daemon))
        #expect(runner != first, "the killed scened's process was ended; a new one ran the task")
        let cgroup = try app.cgroup(daemon)
        try WakeApp.waitFrozen(cgroup, true)
        sleepMilliseconds(1_000)
        #expect(app.events("performBackgroundTask").count == 1, "run once")
        let log = try StopSupport.events(daemon, since: 0).filter { $0.event == "performBackgroundTask" }
        #expect(log.count == 1, "one performBackgroundTask in the event log: \(log)")
    }
}
