import Glibc
import Locking
import SceneCore
import SceneStore
import SystemdKit

/// Commits batches on a thread of its own, so that the event loop keeps parsing, applying and
/// answering calls (for the next batch) while SQLite writes and fsyncs the previous one. One
/// batch is in flight at a time; the loop learns of its progress through a pipe it watches:
/// written (COMMIT returned: a crash of scened keeps it), then finished (durable, or failed).
/// Under Durability=full the two are a fdatasync apart; otherwise they come together.
///
/// A small batch the loop may write itself when this thread is idle, leaving only the sync
/// here (`writeHere`).
///
/// Reads the loop needs (a monitor's backlog from the event log, history for an exported
/// trace) are queued here too and answered the same way, so the loop never waits for SQLite
/// behind a commit. The one exception is the reload after a failed commit: nothing can be
/// served until memory is back at the committed state, so the loop waits for it. Every use of
/// the store holds `storeLock`.
final class StoreWriter: @unchecked Sendable {
    // @unchecked: `store` is used only under `storeLock`, `slot` only under `slotLock`; the
    // descriptors are written once before the thread starts.
    private let store: SceneStore
    private let storeLock = Locked(())
    private let slotLock = Locked(())
    typealias Job = (number: UInt64, batch: StoreBatch)
    private var queued: Job?
    /// Written by the loop itself (`writeHere`): this thread makes it durable.
    private var writtenHere: Job?
    /// The batch in flight is written; not yet taken by the loop.
    private var written: UInt64?
    private var finished: (number: UInt64, result: Result<Void, StoreError>)?
    /// The last committed batch, handed back so that the next one can be built in its arrays
    /// (reallocating them per batch maps and faults in fresh memory each time).
    private var spent: StoreBatch?
    private var readQueue: [(token: UInt64, request: StoreRead)] = []
    private var readsDone: [(token: UInt64, result: StoreReadResult)] = []
    /// The event log's reach as of the last commit, for the loop to consult without the store.
    private var oldestLogged: UInt64?
    private var stopping = false
    /// Test hook: seconds to sleep before the next commit.
    private var stall: UInt32 = 0
    /// Test hook: seconds to sleep between the next commit's write and its sync.
    private var stallSync: UInt32 = 0
    /// loop → writer: "a batch is queued" (or "stop").
    private var wake: (read: Int32, write: Int32) = (-1, -1)
    /// writer → loop: "a batch is done"; the loop watches `completionFD`.
    private var done: (read: Int32, write: Int32) = (-1, -1)
    private var thread = pthread_t()
    private var running = false

