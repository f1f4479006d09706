import SceneCore

/// Which process is attached as which app (io.scened.App), and the bounded callbacks each owes
/// an answer to. Pure: the shell reports attaches, deliveries, answers, closed connections and
/// the time, and carries out what comes back (a hung app terminated, an overrun logged).
struct AttachmentTable {
    /// UIKit's bounds (R22, R23): about 5 s for didEnterBackground and willTerminate.
    struct Deadlines: Equatable, Sendable {
        var didEnterBackground = TimeSpan(microseconds: 5_000_000)
        var willTerminate = TimeSpan(microseconds: 5_000_000)
    }

    /// A bounded callback waiting for the app's Acknowledge.
    struct Awaited: Equatable, Sendable {
        var seq: UInt64
        var name: EventName
        var session: SessionID?
        var deadline: Timestamp
    }

    struct Attachment: Equatable, Sendable {
        let app: AppID
        /// The VarlinkServer connection number holding the Attach call.
        let connection: Int
        let pid: Int32
        /// By sequence number.
        var awaiting: [UInt64: Awaited] = [:]
        /// Deadlines missed, for the overrun count and the shortened reclaim grace.
        var overruns = 0
        /// The app was terminated: its process is on its way out and cannot be hung any more.
        var terminated = false
    }

    enum AttachOutcome: Equatable { case attached, alreadyAttached(pid: Int32) }

    enum Answer: Equatable {
        case accepted(Awaited)
        case notAwaiting
        /// Its deadline passed before the answer came.
        case late
    }

    /// What a deadline's passing requires.
    enum Overdue: Equatable {
        /// didEnterBackground unanswered: terminate the process as hung (R23) and end its attach.
        case hung(AppID, Awaited)
        /// willTerminate unanswered: the process was already terminated; only reported.
        case overran(AppID, Awaited)
    }

    var deadlines = Deadlines()
    private(set) var byApp: [AppID: Attachment] = [:]
    private(set) var byConnection: [Int: AppID] = [:]
    /// willTerminate answers still owed by processes whose attach connection closed: a process
    /// on its way out answers, then exits, and its two connections close in either order.
    /// One per app, kept until answered or its deadline passes.
    private var departed: [AppID: Attachment] = [:]
    /// Every awaited callback in deadline order per kind: a kind's deadline is the delivery
    /// time plus a constant, so appending keeps each queue sorted, and an answered entry is
    /// skipped when it reaches the front (no search on the hot path).
    private var queues: [DeadlineFIFO] = [DeadlineFIFO(), DeadlineFIFO()]
    /// Sequence numbers whose deadline passed, so a late answer is told so (bounded).
    private var missed: [UInt64: AppID] = [:]
    private var missedOrder: [UInt64] = []
    static let missedMemory = 1024

    var count: Int { byApp.count }
    /// Whether some attached app owes an answer (a stop or a sleep waits for them).
    var owesAnswers: Bool { byApp.values.contains { !$0.awaiting.isEmpty } }
    /// Whether any answer is awaited (answered ones may still wait in a queue to be dropped).
    var hasDeadlines: Bool { queues.contains { $0.count > 0 } }

    func attachment(of app: AppID) -> Attachment? { byApp[app] }
    func app(onConnection number: Int) -> AppID? { byConnection[number] }

    /// The answer owed for `seq`, by the attached process or one whose attach closed.
    func awaited(_ app: AppID, seq: UInt64) -> Awaited? {
        byApp[app]?.awaiting[seq] ?? departed[app]?.awaiting[seq]
    }

    /// The process whose attach closed while it owed the willTerminate answer `seq`.
    func departedProcess(of app: AppID, owing seq: UInt64) -> Attachment? {
        guard let gone = departed[app], gone.awaiting[seq] != nil else { return nil }
        return gone
    }

    mutating func attach(_ app: AppID, connection: Int, pid: Int32) -> AttachOutcome {
        if let existing = byApp[app] { return .alreadyAttached(pid: existing.pid) }
        byApp[app] = Attachment(app: app, connection: connection, pid: pid)
        byConnection[connection] = app
        return .attached
    }

