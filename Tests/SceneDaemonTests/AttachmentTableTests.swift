import SceneCore
import Testing
@testable import SceneDaemon

/// The pure bookkeeping of io.scened.App: one process per app, bounded callbacks owed and their
/// deadlines, deaths.
@Suite struct AttachmentTableTests {
    let mail = AppID("com.example.mail")!
    let maps = AppID("com.example.maps")!
    let s1 = SessionID(1)

    func t(_ ms: Int64) -> Timestamp { Timestamp(microseconds: ms * 1000) }

    func event(_ seq: UInt64, _ name: EventName, _ app: AppID, session: SessionID? = nil) -> LifecycleEvent {
        LifecycleEvent(seq: seq, time: t(0), name: name, app: app, session: session, sceneInstance: 1,
                       state: .process(.running), appState: .background, cause: .request, detail: .none)
    }

    @Test func oneProcessPerApp() {
        var table = AttachmentTable()
        #expect(table.attach(mail, connection: 1, pid: 100) == .attached)
        #expect(table.attach(mail, connection: 2, pid: 200) == .alreadyAttached(pid: 100))
        #expect(table.attach(maps, connection: 2, pid: 200) == .attached)
        #expect(table.app(onConnection: 1) == mail)
        #expect(table.connectionClosed(1) == mail)
        #expect(table.attachment(of: mail) == nil)
        #expect(table.connectionClosed(1) == nil, "a death is reported once")
        #expect(table.attach(mail, connection: 3, pid: 300) == .attached)
        // Detach is not a death: the connection closing afterwards reports nothing.
        #expect(table.detach(maps)?.pid == 200)
        #expect(table.connectionClosed(2) == nil)
    }

    @Test func onlyBoundedCallbacksGetDeadlines() {
        var table = AttachmentTable()
        _ = table.attach(mail, connection: 1, pid: 100)
        for name in EventName.allCases {
            let deadline = table.delivered(event(1, name, mail, session: s1), now: t(10))
            switch name {
            case .didEnterBackground, .willTerminate: #expect(deadline == t(5010), "\(name)")
            default: #expect(deadline == nil, "\(name)")
            }
        }
        #expect(table.delivered(event(2, .didEnterBackground, maps), now: t(10)) == nil, "maps is not attached")
    }

    @Test func answeredInTimeNothingIsOverdue() {
        var table = AttachmentTable()
        _ = table.attach(mail, connection: 1, pid: 100)
        _ = table.delivered(event(7, .didEnterBackground, mail, session: s1), now: t(0))
        #expect(table.nextDeadline() == t(5000))
        guard case .accepted(let awaited) = table.acknowledge(mail, seq: 7, now: t(4999)) else {
            Issue.record("the answer in time was not accepted")
            return
        }
        #expect(awaited.session == s1 && awaited.name == .didEnterBackground)
        #expect(table.acknowledge(mail, seq: 7, now: t(4999)) == .notAwaiting, "answered once")
        #expect(table.expire(now: t(10_000)).isEmpty)
        #expect(table.nextDeadline() == nil)
    }

