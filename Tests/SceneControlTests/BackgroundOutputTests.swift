import Testing
import Varlink
@testable import SceneControl

/// What scenectl prints about background work (issue 36) for canned replies: the tables of
/// `tasks`, the columns of `apps` and `top`, the lines of `show-app` and `status`, and what a
/// command prints when it creates something.
@Suite struct BackgroundOutputTests {
    static let now = Fixtures.now

    /// Fixtures.apps with background work: mail declares two modes, one active, and has work.
    static var apps: JSONObject {
        var list = Fixtures.apps.objects("apps")
        list[0]["backgroundModes"] = ["audio", "voip"]
        list[0]["activeModes"] = ["audio"]
        list[0]["scheduledTasks"] = 2
        list[0]["pendingNotifications"] = 1
        list[0]["wakes"] = 1
        list[1]["backgroundModes"] = []
        list[1]["activeModes"] = []
        list[1]["scheduledTasks"] = 0
        list[1]["pendingNotifications"] = 0
        list[1]["wakes"] = 0
        return ["apps": .array(list.map { .object($0) })]
    }

    static let work: JSONObject = [
        "tasks": [
            ["app": "com.example.mail", "identifier": "mail.refresh", "kind": "refresh", "earliestBegin": .int(now + 600_000_000),
             "submittedAt": .int(now - 60_000_000)],
            ["app": "com.example.mail", "identifier": "mail.index", "kind": "processing", "earliestBegin": .int(now + 3_600_000_000),
             "submittedAt": .int(now - 60_000_000)],
        ],
        "notifications": [
            ["notification": "n12", "app": "com.example.mail", "priority": "high", "queuedAt": .int(now - 5_000_000), "size": 1536],
        ],
        "wakes": [
            ["app": "com.example.mail", "kind": "refresh", "identifier": "mail.sync", "seq": 1040, "began": .int(now - 10_000_000),
             "deadline": .int(now + 20_000_000), "expiring": false],
        ],
    ]

    static var replies: [String: [Result<JSONObject, VarlinkError>]] {
        ["ListApps": [.success(apps)], "ListBackgroundWork": [.success(work)]]
    }

    @Test func tasksListsScheduledWorkPendingNotificationsAndWakes() throws {
        let result = ctl(["tasks"], replies: Self.replies)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.calls.map(\.method) == ["io.scened.Manager.ListApps", "io.scened.Manager.ListBackgroundWork"])
        #expect(result.out == """
            TOKEN APP              SESSION NAME   BEGAN               EXPIRES
            t3    com.example.mail s2      upload 2024-11-29 16:39:51 2024-11-29 16:40:26

            1 task listed.

            APP              IDENTIFIER   KIND       EARLIEST BEGIN      SUBMITTED
            com.example.mail mail.refresh refresh    2024-11-29 16:50:01 2024-11-29 16:39:01
            com.example.mail mail.index   processing 2024-11-29 17:40:01 2024-11-29 16:39:01

            2 scheduled tasks listed.

            APP              NOTIFICATION PRIORITY SIZE QUEUED
            com.example.mail n12          high     1.5K 2024-11-29 16:39:56

            1 pending notification listed.

            APP              ITEM      KIND     SEQ BEGAN               DEADLINE            STATE
            com.example.mail mail.sync refresh 1040 2024-11-29 16:39:51 2024-11-29 16:40:21 open

            1 wake item listed.

            """, "\(result.out)")
        // Without a legend the rows only; a task token starts only the first table's rows.
        let bare = ctl(["tasks", "--no-legend"], replies: Self.replies)
        let first = bare.out.split(separator: "\n").map { String($0.split(separator: " ")[0]) }
        #expect(first == ["t3", "com.example.mail", "com.example.mail", "com.example.mail", "com.example.mail"], "\(bare.out)")

        let json = try JSONParser.parse(ctl(["tasks", "--json"], replies: Self.replies).out)
        #expect(json["tasks"]?[0]?["token"] == "t3")
        #expect(json["scheduled"]?.arrayValue?.count == 2 && json["notifications"]?[0]?["notification"] == "n12")
        #expect(json["wakes"]?[0]?["identifier"] == "mail.sync")
    }

    @Test func tasksWithoutBackgroundWorkAsksNothingMore() throws {
        var apps = Self.apps
        var list = apps.objects("apps")
        list[0]["scheduledTasks"] = 0
        list[0]["pendingNotifications"] = 0
        list[0]["wakes"] = 0
        apps["apps"] = .array(list.map { .object($0) })
        let result = ctl(["tasks", "--json"], replies: ["ListApps": [.success(apps)]])
        #expect(result.calls.map(\.method) == ["io.scened.Manager.ListApps"])
        let json = try JSONParser.parse(result.out)
        #expect(json["scheduled"] == [] && json["notifications"] == [] && json["wakes"] == [])
        // A daemon that fails ListBackgroundWork fails the command, with its message.
        let failed = ctl(["tasks"], replies: ["ListApps": [.success(Self.apps)],
                                              "ListBackgroundWork": [.failure(.methodNotFound("io.scened.Manager.ListBackgroundWork"))]])
        #expect(failed.status == 1 && failed.out.isEmpty && failed.err.contains("ListBackgroundWork"), "\(failed.err)")
    }

    @Test func appsShowModesAndWork() {
        let result = ctl(["apps"], replies: Self.replies)
        #expect(result.out == """
            APP               PROCESS    STATE  SESSIONS LIVE TASKS FOOTPRINT ATTACHED MODES       SCHED PENDING AWAKE
            com.example.mail  running    active        3    2     1    120.0M pid 4242 audio*,voip     2       1 1 item
            org.example.notes notRunning -             1    0     0        0B        - -               0       0 -

