import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore
import SystemdKit

@Suite("Journal entries: one per state change")
struct JournalEntriesTests {
    @Test("cold connect: an app-launched entry, then a session-connected entry")
    func coldConnect() throws {
        var d = Driver()
        let (s, events) = try d.connect(mail)
        #expect(events.map(\.name) == [.didFinishLaunching, .configurationForConnecting, .willConnectTo,
                                       .willEnterForeground, .didBecomeActive])
        let e = entries(events, pressure: .warning)
        try #require(e.count == 2)
        #expect(e[0].messageID == MessageID.appLaunched)
        #expect(e[0].priority == .info)
        #expect(e[0].message == "App com.example.mail launched (didFinishLaunching).")
        #expect(e[0].values("SCENED_EVENT") == ["didFinishLaunching"])
        #expect(e[0].values("SCENED_SESSION").isEmpty)
        #expect(e[0].values("SCENED_STATE") == ["running"])

        #expect(e[1].messageID == MessageID.sessionConnected)
        #expect(e[1].priority == .info)
        #expect(e[1].message == "Session \(s) of com.example.mail connected, foregroundActive (configurationForConnecting, willConnectTo, willEnterForeground, didBecomeActive).")
        #expect(e[1].values("SCENED_APP") == ["com.example.mail"])
        #expect(e[1].values("SCENED_SESSION") == [s.description])
        #expect(e[1].values("SCENED_EVENT") == ["configurationForConnecting", "willConnectTo", "willEnterForeground", "didBecomeActive"])
        #expect(e[1].values("SCENED_EVENTS") == ["configurationForConnecting willConnectTo willEnterForeground didBecomeActive"])
        #expect(e[1].values("SCENED_SEQ") == events.dropFirst().map { String($0.seq) })
        #expect(e[1].values("SCENED_STATE") == ["foregroundActive"])
        #expect(e[1].values("SCENED_APP_STATE") == ["active"])
        #expect(e[1].values("SCENED_CAUSE") == ["request"])
        #expect(e[1].values("SCENED_PRESSURE") == ["warning"])
    }

    @Test("background: one entry with willResignActive and didEnterBackground in order")
    func background() throws {
        var d = Driver()
        let (s, _) = try d.connect(mail)
        let events = try d.run(.background(s))
        let e = entries(events)
        try #require(e.count == 1)
        #expect(e[0].messageID == MessageID.sessionStateChanged)
        #expect(e[0].priority == .info)
        #expect(e[0].values("SCENED_EVENT") == ["willResignActive", "didEnterBackground"])
        #expect(e[0].values("SCENED_EVENTS") == ["willResignActive didEnterBackground"])
        #expect(e[0].values("SCENED_SEQ") == events.map { String($0.seq) })
        #expect(e[0].values("SCENED_SESSION") == [s.description])
        #expect(e[0].values("SCENED_STATE") == ["background"])
        #expect(e[0].message == "Session \(s) of com.example.mail is background (willResignActive, didEnterBackground).")
    }

    @Test("discard while running: one session-discarded entry")
    func discardWhileRunning() throws {
        var d = Driver()
        let (s, _) = try d.connect(mail)
        let events = try d.run(.discard(s))
        let e = entries(events)
        try #require(e.count == 1)
        #expect(e[0].messageID == MessageID.sessionDiscarded)
        #expect(e[0].values("SCENED_EVENTS") == ["willResignActive didEnterBackground didDisconnect didDiscardSceneSessions"])
        #expect(e[0].values("SCENED_SESSION") == [s.description])
        #expect(e[0].message.hasPrefix("Session \(s) of com.example.mail discarded"))
    }

    @Test("disconnect, reconnect, suspension: their own kinds of entry")
    func otherKinds() throws {
        var d = Driver()
        let (s, _) = try d.connect(mail)
        let disconnected = entries(try d.run(.disconnect(s)))
        #expect(disconnected.map(\.messageID) == [MessageID.sessionDisconnected])
        #expect(disconnected.first?.values("SCENED_EVENTS") == ["willResignActive didEnterBackground didDisconnect"])

        d.advance(seconds: 10)
        // Idle in the background past SuspendDelaySec: suspended by the timer.
        let suspended = entries(try d.run(.tick))
        #expect(suspended.map(\.messageID) == [MessageID.appSuspendedResumed])
        #expect(suspended.first?.message == "App com.example.mail suspended.")
        #expect(suspended.first?.values("SCENED_CAUSE") == ["timer"])

        // Reconnecting resumes the app first: two changes, two entries.
        let back = entries(try d.run(.activate(s)))
        #expect(back.map(\.messageID) == [MessageID.appSuspendedResumed, MessageID.sessionReconnected])
        #expect(back.last?.values("SCENED_EVENTS") == ["willConnectTo willEnterForeground didBecomeActive"])
        #expect(back.last?.message == "Session \(s) of com.example.mail reconnected with no saved state, foregroundActive (willConnectTo, willEnterForeground, didBecomeActive).")

        // With state-restoration data saved, the sentence says it was handed back.
        _ = try d.run(.saveState(s, .json("{\"scroll\":1}")))
        _ = try d.run(.disconnect(s))
        let restored = entries(try d.run(.activate(s)))
        #expect(restored.last?.message == "Session \(s) of com.example.mail reconnected with its saved state, foregroundActive (willConnectTo, willEnterForeground, didBecomeActive).")
    }

    @Test("termination: one entry naming every archived session")
    func termination() throws {
        var d = Driver()
        let (s1, _) = try d.connect(mail)
        let (s2, _) = try d.connect(mail, background: true)
        let (s3, _) = try d.connect(maps)
        // In the background first: terminating a foreground app adds its background chain (R33).
        _ = try d.run(.background(s1))
        let events = try d.run(.terminate(mail))
        #expect(events.map(\.name) == [.willTerminate, .terminated])
        let e = entries(events)
        try #require(e.count == 1)
        #expect(e[0].messageID == MessageID.appTerminated)
        #expect(e[0].priority == .notice)
        #expect(e[0].values("SCENED_SESSION") == [s1.description, s2.description])
        #expect(!e[0].values("SCENED_SESSION").contains(s3.description))
        #expect(e[0].values("SCENED_EVENTS") == ["willTerminate terminated"])
        #expect(e[0].values("SCENED_STATE") == ["notRunning"])
        #expect(e[0].message == "App com.example.mail terminated (requested); 2 sessions archived after willTerminate.")
    }

    @Test("reclaim actions: MESSAGE_ID reclaimAction with the policy's reason and usage")
    func reclaim() throws {
        var d = Driver()
        let (s1, _) = try d.connect(mail, background: true)
        let (s2, _) = try d.connect(mail, background: true)
        let disconnect = entries(try d.run(.disconnect(s1, cause: .reclaim(reclaimNote))), pressure: .warning)
        try #require(disconnect.count == 1)
        let e = disconnect[0]
        #expect(e.messageID == MessageID.reclaimAction)
        #expect(e.priority == .notice)
        #expect(e.values("SCENED_CAUSE") == ["reclaim"])
        #expect(e.values("SCENED_EVENTS") == ["didDisconnect"])
        #expect(e.values("SCENED_RECLAIM_REASON") == [reclaimNote.reason])
        #expect(e.values("SCENED_USAGE_BEFORE") == [String(9 << 30)])
        #expect(e.values("SCENED_USAGE_AFTER") == [String(7 << 30)])
        #expect(e.values("SCENED_BUDGET") == [String(8 << 30)])
        #expect(e.values("SCENED_SCORE") == ["0.25"])
        #expect(e.values("SCENED_PRESSURE") == ["warning"])
        #expect(e.message == "Reclaim at warning pressure: session \(s1) of com.example.mail disconnected; session kept (didDisconnect). Reason: oldest background scene, restore cost 500 ms; usage 9.0G → 7.0G of 8.0G.")

        let suspend = entries(try d.run(.suspend(mail, cause: .reclaim(reclaimNote))))
        #expect(suspend.map(\.messageID) == [MessageID.reclaimAction])
        #expect(suspend.first?.values("SCENED_EVENTS") == ["suspended"])

        let terminate = entries(try d.run(.terminate(mail, cause: .reclaim(reclaimNote))))
        #expect(terminate.map(\.messageID) == [MessageID.reclaimAction])
        #expect(terminate.first?.values("SCENED_SESSION") == [s2.description])
        #expect(terminate.first?.message.contains("terminated (memoryPressure)") == true)
    }

    @Test("discards queued while the app was not running are part of its launch entry", arguments: [1, 2])
    func pendingDiscardsAtLaunch(count: Int) throws {
        var d = Driver()
        var sessions: [SessionID] = []
        for _ in 0..<3 { sessions.append(try d.connect(mail).0) }
        try d.run(.terminate(mail))
        for s in sessions.prefix(count) { #expect(try d.run(.discard(s)).isEmpty) }
        let events = try d.run(.launch(mail))
        #expect(events.map(\.name) == [.didFinishLaunching, .didDiscardSceneSessions])
        let e = entries(events)
        try #require(e.count == 1)
        #expect(e[0].messageID == MessageID.appLaunched)
        #expect(e[0].values("SCENED_SESSION") == sessions.prefix(count).map(\.description))
        #expect(e[0].values("SCENED_EVENTS") == ["didFinishLaunching didDiscardSceneSessions"])
        let plural = count == 1 ? "" : "s"
        #expect(e[0].message == "App com.example.mail launched, told of \(count) discarded session\(plural) (didFinishLaunching, didDiscardSceneSessions).")
    }

    @Test("app changes in one batch stay apart: warning, termination, relaunch")
    func appChangesInOneBatch() throws {
        var d = Driver()
        var batch: [LifecycleEvent] = []
        let (s1, first) = try d.connect(mail)
        batch += first
        batch += try d.run(.memoryWarning(apps: [mail]))
        batch += try d.run(.terminate(mail))
        batch += try d.run(.launch(mail))
        batch += try d.run(.activate(s1))
        let e = entries(batch)
        // R33: the foreground scene's background chain is its own entry, before the termination's.
        #expect(e.map(\.messageID) == [MessageID.appLaunched, MessageID.sessionConnected, MessageID.memoryWarning,
                                       MessageID.sessionStateChanged, MessageID.appTerminated, MessageID.appLaunched,
                                       MessageID.sessionReconnected])
        #expect(e.map { $0.values("SCENED_EVENTS").first ?? "" } == [
            "didFinishLaunching", "configurationForConnecting willConnectTo willEnterForeground didBecomeActive",
            "didReceiveMemoryWarning", "willResignActive didEnterBackground", "willTerminate terminated", "didFinishLaunching",
            "willConnectTo willEnterForeground didBecomeActive",
        ])
        // Every event is in exactly one entry.
        #expect(e.flatMap { $0.values("SCENED_SEQ") } == batch.map { String($0.seq) })
    }

    @Test("one session's changes in one batch stay apart")
    func sessionChangesInOneBatch() throws {
        var d = Driver()
        let (s, first) = try d.connect(mail)
        var batch = first
        batch += try d.run(.background(s))
        batch += try d.run(.activate(s))
        batch += try d.run(.deactivate(s))
        batch += try d.run(.activate(s))
        batch += try d.run(.disconnect(s))
        batch += try d.run(.activate(s))
        batch += try d.run(.discard(s))
        let e = entries(batch)
        #expect(e.map { $0.values("SCENED_EVENTS").first ?? "" } == [
            "didFinishLaunching", "configurationForConnecting willConnectTo willEnterForeground didBecomeActive",
            "willResignActive didEnterBackground", "willEnterForeground didBecomeActive",
            "willResignActive", "didBecomeActive",
            "willResignActive didEnterBackground didDisconnect", "willConnectTo willEnterForeground didBecomeActive",
            "willResignActive didEnterBackground didDisconnect didDiscardSceneSessions",
        ])
        #expect(e.map(\.messageID) == [MessageID.appLaunched, MessageID.sessionConnected, MessageID.sessionStateChanged,
                                       MessageID.sessionStateChanged, MessageID.sessionStateChanged,
                                       MessageID.sessionStateChanged, MessageID.sessionDisconnected,
                                       MessageID.sessionReconnected, MessageID.sessionDiscarded])
        #expect(e.flatMap { $0.values("SCENED_SEQ") } == batch.map { String($0.seq) })
    }

    @Test("a memory warning to several apps: one entry per app")
    func memoryWarnings() throws {
        var d = Driver()
        try d.run(.launch(notes))
        try d.run(.launch(mail))
        try d.run(.launch(maps))
        let events = try d.run(.memoryWarning(apps: nil))
        #expect(events.count == 3)
        let e = entries(events)
        #expect(e.map(\.messageID) == Array(repeating: MessageID.memoryWarning, count: 3))
        #expect(e.map { $0.values("SCENED_APP") } == [["com.example.mail"], ["com.example.maps"], ["com.example.notes"]])
        #expect(e.allSatisfy { $0.priority == .notice && $0.values("SCENED_EVENTS") == ["didReceiveMemoryWarning"] })
    }

    @Test("an expiring background task")
    func taskExpiring() throws {
        var d = Driver()
        let (s, _) = try d.connect(mail)
        try d.run(.beginTask(BeginTaskRequest(session: s, name: "upload")))
        try d.run(.background(s))
        d.advance(seconds: 31)
        let e = entries(try d.run(.tick))
        #expect(e.map(\.messageID) == [MessageID.taskExpiring])
        #expect(e.first?.priority == .notice)
        #expect(e.first?.message.hasSuffix("(upload) of com.example.mail is expiring.") == true)
    }

    @Test("one entry per wake, naming each task and notification handed over (R34)")
    func wakeEntry() throws {
        var d = Driver()
        try d.run(.launch(notes))
        try d.run(.suspend(notes, cause: .timer))
        try d.run(.scheduleTask(ScheduledTask(app: notes, identifier: "feed", kind: .refresh, earliestBegin: d.now,
                                              submittedAt: d.now)))
        var effects: [Effect] = []
        guard case .notification(let n) = try d.engine.handle(
            .queueNotification(app: notes, payload: "{}", priority: .normal), now: d.now, effects: &effects) else {
            throw TestFailure("no notification id")
        }
        let e = entries(try d.run(.wake(WakeRequest(app: notes, tasks: ["feed"], notifications: [n]))))
        #expect(e.map(\.messageID) == [MessageID.backgroundWake])
        #expect(e.first?.message == "App com.example.notes woken for background work (thawed): refresh task feed, notification \(n).")
        #expect(e.first?.values("SCENED_WAKE") == ["refresh:feed", "notification:\(n)"])
        #expect(e.first?.values("SCENED_EVENTS") == ["resumed performBackgroundTask didReceiveNotification"])
    }

    @Test("MESSAGE_IDs: 32 lowercase hex digits, distinct, each explained in systemd/scened.catalog")
    func messageIDs() throws {
        let declared = try declaredMessageIDs()
        let listed = [
            MessageID.sessionConnected, MessageID.sessionReconnected, MessageID.sessionStateChanged,
            MessageID.sessionDisconnected, MessageID.sessionDiscarded, MessageID.appLaunched,
            MessageID.appSuspendedResumed, MessageID.appTerminated, MessageID.memoryWarning, MessageID.taskExpiring,
            MessageID.reclaimAction, MessageID.pressureChanged, MessageID.pressureUnrelievable, MessageID.daemonReady,
            MessageID.daemonStopped, MessageID.configurationReload, MessageID.storageFailure, MessageID.clientLimit,
            MessageID.permissionDenied, MessageID.appAttachment, MessageID.appDeadlineMissed, MessageID.appProcess, MessageID.rowQuarantined, MessageID.logDamaged, MessageID.logRecovered,
            MessageID.systemStop, MessageID.systemFollow, MessageID.systemHold, MessageID.backgroundWake, MessageID.routedOpen,
        ]
        #expect(declared.map(\.value) == listed, "update the list here when MessageID gains a value")
        for (name, id) in declared {
            #expect(id.utf8.count == 32 && id.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) },
                    "MessageID.\(name) = \(id)")
        }
        #expect(Set(listed).count == listed.count)

        let catalog = try readExistingTextFile(repositoryRoot + "/systemd/scened.catalog")
        let catalogIDs = catalog.split(separator: "\n").filter { $0.hasPrefix("-- ") }.map { String($0.dropFirst(3)) }
        for (name, id) in declared { #expect(catalogIDs.contains(id), "MessageID.\(name) (\(id)) has no catalog entry") }
        #expect(Set(catalogIDs) == Set(listed), "catalog entries without a MessageID: \(Set(catalogIDs).subtracting(listed))")
        #expect(catalogIDs.count == Set(catalogIDs).count)
        // scenectl status points at the quarantine entries by their id.
        let status = try readExistingTextFile(repositoryRoot + "/Sources/SceneControl/Verbs+Status.swift")
        #expect(status.contains("\"\(MessageID.rowQuarantined)\""), "scenectl status names another MESSAGE_ID")
    }

    @Test("every field name is one journald keeps, and ours")
    func fieldNames() throws {
        var d = Driver()
        var all: [LifecycleEvent] = []
        let (s1, e1) = try d.connect(mail)
        all += e1
        let (s2, e2) = try d.connect(maps, background: true)
        all += e2
        all += try d.run(.background(s1))
        all += try d.run(.disconnect(s2, cause: .reclaim(reclaimNote)))
        all += try d.run(.memoryWarning(apps: nil))
        all += try d.run(.discard(s1, cause: .cap("MaxSessions=1")))
        all += try d.run(.terminate(maps))
        let produced = entries(all)
        #expect(produced.count >= 6)
        var names = Set<String>()
        for entry in produced { for (name, _) in entry.fields { names.insert(name) } }
        #expect(names.isSuperset(of: ["SCENED_APP", "SCENED_SESSION", "SCENED_EVENT", "SCENED_EVENTS", "SCENED_SEQ",
                                      "SCENED_STATE", "SCENED_PRESSURE", "SCENED_RECLAIM_REASON", "SCENED_CAP"]))
        for name in names {
            #expect(JournalField.isValidName(name), "\(name) would be dropped by journald")
            #expect(name.hasPrefix("SCENED_"), "\(name) is not one of ours")
        }
        for name in ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID"] { #expect(JournalField.isValidName(name)) }
    }
}
