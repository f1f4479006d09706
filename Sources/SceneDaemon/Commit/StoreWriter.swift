import Glibc
import SceneStore

/// Commits batches on a thread of its own, so that the event loop keeps parsing, applying and
/// answering calls (for the next batch) while SQLite writes and fsyncs the previous one. One
/// batch is in flight at a time; the loop learns of its completion through a pipe it watches.
///
/// The store is shared with the loop thread for reads (the event log, a reload after a failed
/// commit); every use of it holds `storeLock`.
final class StoreWriter: @unchecked Sendable {
    // @unchecked: `store` is used only under `storeLock`, `slot` only under `slotLock`; the
    // descriptors are written once before the thread starts.
    private let store: SceneStore
    private let storeLock = Lock()
    private let slotLock = Lock()
    private var queued: (number: UInt64, batch: StoreBatch)?
    private var finished: (number: UInt64, result: Result<Void, StoreError>)?
    private var stopping = false
    /// Test hook: seconds to sleep before the next commit.
    private var stall: UInt32 = 0
    /// loop → writer: "a batch is queued" (or "stop").
    private var wake: (read: Int32, write: Int32) = (-1, -1)
    /// writer → loop: "a batch is done"; the loop watches `completionFD`.
    private var done: (read: Int32, write: Int32) = (-1, -1)
    private var thread = pthread_t()
    private var running = false

    init(store: SceneStore) throws {
        self.store = store
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

    /// Readable when a batch has finished: the loop then calls `takeFinished`.
    var completionFD: Int32 { done.read }

    func start() throws {
        let context = Unmanaged.passRetained(self).toOpaque()
        let r = pthread_create(&thread, nil, { context in
            let writer = Unmanaged<StoreWriter>.fromOpaque(context!).takeRetainedValue()
            writer.run()
            return nil
        }, context)
        guard r == 0 else {
            Unmanaged<StoreWriter>.fromOpaque(context).release()
            throw StoreWriterError.thread(r)
        }
        running = true
    }

    /// Queues a batch (the previous one must have finished).
    func submit(_ batch: StoreBatch, number: UInt64) {
        slotLock.locked { queued = (number, batch) }
        signal(wake.write)
    }

    /// The finished batch, if any (called when `completionFD` is readable).
    func takeFinished() -> (number: UInt64, result: Result<Void, StoreError>)? {
        var byte: UInt8 = 0
        while read(done.read, &byte, 1) > 0 {}
        return slotLock.locked {
            let result = finished
            finished = nil
            return result
        }
    }

    /// Runs `body` with the store while no commit runs.
    func withStore<R>(_ body: (SceneStore) throws -> R) rethrows -> R {
        try storeLock.locked { try body(store) }
    }

    /// Test hook: the next commit waits `seconds` first, as a stuck disk would make it.
    func stallNextCommit(seconds: UInt32) {
        slotLock.locked { stall = seconds }
    }

    /// Lets the queued batch finish, then ends the thread.
    func stop() {
        guard running else { return }
        slotLock.locked { stopping = true }
        signal(wake.write)
        pthread_join(thread, nil)
        running = false
    }

    private func run() {
        var byte: UInt8 = 0
        while true {
            let n = read(wake.read, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            let (job, stop, pause) = slotLock.locked { () -> ((number: UInt64, batch: StoreBatch)?, Bool, UInt32) in
                let job = queued
                queued = nil
                let pause = job == nil ? 0 : stall
                if job != nil { stall = 0 }
                return (job, stopping, pause)
            }
            if pause > 0 { sleep(pause) }
            if let job {
                let result: Result<Void, StoreError> = storeLock.locked {
                    Result { () throws(StoreError) in try store.commit(job.batch) }
                }
                slotLock.locked { finished = (job.number, result) }
                signal(done.write)
            }
            if stop || n == 0 { return }
        }
    }

    private func signal(_ fd: Int32) {
        var byte: UInt8 = 1
        while write(fd, &byte, 1) < 0 && errno == EINTR {}
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

/// A pthread mutex (the daemon does not use Foundation).
final class Lock: @unchecked Sendable {
    // @unchecked: the mutex itself is the synchronisation.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func locked<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
