import SceneCore
import SceneStore

/// Owns the engine and carries out its effects: changes wait in `pending` until the end of the
/// loop iteration, are committed in one transaction, and only then are their events published
/// (monitors, journal) and the replies that depend on them released.
final class Manager {
    private(set) var engine: LifecycleEngine
    let clock: DaemonClock
    let store: SceneStore?
    private(set) var pending = PendingChanges()
    private(set) var recent: RecentEvents
    private var effects: [Effect] = []
    private(set) var commits: UInt64 = 0

    init(engine: LifecycleEngine, clock: DaemonClock, store: SceneStore?, recentCapacity: Int = 4096) {
        self.engine = engine
        self.clock = clock
        self.store = store
        recent = RecentEvents(capacity: recentCapacity)
        committedNextSequence = engine.nextSequence
        effects.reserveCapacity(64)
    }

    /// Runs one command now. Timers that are due fire first, so the range returned covers only
    /// the events this command caused (in `pending.events`).
    func execute(_ command: Command) throws(LifecycleError) -> (result: CommandResult, events: Range<Int>) {
        let now = clock.now()
        advance(to: now)
        let start = pending.events.count
        effects.removeAll(keepingCapacity: true)
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
        effects.removeAll(keepingCapacity: true)
        _ = try? engine.handle(.tick, now: now, effects: &effects)
        pending.absorb(effects)
    }

    func tick() { advance(to: clock.now()) }

    func reconfigure(engine configuration: EngineConfiguration) {
        engine.reconfigure(configuration)
    }

    var hasPending: Bool { !pending.isEmpty }

    enum CommitOutcome {
        case nothing
        case committed([LifecycleEvent])
        case failed(StoreError)
    }

    /// Commits everything pending as one transaction. On failure nothing pending is kept: the
    /// engine is rebuilt from the last committed state, so memory never holds what the disk does
    /// not, and the callers waiting for this commit are told it failed.
    func commit() -> CommitOutcome {
        guard hasPending else { return .nothing }
        if let store {
            let batch = makeBatch()
            do {
                try store.commit(batch)
            } catch {
                pending.removeAll()
                reloadAfterFailedCommit(store)
                return .failed(error)
            }
        }
        commits += 1
        committedNextSequence = engine.nextSequence
        let events = pending.events
        for e in events { recent.append(e) }
        pending.removeAll()
        return .committed(events)
    }

    private func makeBatch() -> StoreBatch {
        var batch = StoreBatch()
        batch.sessions.reserveCapacity(pending.sessions.count)
        for id in pending.sessions { if let s = engine.sessions[id] { batch.sessions.append(s) } }
        batch.removedSessions = Array(pending.removedSessions)
        for id in pending.apps { if let a = engine.apps[id] { batch.apps.append(a) } }
        for token in pending.tasks { if let t = engine.tasks[token] { batch.tasks.append(t) } }
        batch.removedTasks = Array(pending.removedTasks)
        batch.events = pending.events
        batch.counters = EngineCounters(clock: engine.clock, nextSequence: engine.nextSequence,
                                        nextSessionNumber: engine.nextSessionNumber,
                                        nextTaskNumber: engine.nextTaskNumber)
        return batch
    }

    /// The committed state is the truth; if even reading it fails, the daemon cannot go on and
    /// exits so that systemd restarts it.
    private func reloadAfterFailedCommit(_ store: SceneStore) {
        do {
            let snapshot = try store.load()
            engine = try LifecycleEngine(configuration: engine.configuration, restoring: snapshot)
            committedNextSequence = engine.nextSequence
        } catch {
            Diagnostics.fatal("cannot reload committed state after a failed commit: \(error)")
        }
    }

    /// The sequence number the next committed event will get: monitors see nothing beyond it.
    private(set) var committedNextSequence: UInt64 = 1

    /// Committed events with seq ≥ `from`, oldest first: from memory or, further back, from the
    /// store's log.
    func committedEvents(from seq: UInt64, limit: Int) -> Result<[LifecycleEvent], EventsUnavailable> {
        if seq >= committedNextSequence { return .success([]) }
        if let oldest = recent.oldestSequence, seq >= oldest {
            return .success(recent.events(from: seq, limit: limit))
        }
        let oldestKept = store?.oldestLoggedSequence ?? recent.oldestSequence ?? committedNextSequence
        guard seq >= oldestKept || (seq == 0 && oldestKept <= 1) else {
            return .failure(EventsUnavailable(requested: seq, oldest: oldestKept))
        }
        guard let store else { return .success(recent.events(from: seq, limit: limit)) }
        do {
            return .success(try store.events(after: seq == 0 ? 0 : seq - 1, limit: limit))
        } catch {
            Diagnostics.error("reading the event log: \(error)")
            return .failure(EventsUnavailable(requested: seq, oldest: recent.oldestSequence ?? committedNextSequence))
        }
    }
}

struct EventsUnavailable: Error {
    var requested: UInt64
    var oldest: UInt64
}