    init(store: SceneStore) throws {
        self.store = store
        oldestLogged = store.oldestLoggedSequence
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw StoreWriterError.pipe(errno) }
        wake = (fds[0], fds[1])
        guard pipe(&fds) == 0 else { throw StoreWriterError.pipe(errno) }
        done = (fds[0], fds[1])
        for fd in [wake.read, wake.write, done.read, done.write] { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(done.read, F_SETFL, fcntl(done.read, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        for fd in [wake.read, wake.write, done.read, done.write] where fd >= 0 { close(fd) }
    }

    /// Readable when a batch was written or has finished: the loop then calls `takeProgress`.
    var completionFD: Int32 { done.read }

    func start() throws {
        switch OSThread.start({ self.run() }) {
        case .success(let started): thread = started
        case .failure(let error): throw StoreWriterError.thread(error.code)
        }
        running = true
    }

    /// The oldest sequence number the event log answers for, as of the last commit or read.
    var oldestLoggedSequence: UInt64? { slotLock.withLock { _ in oldestLogged } }

    /// Queues a read; its result comes back through `takeFinishedReads`, with `token`.
    func submitRead(_ request: StoreRead, token: UInt64) {
        slotLock.withLock { _ in readQueue.append((token, request)) }
        signal(wake.write)
    }

    /// Reads answered since the last call (called when `completionFD` is readable).
    func takeFinishedReads() -> [(token: UInt64, result: StoreReadResult)] {
        slotLock.withLock { _ in
            let done = readsDone
            readsDone.removeAll()
            return done
        }
    }

    /// What `writeHere` did.
    enum HereOutcome {
        /// Written on the caller's thread: the caller reports it written now; its end (durable,
        /// or at once without a sync) comes through `completionFD`.
        case written
        /// Tried on the caller's thread and failed: the failure comes through `completionFD`.
        case failed
        /// Not tried (this thread is busy with the store, a test stall is set, or a checkpoint
        /// is near): nothing done, the caller submits it.
        case declined
    }

    /// Writes `batch` on the calling thread (the loop), leaving only its sync to this one,
    /// when nothing here uses the store: for a small batch the write costs less than the two
    /// thread hand-offs it saves (waking this thread, its pipe waking the loop), and a woken
    /// app's events reach it sooner. Never waits for the store's lock; declines where the
    /// commit could run a checkpoint (its fsyncs would stall the loop).
    func writeHere(_ batch: StoreBatch, number: UInt64) -> HereOutcome {
        let idle = slotLock.withLock { _ in queued == nil && writtenHere == nil && stall == 0 && !stopping }
        guard idle else { return .declined }
        let attempt = storeLock.withLockIfAvailable { _ -> (Result<Void, StoreError>, UInt64?, Bool)? in
            guard !store.checkpointNear else { return nil }
            return (Result { () throws(StoreError) in try store.commitToLog(batch) }, store.oldestLoggedSequence,
                    store.durability.syncsAfterCommit)
        }
        guard let (result, oldest, syncs) = attempt ?? nil else { return .declined }
        guard case .success = result else {
            finish((number, batch), result, oldest: oldest)
            return .failed
        }
        guard syncs else {
            finish((number, batch), result, oldest: oldest)
            return .written
        }
        slotLock.withLock { _ in
            oldestLogged = oldest
            writtenHere = (number, batch)
        }
        signal(wake.write)
        return .written
    }

    /// Queues a batch (the previous one must have finished).
    func submit(_ batch: StoreBatch, number: UInt64) {
        slotLock.withLock { _ in queued = (number, batch) }
        signal(wake.write)
    }

    /// What the batch in flight reached since the last call (called when `completionFD` is
    /// readable): whether it was written, and its end. Both may come at once.
    func takeProgress() -> (written: UInt64?, finished: (number: UInt64, result: Result<Void, StoreError>)?) {
        var byte: UInt8 = 0
        while read(done.read, &byte, 1) > 0 {}
        return slotLock.withLock { _ in
            defer {
                written = nil
                finished = nil
            }
            return (written, finished)
        }
    }

    /// The arrays of the last committed batch, if the loop has not taken them yet.
    func takeSpentBatch() -> StoreBatch? {
        slotLock.withLock { _ in
            let batch = spent
            spent = nil
            return batch
        }
    }

    /// Runs `body` with the store while no commit runs.
    func withStore<R>(_ body: (SceneStore) throws -> R) rethrows -> R {
        try storeLock.withLock { _ in try body(store) }
    }

    /// Test hook: the next commit waits `seconds` first, as a stuck disk would make it.
    func stallNextCommit(seconds: UInt32) {
        slotLock.withLock { _ in stall = seconds }
    }

    /// Test hook: the next commit, once written, waits `seconds` before its sync, as a slow
    /// disk would make it (Durability=full).
    func stallNextSync(seconds: UInt32) {
        slotLock.withLock { _ in stallSync = seconds }
    }

    /// Lets the queued batch finish, then ends the thread.
    func stop() {
        guard running else { return }
        slotLock.withLock { _ in stopping = true }
        signal(wake.write)
        pthread_join(thread, nil)
        running = false
    }

    private func run() {
        var byte: UInt8 = 0
        while true {
            let n = read(wake.read, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            let work = takeWork()
            if !work.reads.isEmpty {
                let answers = storeLock.withLock { _ in work.reads.map { ($0.token, answer($0.request)) } }
                let oldest = storeLock.withLock { _ in store.oldestLoggedSequence }
                slotLock.withLock { _ in
                    readsDone += answers
                    oldestLogged = oldest
                }
                signal(done.write)
            }
            if let written = work.written { makeDurable(written) }
            if work.pause > 0 { sleep(work.pause) }
            if let job = work.job { commit(job) }
            if work.stop || n == 0 { return }
        }
    }

    private struct Work {
        var job: Job?
        /// A batch the loop wrote itself (`writeHere`), to be made durable here.
        var written: Job?
        var stop: Bool
        var pause: UInt32
        var reads: [(token: UInt64, request: StoreRead)]
    }

    private func takeWork() -> Work {
        slotLock.withLock { _ in
            let work = Work(job: queued, written: writtenHere, stop: stopping, pause: queued == nil ? 0 : stall,
                            reads: readQueue)
            if queued != nil { stall = 0 }
            queued = nil
            writtenHere = nil
            readQueue.removeAll()
            return work
        }
    }

    /// Writes one batch, reports it written, makes it durable and reports that. Without a
    /// sync to wait for, both are reported with one signal.
    private func commit(_ job: Job) {
        let (result, oldest, syncs) = storeLock.withLock { _ -> (Result<Void, StoreError>, UInt64?, Bool) in
            (Result { () throws(StoreError) in try store.commitToLog(job.batch) }, store.oldestLoggedSequence,
             store.durability.syncsAfterCommit)
        }
        guard case .success = result else { return finish(job, result, oldest: oldest) }
        slotLock.withLock { _ in
            written = job.number
            oldestLogged = oldest
        }
        guard syncs else { return finish(job, result, oldest: oldest) }
        // The loop hands the batch's events to the attached apps while the disk syncs.
        signal(done.write)
        makeDurable(job)
    }

    private func makeDurable(_ job: Job) {
        let pause = slotLock.withLock { _ in
            defer { stallSync = 0 }
            return stallSync
        }
        if pause > 0 { sleep(pause) }
        finish(job, storeLock.withLock { _ in Result { () throws(StoreError) in try store.syncLog() } }, oldest: nil)
    }

    /// The batch's end, for the loop's next `takeProgress`.
    private func finish(_ job: Job, _ outcome: Result<Void, StoreError>, oldest: UInt64?) {
        slotLock.withLock { _ in
            finished = (job.number, outcome)
            // An outsized batch's arrays go back to the allocator, not to the next batch.
            spent = job.batch.isOrdinary ? job.batch : nil
            if let oldest { oldestLogged = oldest }
        }
        signal(done.write)
    }

    private func signal(_ fd: Int32) {
        var byte: UInt8 = 1
        while write(fd, &byte, 1) < 0 && errno == EINTR {}
    }
}

/// A read the loop asks the commit thread for.
enum StoreRead: Sendable {
    /// Logged events with a sequence number above `after`, at most `limit`.
    case events(after: UInt64, limit: Int)
}

enum StoreReadResult: Sendable {
    /// The events, and every event-log row found damaged so far (skipped, never sent).
    case events(Result<[LifecycleEvent], StoreError>, damaged: [QuarantinedRow])
}

extension StoreWriter {
    /// Runs one read, under `storeLock`.
    fileprivate func answer(_ request: StoreRead) -> StoreReadResult {
        switch request {
        case .events(let after, let limit):
            let events = Result { () throws(StoreError) in try store.events(after: after, limit: limit) }
            return .events(events, damaged: store.quarantinedEvents)
        }
    }
}

extension StoreBatch {
    /// Small enough that its arrays are worth keeping for the next batch (see KeptCapacity).
    var isOrdinary: Bool {
        sessions.capacity <= KeptCapacity.elements && events.capacity <= KeptCapacity.elements
            && apps.capacity <= KeptCapacity.elements && tasks.capacity <= KeptCapacity.elements
    }
}

enum StoreWriterError: Error, CustomStringConvertible {
    case pipe(Int32)
    case thread(Int32)

    var description: String {
        switch self {
        case .pipe(let e): "cannot create the commit thread's pipe: \(String(cString: strerror(e)))"
        case .thread(let e): "cannot start the commit thread: \(String(cString: strerror(e)))"
        }
    }
}
