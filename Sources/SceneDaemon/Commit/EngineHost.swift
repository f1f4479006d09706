import Glibc
import SceneCore
import SceneStore

/// Owns the engine and carries out its effects. Changes wait in `pending`; at the end of a loop
/// iteration they become one batch, committed in one transaction by the store's writer thread
/// while the loop goes on with the next batch. Once a batch is written its events may go to
/// the attached apps; only when it is durable are its events published (monitors, journal)
/// and the replies that depend on it released.
///
/// Batches are numbered. A reply is tagged with the number of the batch being gathered when it
/// was made, and released once every batch up to that number is committed: even a read-only
/// reply may show changes that were still being committed.
final class EngineHost {
    private(set) var engine: LifecycleEngine
    let clock: DaemonClock
    let writer: StoreWriter?
    private(set) var pending = PendingChanges()
    /// The events array of a published batch, kept to gather the next batch's events in: a
    /// batch's events can be hundreds of KiB, which glibc maps fresh each time (and the pages
    /// fault in again) if the array is reallocated per batch.
    private var spareEvents: [LifecycleEvent] = []
    private var spareStarts: [Int] = []
    private(set) var recent: RecentEvents
    private var effects: [Effect] = []
    private(set) var commits: UInt64 = 0
    /// Counters for GetMetrics that no other part keeps (DaemonMetrics).
    var metrics = DaemonMetrics()

    /// Stored rows the store left out, damaged on disk (start-up, and event-log rows as read).
    var quarantine = QuarantineReport()
    /// Rows quarantined after start-up, not yet reported (`takeQuarantined`).
    private var newlyQuarantined: [QuarantinedRow] = []

    /// Batch numbers and the commit in flight.
    private(set) var pipeline = CommitPipeline()
    /// The batch new changes and replies belong to.
    var gathering: UInt64 { pipeline.gathering }
    /// Every batch up to this one is committed (or settled by a failure).
    var committedThrough: UInt64 { pipeline.settledThrough }
    /// What to publish when the batch in flight is committed; `written`: it was reported
    /// written (its events are in `recent` and behind `writtenNextSequence`).
    private var inFlight: (events: [LifecycleEvent], commandStarts: [Int], nextSequence: UInt64, written: Bool)?

    /// Reads the payloads the engine left in the store; nil without a store (nothing is then
    /// ever left there).
    let savedData: SavedDataReader?
    /// Sessions of the batch in flight whose large payloads the commit writes: once it is on
    /// disk they are left to the store.
    private var releasableInFlight: [(id: SessionID, version: SavedDataVersion)] = []
    /// Committed, to be released once the batch's events are delivered (`releaseSavedData`).
    private var releasable: [(id: SessionID, version: SavedDataVersion)] = []

    init(engine: LifecycleEngine, clock: DaemonClock, writer: StoreWriter?, savedData: SavedDataReader? = nil,
         recentCapacity: Int = 4096) {
        self.engine = engine
        self.clock = clock
        self.writer = writer
        self.savedData = writer == nil ? nil : savedData
        // Without a store the ring is the only backlog there is: bounded by count alone.
        recent = RecentEvents(capacity: recentCapacity, payloadBudget: writer == nil ? .max : 4 << 20)
        committedNextSequence = engine.nextSequence
        writtenNextSequence = engine.nextSequence
        effects.reserveCapacity(64)
    }

    /// Runs one command now. Timers that are due fire first, so the range returned covers only
    /// the events this command caused (in `pending.events`).
    func execute(_ command: Command) throws(LifecycleError) -> (result: CommandResult, events: Range<Int>) {
        let now = clock.now()
        // A tick first only when something is due: otherwise it is an engine call and an empty
        // command for every call.
        if let due = engine.nextDeadline, due <= now { advance(to: now) }
        let start = pending.events.count
        pending.commandStarts.append(start)
        effects.removeAllKeepingOrdinaryCapacity()
        // A reconnection hands the saved restoration data to willConnectTo: read it back first.
        // (Looked at in place: most activations are of live sessions, and a copy of the session
        // would retain its strings.)
        if case .activate(let id) = command, let i = engine.sessions.index(forKey: id),
           engine.sessions.values[i].condition == .archived, engine.sessions.values[i].hasStoredPayload {
            let (userInfo, restoration) = try savedPayloads(of: engine.sessions.values[i])
            engine.holdSavedData(id, userInfo: userInfo, restoration: restoration)
        }
        do {
            let result = try engine.handle(command, now: now, effects: &effects)
            pending.absorb(effects)
            return (result, start..<pending.events.count)
        } catch {
            pending.absorb(effects)
            throw error
        }
    }