            2 apps listed.

            """, "\(result.out)")
        let app = Self.apps.objects("apps")[0]
        let shown = ctl(["show-app", "com.example.mail"], replies: ["GetApp": [.success(["app": .object(app)])]])
        #expect(shown.out.hasSuffix("""
                    Tasks: t3 "upload" (s2), expires Fri 2024-11-29 16:40:26 UTC; 25s left
                    Modes: audio* voip (* active)
               Background: 2 scheduled, 1 notification pending, awake (1 open item)

            """), "\(shown.out)")
        let notes = Self.apps.objects("apps")[1]
        let idle = ctl(["show-app", "org.example.notes"], replies: ["GetApp": [.success(["app": .object(notes)])]])
        #expect(idle.out.contains("Modes: none\n") && idle.out.contains("Background: 0 scheduled, 0 notifications pending, not awake\n"),
                "\(idle.out)")
    }

    @Test func statusAndTopShowBackgroundWork() throws {
        var status = Fixtures.status.object("status")!
        status["background"] = ["wakingApps": 1, "maxConcurrentWakes": 4, "scheduledTasks": 3, "pendingNotifications": 2,
                                 "nextDue": .int(Self.now + 600_000_000)]
        let shown = ctl(["status"], replies: ["GetStatus": [.success(["status": .object(status)])]])
        #expect(shown.out.contains("""
                    Tasks: 1 background
               Background: 1 app awake (at most 4), 3 scheduled, 2 notifications pending; next due Fri 2024-11-29 16:50:01 UTC; 10min left
            """), "\(shown.out)")

        var replies = TopTests.replies
        replies["GetStatus"] = [.success(["status": .object(status)])]
        replies["ListApps"] = [.success(Self.apps)]
        let top = ctl(["top"], replies: replies)
        #expect(top.status == 0, "\(top.err)")
        let lines = top.out.split(separator: "\n").map(String.init)
        #expect(lines[2] == "Wakes:    1 app awake (at most 4), 3 scheduled, 2 notifications pending", "\(top.out)")
        // Last, so that 80 columns clip the modes rather than the footprint.
        #expect(lines.contains("APP               PROCESS    STATE  SESSIONS LIVE TASKS FOOTPRINT BACKGROUND"), "\(top.out)")
        #expect(lines.contains("com.example.mail  running    active        3    2     1    120.0M audio*,voip aw"), "\(top.out)")
        #expect(lines.allSatisfy { $0.count <= 80 })
    }

    @Test func wakeEventsHaveTheirDetail() {
        let task: JSONObject = ["seq": 20, "event": "performBackgroundTask", "kind": "refresh", "identifier": "mail.refresh",
                                "deadline": .int(Self.now)]
        #expect(EventTable.detail(task) == "refresh task mail.refresh")
        let expiring: JSONObject = ["seq": 21, "event": "backgroundTaskWillExpire", "kind": "processing", "identifier": "mail.index"]
        #expect(EventTable.detail(expiring) == "processing task mail.index")
        let note: JSONObject = ["seq": 22, "event": "didReceiveNotification", "kind": "notification", "notification": "n3",
                                "payload": ["text": "hi"]]
        #expect(EventTable.detail(note) == "notification n3 {\"text\":\"hi\"}")
        let withheld: JSONObject = ["seq": 22, "event": "didReceiveNotification", "kind": "notification", "notification": "n3"]
        #expect(EventTable.detail(withheld) == "notification n3")
        let long: JSONObject = ["kind": "notification", "notification": "n4", "payload": ["text": .string(String(repeating: "x", count: 200))]]
        #expect(EventTable.detail(long).hasSuffix("...") && EventTable.detail(long).count == "notification n4 ".count + 80)
        #expect(EventTable.detail(["seq": 1, "event": "didBecomeActive"]) == "")
    }

    @Test func notifyPrintsTheIdAndScheduleIsQuiet() {
        let notified = ctl(["notify", "com.example.mail", "{\"text\":\"hi\"}"], replies: ["Notify": [.success(["notification": "n12"])]])
        #expect(notified.status == 0 && notified.out == "n12\n", "\(notified.err)")
        #expect(ctl(["notify", "com.example.mail", "{}", "--json"], replies: ["Notify": [.success(["notification": "n12"])]]).out
            == "{\"notification\":\"n12\"}\n")
        #expect(ctl(["-q", "notify", "com.example.mail", "{}"], replies: ["Notify": [.success(["notification": "n12"])]]).out.isEmpty)
        let scheduled = ctl(["schedule", "com.example.mail", "mail.refresh"])
        #expect(scheduled.status == 0 && scheduled.out.isEmpty && scheduled.err.isEmpty)
    }
}
