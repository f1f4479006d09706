import Testing
import Varlink
@testable import SceneControl

/// What the reading verbs print for canned replies (UTC, at `testNow` = 16:40:01).
@Suite struct VerbOutputTests {
    @Test func statusBlock() {
        let result = ctl(["status"], replies: ["GetStatus": [.success(Fixtures.status)]])
        #expect(result.status == 0)
        #expect(result.out == """
            ● scened - scene session daemon
                Version: 0.1.0
                 Active: running since Fri 2024-11-29 15:38:01 UTC; 1h 2min ago
               Main PID: 1234
                 Socket: /run/scened/io.scened.Manager
                   Apps: 3 (2 running, 1 suspended)
               Sessions: 10 (7 live, 3 archived)
                 Scenes: 2 foreground-active
                  Tasks: 1 background
               Next seq: 1042
                Clients: 1

            """)
        #expect(ctl(["status", "--json"], replies: ["GetStatus": [.success(Fixtures.status)]]).out
            == JSONValue.object(Fixtures.status).serializedString() + "\n")
    }

    @Test func statusWithMemoryAndConfiguration() {
        var status = Fixtures.status.object("status")!
        status["pressure"] = "warning"
        status["usage"] = 943_718_400
        status["budget"] = 1_073_741_824
        status["configFiles"] = ["/etc/scened/scened.conf", "/etc/scened/scened.conf.d/10-budget.conf"]
        let result = ctl(["status"], replies: ["GetStatus": [.success(["status": .object(status)])]])
        #expect(result.out.contains("""
                  Tasks: 1 background
                 Memory: 900.0M of 1.0G budget, pressure warning
                 Config: /etc/scened/scened.conf
                         /etc/scened/scened.conf.d/10-budget.conf
               Next seq: 1042
            """))
        status["configFiles"] = []
        #expect(ctl(["status"], replies: ["GetStatus": [.success(["status": .object(status)])]]).out.contains("Config: built-in defaults\n"))
    }

    @Test func statusShowsQuarantinedRowsOnlyWhenThereAreSome() {
        var status = Fixtures.status.object("status")!
        status["quarantined"] = 2
        let shown = ctl(["status"], replies: ["GetStatus": [.success(["status": .object(status)])]]).out
        #expect(shown.contains("""
                     Tasks: 1 background
               Quarantined: 2 stored rows (damaged on disk; journalctl -u scened MESSAGE_ID=11e83c9298ac403eae2cbba03cc7edd1)
                  Next seq: 1042
            """), "\(shown)")
        status["quarantined"] = 1
        #expect(ctl(["status"], replies: ["GetStatus": [.success(["status": .object(status)])]]).out
            .contains("Quarantined: 1 stored row (damaged on disk;"))
        status["quarantined"] = 0
        #expect(!ctl(["status"], replies: ["GetStatus": [.success(["status": .object(status)])]]).out.contains("Quarantined"))
    }

    @Test func listTable() {
        let sessions: JSONObject = ["sessions": [
            .object(Fixtures.session("s1")),
            .object(Fixtures.session("s12", app: "org.example.notes", condition: "archived", state: "unattached",
                                     footprint: 1536, lastActive: 0)),
        ]]
        let result = ctl(["list"], replies: ["ListSessions": [.success(sessions)]])
        #expect(result.out == """
            SESSION APP               CONDITION STATE            ROLE              FOOTPRINT LAST ACTIVE
            s1      com.example.mail  live      foregroundActive windowApplication     50.0M 2024-11-29 16:35:01
            s12     org.example.notes archived  unattached       windowApplication      1.5K -

            2 sessions listed.

            """)
        let bare = ctl(["list", "--no-legend"], replies: ["ListSessions": [.success(sessions)]])
        #expect(bare.out.split(separator: "\n").count == 2)
        #expect(bare.out.hasPrefix("s1 "))
    }

    @Test func listGathersEveryBatch() throws {
        let batches: [Result<JSONObject, VarlinkError>] = (0..<3).map { batch in
            .success(["sessions": .array((0..<4).map { .object(Fixtures.session("s\(batch * 4 + $0 + 1)")) })])
        }
        let result = ctl(["list", "--no-legend"], replies: ["ListSessions": batches])
        #expect(result.out.split(separator: "\n").map { $0.split(separator: " ")[0] } == (1...12).map { "s\($0)"[...] })
        let json = ctl(["list", "--json"], replies: ["ListSessions": batches])
        let parsed = try JSONParser.parse(json.out)
        #expect(parsed["sessions"]?.arrayValue?.count == 12)
        #expect(json.out.split(separator: "\n").count == 1)
    }

    @Test func showBlock() {
        var session = Fixtures.session("s42", state: "background")
        session["backgroundSince"] = .int(Fixtures.now - 120_000_000)
        session["restoration"] = ["json": ["scroll": 120]]
        session["protected"] = true
        session["restoreCostMs"] = 250
        let result = ctl(["show", "s42", "-n", "0"], replies: ["GetSession": [.success(["session": .object(session)])]])
        #expect(result.status == 0)
        #expect(result.out == """
            ● s42 - com.example.mail
                   Condition: live
                       State: background since Fri 2024-11-29 16:38:01 UTC; 2min 0s ago
                        Role: windowApplication
               Configuration: Default Configuration
                       Scene: instance 2
                   Footprint: 50.0M (52428800 bytes)
                   Protected: yes
                Restore cost: 250ms
                     Created: Fri 2024-11-29 15:40:01 UTC; 1h 0min ago
                 Last active: Fri 2024-11-29 16:35:01 UTC; 5min ago
                 Activations: 3
                    Restores: 1
                   User info: {"draft":12}
                 Restoration: {"scroll":120}

            """)
        let archived = Fixtures.session("s7", condition: "archived", state: "unattached", lastActive: 0)
        let other = ctl(["show", "s7", "-n", "0"], replies: ["GetSession": [.success(["session": .object(archived)])]])
        #expect(other.out.hasPrefix("○ s7 - com.example.mail\n"))
        #expect(other.out.contains("Last active: never\n"))
        #expect(other.out.contains("Scene: none (last instance 2)\n"))
        #expect(other.out.contains("Restoration: none\n"))
        #expect(Verb.restorationSummary(["base64": "AAEC/w=="]) == "binary, 4B")
        let big: JSONObject = ["json": .object(["text": .string(String(repeating: "x", count: 300))])]
        #expect(Verb.restorationSummary(big) == "JSON, 311B")
        var chatty = Fixtures.session("s8")
        chatty["userInfo"] = .object(["text": .string(String(repeating: "y", count: 2000))])
        let long = ctl(["show", "s8", "-n", "0"], replies: ["GetSession": [.success(["session": .object(chatty)])]])
        #expect(long.out.contains("User info: JSON, 1.9K\n"), "\(long.out)")
    }

    @Test func appsTableAndShowApp() {
        let result = ctl(["apps"], replies: ["ListApps": [.success(Fixtures.apps)]])
        #expect(result.out == """
            APP               PROCESS    STATE  SESSIONS LIVE TASKS FOOTPRINT ATTACHED
            com.example.mail  running    active        3    2     1    120.0M pid 4242
            org.example.notes notRunning -             1    0     0        0B        -

            2 apps listed.

            """)
        let app = Fixtures.apps.objects("apps")[0]
        let shown = ctl(["show-app", "com.example.mail"], replies: ["GetApp": [.success(["app": .object(app)])]])
        #expect(shown.out == """
            ● com.example.mail
                 Process: running since Fri 2024-11-29 14:40:01 UTC; 2h 0min ago
                Attached: pid 4242
                   State: active
                Launches: 1
                Sessions: 3 (2 live)
                  Scenes: 1 foreground-active, 0 foreground-inactive, 1 background
               Footprint: 120.0M (process 20.0M, scenes 100.0M)
                   Tasks: t3 "upload" (s2), expires Fri 2024-11-29 16:40:26 UTC; 25s left

            """)
        let notes = Fixtures.apps.objects("apps")[1]
        let stopped = ctl(["show-app", "org.example.notes"], replies: ["GetApp": [.success(["app": .object(notes)])]])
        #expect(stopped.out.hasPrefix("○ org.example.notes\n            Process: notRunning\n"))
        #expect(stopped.out.contains("State: - (not running)\n"))
        #expect(stopped.out.contains("Attached: no process attached\n"))
        #expect(stopped.out.contains("Pending discards: s9\n"))
        #expect(stopped.out.contains("Tasks: none\n"))
    }

    @Test func tasksTable() throws {
        let result = ctl(["tasks"], replies: ["ListApps": [.success(Fixtures.apps)]])
        #expect(result.out == """
            TOKEN APP              SESSION NAME   BEGAN               EXPIRES
            t3    com.example.mail s2      upload 2024-11-29 16:39:51 2024-11-29 16:40:26

            1 task listed.

            """)
        let json = try JSONParser.parse(ctl(["tasks", "--json"], replies: ["ListApps": [.success(Fixtures.apps)]]).out)
        #expect(json["tasks"]?[0]?["token"] == "t3")
    }
}

@Suite struct EventDetailTests {
    @Test func detailsShowRestoredStateTasksAndReasons() {
        let restored: JSONObject = ["seq": 13, "event": "willConnectTo", "app": "com.example.mail", "session": "s1",
                                    "state": "unattached", "reconnect": true, "restoration": ["json": ["mailbox": "Inbox"]]]
        #expect(EventTable.detail(restored) == "restored {\"mailbox\":\"Inbox\"}")
        let fresh: JSONObject = ["seq": 3, "event": "willConnectTo", "reconnect": false]
        #expect(EventTable.detail(fresh) == "")
        let empty: JSONObject = ["seq": 3, "event": "willConnectTo", "reconnect": true]
        #expect(EventTable.detail(empty) == "reconnected, no saved state")
        let task: JSONObject = ["seq": 9, "event": "backgroundTaskWillExpire", "task": "t2", "taskName": "upload"]
        #expect(EventTable.detail(task) == "task t2 (upload)")
        let reclaim: JSONObject = ["seq": 30, "event": "didDisconnect", "reclaim": ["reason": "background scene", "level": "warning"]]
        #expect(EventTable.detail(reclaim) == "reclaim: background scene at warning")
        let table = EventTable.table([restored, fresh]).render(legend: true)
        #expect(table.split(separator: "\n").first?.hasSuffix("DETAIL") == true)
        let plain = EventTable.table([fresh]).render(legend: true)
        #expect(!plain.contains("DETAIL"))
    }
}