    /// Fires what is due (suspensions, task expiry).
    func advance(to now: Timestamp) {
        pending.commandStarts.append(pending.events.count)
        effects.removeAllKeepingOrdinaryCapacity()
        _ = try? engine.handle(.tick, now: now, effects: &effects)
        pending.absorb(effects)
    }

    func tick() { advance(to: clock.now()) }

    func reconfigure(engine configuration: EngineConfiguration) {
        engine.reconfigure(configuration)
    }

    var hasPending: Bool { !pending.isEmpty }
    var isCommitting: Bool { pipeline.isCommitting }

    /// What a step of the commit pipeline settled.
    enum Progress {
        case nothing
        /// The batch in flight is written (a crash of scened keeps it), not yet durable: these
        /// events may go to the attached apps.
        case written(events: [LifecycleEvent])
        /// Every batch up to `through` is durable; these events are now published (those of a
        /// batch reported `written` first are with the attached apps already).
        /// `commandStarts`: where each command's events begin.
        case committed(through: UInt64, events: [LifecycleEvent], commandStarts: [Int])
        /// The batches up to `through` are lost (the commit failed); their callers must be told.
        case failed(through: UInt64, StoreError)
        /// The batch in flight is written but its sync failed: it cannot be answered either way.
        case unsynced(StoreError)
    }

    /// The largest batch (in rows) the loop writes itself when the writer is idle
    /// (`StoreWriter.writeHere`): a few tens of microseconds, about what handing it over costs.
    static let rowsWrittenHere = 32

    /// At the end of a pass: hands what is pending to the writer, unless a batch is already
    /// being committed (then it keeps gathering: group commit grows under load).
    func startCommit() -> Progress {
        switch pipeline.batchReady(hasChanges: !pending.isEmpty) {
        case .none, .fail, .deliver, .unsynced:
            return .nothing
        case .settle(let through):
            // Nothing to write: settled at once (its replies may only read).
            return .committed(through: through, events: [], commandStarts: [])
        case .submit(let number):
            let batch = makeBatch()
            let events = pending.events
            let starts = pending.commandStarts
            // The next batch gathers in the spare array (empty, unshared by now, so emptying
            // keeps its room) rather than in a copy of this one's.
            swap(&pending.events, &spareEvents)
            spareEvents = []
            swap(&pending.commandStarts, &spareStarts)
            spareStarts = []
            pending.removeAll()
            guard let writer else {
                _ = pipeline.commitFinished(succeeded: true)
                noteWritten(events, nextSequence: engine.nextSequence)
                return published(number: number, events: events, commandStarts: starts, nextSequence: engine.nextSequence)
            }
            inFlight = (events, starts, engine.nextSequence, false)
            var large = false
            if savedData != nil {
                for s in batch.sessions where s.savedDataVersion.hasLargePayload {
                    releasableInFlight.append((s.id, s.savedDataVersion))
                    large = true
                }
            }
            let here = !large && batch.rowCount <= Self.rowsWrittenHere ? writer.writeHere(batch, number: number) : .declined
            switch here {
            case .written: return commitWritten()
            case .failed: return .nothing
            case .declined:
                writer.submit(batch, number: number)
                return .nothing
            }
        }
    }

    /// A published batch's events, once every reader is done with them (the daemon's last use).
    func recycle(events: [LifecycleEvent], commandStarts: [Int]) {
        if events.capacity > spareEvents.capacity, events.capacity <= KeptCapacity.elements { spareEvents = events }
        if commandStarts.capacity > spareStarts.capacity, commandStarts.capacity <= KeptCapacity.elements {
            spareStarts = commandStarts
        }
    }

    /// The writer wrote the batch in flight: in the log, which a crash of scened cannot undo,
    /// so its events may go to the attached apps (an app reattaching reads them from the log;
    /// backlogs read up to `writtenNextSequence`). Monitors and replies wait for durable.
    func commitWritten() -> Progress {
        guard var flight = inFlight, case .deliver = pipeline.commitWritten() else { return .nothing }
        flight.written = true
        inFlight = flight
        noteWritten(flight.events, nextSequence: flight.nextSequence)
        return .written(events: flight.events)
    }

    private func noteWritten(_ events: [LifecycleEvent], nextSequence: UInt64) {
        writtenNextSequence = nextSequence
        for e in events { recent.append(e) }
    }

