import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore
import SystemdKit

@Suite("JournalLogger level filtering")
struct JournalLoggerTests {
    /// A run with routine changes (info) and notable ones (notice).
    private static func mixedEvents() throws -> [LifecycleEvent] {
        var d = Driver()
        var all: [LifecycleEvent] = []
        let (s1, e1) = try d.connect(mail)
        all += e1
        let (s2, e2) = try d.connect(maps, background: true)
        all += e2
        all += try d.run(.background(s1))
        all += try d.run(.memoryWarning(apps: nil))
        all += try d.run(.disconnect(s2, cause: .reclaim(reclaimNote)))
        all += try d.run(.activate(s1))
        all += try d.run(.terminate(mail))
        // Relaunched and terminated again in the same batch: a second, separate termination.
        all += try d.connect(mail).1
        all += try d.run(.terminate(mail))
        return all
    }

    private static func logged(at level: LogLevel, _ events: [LifecycleEvent]) -> (entries: [LogEntry], sent: UInt64) {
        let logger = JournalLogger(level: level, destination: .memory)
        logger.log(events, pressure: .warning)
        return (logger.kept, logger.sent)
    }

    @Test("entries held for a batch take their place among its changes; older batches' first")
    func heldEntriesKeepTheirPlace() throws {
        var d = Driver()
        let (s1, connect) = try d.connect(mail)
        let background = try d.run(.background(s1))
        let warning = try d.run(.memoryWarning(apps: nil))
        let logger = JournalLogger(level: .info, destination: .memory)
        var captured: [String] { logger.kept.map(\.message) }
        // Held for batch 2 (settled with no events), and for batch 3 after its first two commands.
        logger.daemon(batch: 2, position: 0, .info, "x", "held for 2")
        logger.daemon(batch: 3, position: connect.count + background.count, .notice, "x", "pressure changed")
        logger.daemon(batch: 3, position: .max, .warning, "x", "at the end")
        logger.daemon(batch: 4, position: 0, .info, "x", "not yet")
        logger.daemon(batch: 3, position: 0, .debug, "x", "below the level")
        let events = connect + background + warning
        logger.log(batch: 3, events, commandStarts: [0, connect.count, connect.count + background.count], pressure: .warning)
        #expect(captured == [
            "held for 2",
            "App com.example.mail launched (didFinishLaunching).",
            "Session s1 of com.example.mail connected, foregroundActive (configurationForConnecting, willConnectTo, willEnterForeground, didBecomeActive).",
            "Session s1 of com.example.mail is background (willResignActive, didEnterBackground).",
            "pressure changed",
            "App com.example.mail received a memory warning.",
            "at the end",
        ], "\(captured)")
        logger.release(through: 4)
        #expect(captured.last == "not yet")
    }

    @Test("info and debug log every change")
    func infoLogsAll() throws {
        let events = try Self.mixedEvents()
        let all = JournalEntries.entries(for: events, pressure: .warning)
        for level in [LogLevel.info, .debug] {
            let (got, sent) = Self.logged(at: level, events)
            #expect(got == all)
            #expect(sent == UInt64(all.count))
        }
        #expect(all.contains { $0.priority == .info })
    }

    @Test("LogLevel=notice logs only the notable entries, the same ones info would have logged")
    func noticeLogsNotable() throws {
        let events = try Self.mixedEvents()
        let all = JournalEntries.entries(for: events, pressure: .warning)
        let (got, sent) = Self.logged(at: .notice, events)
        #expect(got == all.filter { $0.priority <= .notice })
        #expect(got.map(\.messageID) == [MessageID.memoryWarning, MessageID.memoryWarning, MessageID.reclaimAction,
                                         MessageID.appTerminated, MessageID.appTerminated])
        #expect(got.last?.values("SCENED_EVENTS") == ["willTerminate terminated"])
        #expect(sent == 5)
    }

    @Test("LogLevel=warning (and below) logs none of the events, but daemon errors still")
    func warningLogsNoEvents() throws {
        let events = try Self.mixedEvents()
        for level in [LogLevel.warning, .err, .emerg] {
            let (got, sent) = Self.logged(at: level, events)
            #expect(got.isEmpty)
            #expect(sent == 0)
        }
        let logger = JournalLogger(level: .warning, destination: .memory)
        var captured: [LogEntry] { logger.kept }
        logger.daemon(.info, MessageID.daemonReady, "ready")
        logger.daemon(.err, MessageID.storageFailure, "commit failed", [("SCENED_STORE", "/x")])
        #expect(captured.map(\.messageID) == [MessageID.storageFailure])
        #expect(logger.sent == 1)
    }
}

@Suite struct JournalCommandBoundaryTests {
    /// Deactivate then background of one session committed together: the callbacks chain
    /// (willResignActive, didEnterBackground), but they are two commands, so two state changes.
    @Test func aChangeNeverSpansTwoCommands() throws {
        var engine = LifecycleEngine()
        var effects: [Effect] = []
        let mail = AppID("com.example.mail")!
        guard case .session(let s1) = try engine.handle(.connect(ConnectRequest(app: mail)), now: .zero, effects: &effects) else {
            Issue.record("no session")
            return
        }
        effects.removeAll()
        try engine.handle(.deactivate(s1), now: .zero, effects: &effects)
        let second = effects.count
        try engine.handle(.background(s1), now: .zero, effects: &effects)
        let events = effects.compactMap { effect -> LifecycleEvent? in
            if case .event(let e) = effect { return e }
            return nil
        }
        let secondStart = effects[..<second].filter { if case .event = $0 { true } else { false } }.count
        let merged = JournalEntries.entries(for: events, pressure: .normal)
        #expect(merged.count == 1, "without boundaries the chain reads as one change")
        let split = JournalEntries.entries(for: events, commandStarts: [0, secondStart], pressure: .normal)
        #expect(split.count == 2)
        #expect(split.map { $0.values("SCENED_EVENT") } == [["willResignActive"], ["didEnterBackground"]])
    }
}