    @Test func silenceHangsTheAppAtTheDeadlineAndTheLateAnswerIsToldSo() {
        var table = AttachmentTable()
        table.deadlines.didEnterBackground = .milliseconds(300)
        _ = table.attach(mail, connection: 1, pid: 100)
        _ = table.attach(maps, connection: 2, pid: 200)
        _ = table.delivered(event(7, .didEnterBackground, mail, session: s1), now: t(0))
        _ = table.delivered(event(8, .didEnterBackground, maps), now: t(100))
        #expect(table.expire(now: t(299)).isEmpty, "not before the deadline")
        #expect(table.acknowledge(mail, seq: 7, now: t(301)) == .late, "due, though not yet expired")
        let overdue = table.expire(now: t(300))
        #expect(overdue.count == 1)
        if case .hung(let app, let awaited)? = overdue.first { #expect(app == mail && awaited.seq == 7) }
        else { Issue.record("expected mail hung, got \(overdue)") }
        #expect(table.acknowledge(mail, seq: 7, now: t(305)) == .late)
        #expect(table.attachment(of: mail)?.overruns == 1)
        #expect(table.nextDeadline() == t(400))
        #expect(table.acknowledge(maps, seq: 8, now: t(350)) != .notAwaiting)
        #expect(table.expire(now: t(1000)).isEmpty, "maps answered")
    }

    @Test func unansweredWillTerminateIsAnOverrunNotAHang() {
        var table = AttachmentTable()
        _ = table.attach(mail, connection: 1, pid: 100)
        _ = table.delivered(event(3, .didEnterBackground, mail, session: s1), now: t(0))
        _ = table.delivered(event(4, .willTerminate, mail), now: t(0))
        // The process died: what didEnterBackground owed cannot hang it any more.
        _ = table.delivered(event(5, .terminated, mail), now: t(0))
        let overdue = table.expire(now: t(6000))
        #expect(overdue.count == 1)
        if case .overran(let app, let awaited)? = overdue.first { #expect(app == mail && awaited.seq == 4) }
        else { Issue.record("expected an overrun of willTerminate, got \(overdue)") }
    }

    @Test func willTerminateIsStillTakenAfterTheAttachClosed() {
        var table = AttachmentTable()
        _ = table.attach(mail, connection: 1, pid: 100)
        _ = table.attach(maps, connection: 2, pid: 200)
        _ = table.delivered(event(3, .didEnterBackground, mail, session: s1), now: t(0))
        _ = table.delivered(event(4, .willTerminate, mail), now: t(0))
        _ = table.delivered(event(5, .willTerminate, maps), now: t(0))
        // The process exits as it answers: its attach closes before the answer is read.
        #expect(table.connectionClosed(1) == mail)
        #expect(table.connectionClosed(2) == maps)
        #expect(table.attachment(of: mail) == nil)
        #expect(table.departedProcess(of: mail, owing: 4)?.pid == 100)
        #expect(table.departedProcess(of: mail, owing: 3) == nil, "only willTerminate outlives the attach")
        #expect(table.awaited(mail, seq: 3) == nil && table.awaited(mail, seq: 4)?.name == .willTerminate)
        #expect(table.acknowledge(mail, seq: 3, now: t(1)) == .notAwaiting)
        #expect(table.nextDeadline() == t(5000), "the departed answers keep their deadline")
        guard case .accepted(let awaited) = table.acknowledge(mail, seq: 4, now: t(10)) else {
            Issue.record("the willTerminate answer after the attach closed was not accepted")
            return
        }
        #expect(awaited.seq == 4)
        #expect(table.acknowledge(mail, seq: 4, now: t(10)) == .notAwaiting, "answered once")
        // maps never answers: an overrun at the deadline, then forgotten; a late answer is late.
        let overdue = table.expire(now: t(6000))
        #expect(overdue == [.overran(maps, AttachmentTable.Awaited(seq: 5, name: .willTerminate, session: nil, deadline: t(5000)))])
        #expect(table.departedProcess(of: maps, owing: 5) == nil)
        #expect(table.acknowledge(maps, seq: 5, now: t(6001)) == .late)
        #expect(table.nextDeadline() == nil && !table.hasDeadlines)
    }

    @Test func answersForAnotherAppAreNotAccepted() {
        var table = AttachmentTable()
        _ = table.attach(mail, connection: 1, pid: 100)
        _ = table.attach(maps, connection: 2, pid: 200)
        _ = table.delivered(event(7, .didEnterBackground, mail), now: t(0))
        #expect(table.acknowledge(maps, seq: 7, now: t(1)) == .notAwaiting)
        #expect(table.acknowledge(mail, seq: 7, now: t(1)) != .notAwaiting)
    }

    @Test func manyDeadlinesStayOrderedAndBounded() {
        var table = AttachmentTable()
        table.deadlines.didEnterBackground = .milliseconds(10)
        var apps: [AppID] = []
        for i in 0..<2000 {
            let app = AppID("com.example.app\(i)")!
            apps.append(app)
            _ = table.attach(app, connection: i, pid: Int32(i))
        }
        for (i, app) in apps.enumerated() { _ = table.delivered(event(UInt64(i + 1), .didEnterBackground, app), now: t(Int64(i))) }
        // Every other one answers.
        for (i, app) in apps.enumerated() where i % 2 == 0 { _ = table.acknowledge(app, seq: UInt64(i + 1), now: t(Int64(i))) }
        let overdue = table.expire(now: t(100_000))
        #expect(overdue.count == 1000)
        let seqs = overdue.compactMap { if case .hung(_, let a) = $0 { a.seq } else { nil } }
        #expect(seqs == seqs.sorted() && seqs.allSatisfy { $0 % 2 == 0 })
        #expect(table.nextDeadline() == nil && !table.hasDeadlines)
    }
}