    /// The writer finished the batch in flight.
    func finishCommit(_ result: Result<Void, StoreError>) -> Progress {
        guard let flight = inFlight else { return .nothing }
        inFlight = nil
        let succeeded: Bool
        if case .success = result { succeeded = true } else { succeeded = false }
        switch pipeline.commitFinished(succeeded: succeeded) {
        case .settle(let through):
            releasable.append(contentsOf: releasableInFlight)
            releasableInFlight.removeAll(keepingCapacity: true)
            if !flight.written { noteWritten(flight.events, nextSequence: flight.nextSequence) }
            return published(number: through, events: flight.events, commandStarts: flight.commandStarts,
                             nextSequence: flight.nextSequence)
        case .fail(let through):
            // The batch was not kept, and what was gathered since built on it: drop both and go
            // back to the last committed state, so memory never holds what the disk does not.
            pending.removeAll()
            releasableInFlight.removeAll()
            releasable.removeAll()
            reloadAfterFailedCommit()
            committedNextSequence = engine.nextSequence
            writtenNextSequence = engine.nextSequence
            guard case .failure(let error) = result else { return .nothing }
            return .failed(through: through, error)
        case .unsynced:
            guard case .failure(let error) = result else { return .nothing }
            return .unsynced(error)
        case .none, .submit, .deliver:
            return .nothing
        }
    }

    private func published(number: UInt64, events: [LifecycleEvent], commandStarts: [Int],
                           nextSequence: UInt64) -> Progress {
        commits += 1
        committedNextSequence = nextSequence
        return .committed(through: number, events: events, commandStarts: commandStarts)
    }

    /// Waits for the batch in flight (shutdown): what it reached, in order.
    func drain() -> [Progress] {
        guard inFlight != nil, let writer else { return [] }
        var pfd = pollfd(fd: writer.completionFD, events: Int16(POLLIN), revents: 0)
        var reached: [Progress] = []
        while true {
            let progress = writer.takeProgress()
            if progress.written != nil { reached.append(commitWritten()) }
            if let finished = progress.finished {
                reached.append(finishCommit(finished.result))
                return reached
            }
            _ = poll(&pfd, 1, 1000)
        }
    }

    private func makeBatch() -> StoreBatch {
        var batch = writer?.takeSpentBatch() ?? StoreBatch()
        // Emptied keeping their room (when nothing shares them any more; else fresh arrays).
        batch.sessions.removeAllKeepingOrdinaryCapacity()
        batch.apps.removeAllKeepingOrdinaryCapacity()
        batch.tasks.removeAllKeepingOrdinaryCapacity()
        batch.sessions.reserveCapacity(pending.sessions.count)
        for id in pending.sessions { if let s = engine.sessions[id] { batch.sessions.append(s) } }
        batch.removedSessions = Array(pending.removedSessions)
        batch.apps.reserveCapacity(pending.apps.count)
        for id in pending.apps { if let a = engine.apps[id] { batch.apps.append(a.storedFields) } }
        batch.tasks.reserveCapacity(pending.tasks.count)
        for token in pending.tasks { if let t = engine.tasks[token] { batch.tasks.append(t) } }
        batch.removedTasks = Array(pending.removedTasks)
        batch.setBackgroundWork(named: pending.schedules, pending.notifications, schedules: engine.schedules,
                                notifications: engine.notifications)
        batch.setRouting(named: pending.opens, pending.conditions, opens: engine.pendingOpens,
                         conditions: engine.activationConditions)
        batch.events = pending.events
        batch.counters = EngineCounters(engine)
        return batch
    }

    /// The committed state is the truth; if even reading it fails, the daemon cannot go on and
    /// exits so that systemd restarts it.
    private func reloadAfterFailedCommit() {
        guard let writer else { return }
        do {
            // Tables, as at start-up: the engine adopts them (no array beside the dictionary).
            let deferring = savedData != nil
            let (tables, quarantined, _) = try writer.withStore { try $0.loadTables(deferringPayloads: deferring) }
            engine = try LifecycleEngine(configuration: engine.configuration, restoring: consume tables)
            noteQuarantined(quarantined)
        } catch {
            Diagnostics.fatal("cannot reload committed state after a failed commit: \(error)")
        }
    }

    /// The sequence number the next committed (durable) event will get: monitors see nothing
    /// beyond it.
    private(set) var committedNextSequence: UInt64 = 1
    /// The same for written events: attached apps see nothing beyond it. At least
    /// `committedNextSequence`.
    private(set) var writtenNextSequence: UInt64 = 1

    /// The oldest sequence number a monitor may still start from.
    var oldestKeptSequence: UInt64 {
        writer?.oldestLoggedSequence ?? recent.oldestSequence ?? committedNextSequence
    }