    /// The event was queued to the app's process; its deadline if it is a bounded callback.
    mutating func delivered(_ e: LifecycleEvent, now: Timestamp) -> Timestamp? {
        guard byApp[e.app] != nil else { return nil }
        let kind: Int
        let deadline: Timestamp
        switch e.name {
        case .didEnterBackground:
            kind = 0
            deadline = now + deadlines.didEnterBackground
        case .willTerminate:
            kind = 1
            deadline = now + deadlines.willTerminate
        case .terminated:
            // A didEnterBackground it owes can no longer hang it, but its answer, which R33's
            // chain before willTerminate awaits, may still carry the scene's data until its
            // deadline. What it owes for willTerminate stays (it has saved and may be killed).
            byApp[e.app]!.terminated = true
            return nil
        default:
            return nil
        }
        let awaited = Awaited(seq: e.seq, name: e.name, session: e.session, deadline: deadline)
        byApp[e.app]!.awaiting[e.seq] = awaited
        queues[kind].append(app: e.app, seq: e.seq, deadline: deadline)
        return deadline
    }

    mutating func acknowledge(_ app: AppID, seq: UInt64, now: Timestamp) -> Answer {
        if byApp[app]?.awaiting[seq] == nil, let awaited = departed[app]?.awaiting[seq] {
            if awaited.deadline < now { return .late }
            departed[app] = nil
            return .accepted(awaited)
        }
        guard let awaited = byApp[app]?.awaiting[seq] else {
            return missed[seq] == app ? .late : .notAwaiting
        }
        // Due but not yet expired by a pass: late all the same; the next expiry handles it.
        if awaited.deadline < now { return .late }
        byApp[app]!.awaiting[seq] = nil
        return .accepted(awaited)
    }

    /// Ends the attachment: Detach, or the shell ending a hung process's attach.
    @discardableResult
    mutating func detach(_ app: AppID) -> Attachment? {
        guard let a = byApp.removeValue(forKey: app) else { return nil }
        byConnection[a.connection] = nil
        return a
    }

    /// The connection closed: the app it was attached as, whose process is to be taken for dead.
    mutating func connectionClosed(_ number: Int) -> AppID? {
        guard let app = byConnection[number], var gone = detach(app) else { return nil }
        gone.awaiting = gone.awaiting.filter { $0.value.name == .willTerminate }
        departed[app] = gone.awaiting.isEmpty ? nil : gone
        return app
    }

    /// Deadlines that have passed at `now`, each reported once, earliest first per kind.
    mutating func expire(now: Timestamp) -> [Overdue] {
        var out: [Overdue] = []
        for kind in queues.indices {
            while let front = queues[kind].front, front.deadline <= now {
                queues[kind].removeFront()
                guard let awaited = byApp[front.app]?.awaiting[front.seq] else {
                    if let owed = departed[front.app]?.awaiting[front.seq] {
                        departed[front.app] = nil
                        remember(missed: front.seq, app: front.app)
                        out.append(.overran(front.app, owed))
                    }
                    continue
                }
                byApp[front.app]!.awaiting[front.seq] = nil
                if kind == 0 && byApp[front.app]!.terminated { continue }
                byApp[front.app]!.overruns += 1
                remember(missed: front.seq, app: front.app)
                out.append(kind == 0 ? .hung(front.app, awaited) : .overran(front.app, awaited))
            }
        }
        return out
    }

    /// When `expire` next has something to do (answered entries at the front are dropped).
    mutating func nextDeadline() -> Timestamp? {
        var next: Timestamp?
        for kind in queues.indices {
            while let front = queues[kind].front, awaited(front.app, seq: front.seq) == nil {
                queues[kind].removeFront()
            }
            if let d = queues[kind].front?.deadline, next.map({ d < $0 }) ?? true { next = d }
        }
        return next
    }

    private mutating func remember(missed seq: UInt64, app: AppID) {
        missed[seq] = app
        missedOrder.append(seq)
        if missedOrder.count > Self.missedMemory {
            let drop = missedOrder.count - Self.missedMemory / 2
            for s in missedOrder[..<drop] { missed[s] = nil }
            missedOrder.removeFirst(drop)
        }
    }
}

/// A first-in first-out queue of deadlines, compacted as its front advances.
struct DeadlineFIFO {
    struct Entry: Equatable {
        var app: AppID
        var seq: UInt64
        var deadline: Timestamp
    }
    private var entries: [Entry] = []
    private var head = 0

    var front: Entry? { head < entries.count ? entries[head] : nil }
    var count: Int { entries.count - head }

    mutating func append(app: AppID, seq: UInt64, deadline: Timestamp) {
        entries.append(Entry(app: app, seq: seq, deadline: deadline))
    }

    mutating func removeFront() {
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}