    /// Whether events from `seq` on can still be had (Monitor's `since`).
    func checkAvailable(from seq: UInt64) -> EventsUnavailable? {
        if seq >= committedNextSequence { return nil }
        if let oldest = recent.oldestSequence, seq >= oldest { return nil }
        let oldest = oldestKeptSequence
        return seq >= oldest || (seq == 0 && oldest <= 1) ? nil : EventsUnavailable(requested: seq, oldest: oldest)
    }

    enum Backlog {
        /// From memory, at once.
        case events([LifecycleEvent])
        case unavailable(EventsUnavailable)
        /// Asked of the commit thread; the answer comes with `token` (see `finishedReads`).
        case pending
    }

    /// Where a stream's events end: a monitor's at the durable ones, an attached app's at the
    /// written ones.
    func nextSequence(attached: Bool) -> UInt64 { attached ? writtenNextSequence : committedNextSequence }

    /// Committed events with seq ≥ `from` (written ones too if `attached`), oldest first: from
    /// memory when it has them, else read from the store's log by the commit thread (the loop
    /// never waits for SQLite). A read may return events beyond the bound: the reader drops them.
    func committedEvents(from seq: UInt64, limit: Int, token: UInt64, attached: Bool = false) -> Backlog {
        let bound = nextSequence(attached: attached)
        if seq >= bound { return .events([]) }
        if let oldest = recent.oldestSequence, seq >= oldest {
            // The ring's numbers are consecutive: this stops at the bound.
            let events = recent.events(from: seq, limit: min(limit, Int(clamping: bound - seq)))
            return .events(events.last.map { $0.seq < bound } ?? true ? events : events.filter { $0.seq < bound })
        }
        if let unavailable = checkAvailable(from: seq) { return .unavailable(unavailable) }
        guard let writer else { return .events(recent.events(from: seq, limit: limit)) }
        writer.submitRead(.events(after: seq == 0 ? 0 : seq - 1, limit: limit), token: token)
        return .pending
    }

    /// The reads the commit thread answered, with damaged rows reported once.
    func finishedReads() -> [(token: UInt64, events: Result<[LifecycleEvent], StoreError>)] {
        guard let writer else { return [] }
        return writer.takeFinishedReads().map { done in
            switch done.result {
            case .events(let events, let damaged):
                if damaged.count > quarantine.eventCount { noteQuarantined(damaged) }
                return (done.token, events)
            }
        }
    }
}

extension EngineHost {
    /// A session's userInfo and restoration data: the engine's, or the store's copy of what the
    /// engine left there (a point read on the loop: the row's pages are usually in the kernel's
    /// cache, and a read is tens of microseconds for 16 KiB). Damage is the caller's error.
    func savedPayloads(of s: SceneSession) throws(LifecycleError) -> (userInfo: UserInfo, restoration: RestorationData?) {
        if case .held(let userInfo) = s.savedUserInfo, case .held(let restoration) = s.savedRestoration {
            return (userInfo, restoration)
        }
        guard let savedData else {
            throw .savedDataUnavailable(s.id, reason: "it is in no store this daemon can read")
        }
        do throws(StoreError) {
            let userInfo: UserInfo
            if case .held(let held) = s.savedUserInfo { userInfo = held } else { userInfo = try savedData.userInfo(s.id) }
            let restoration: RestorationData?
            if case .held(let held) = s.savedRestoration {
                restoration = held
            } else {
                restoration = try savedData.restoration(s.id)
            }
            return (userInfo, restoration)
        } catch {
            Diagnostics.error("reading the saved data of \(s.id): \(error)")
            throw .savedDataUnavailable(s.id, reason: error.message)
        }
    }

    /// Leaves to the store the large payloads that committed batches wrote, unless their
    /// sessions changed since. After the batches' events are delivered: an app's event carries
    /// the session's userInfo, which is then still at hand.
    func releaseSavedData() {
        guard !releasable.isEmpty else { return }
        for (id, version) in releasable { engine.releaseSavedData(id, committed: version) }
        releasable.removeAll(keepingCapacity: releasable.count <= KeptCapacity.elements)
    }

    private func noteQuarantined(_ rows: [QuarantinedRow]) {
        newlyQuarantined += quarantine.add(rows)
    }

    /// The rows quarantined since the last call, for the journal.
    func takeQuarantined() -> [QuarantinedRow] {
        guard !newlyQuarantined.isEmpty else { return [] }
        defer { newlyQuarantined = [] }
        return newlyQuarantined
    }
}

struct EventsUnavailable: Error {
    var requested: UInt64
    var oldest: UInt64
}
