import Glibc
import Locking
import SceneInterface
import SystemdKit

/// While the store loads (a large one can outlast TimeoutStartSec=), tells systemd to wait
/// longer: EXTEND_TIMEOUT_USEC= every `interval`, with a STATUS= saying so, but only while the
/// process makes progress (its CPU time or the bytes it read grew since the last tick), so a
/// load that hangs still runs into the start timeout.
final class LoadHeartbeat: Sendable {
    /// Each extension covers three intervals: a late tick must not let the timeout strike.
    static let defaultInterval: UInt64 = 2_000_000

    // The project's lock (a pthread mutex under ThreadSanitizer, which reported Mutex's
    // futex handoff here as a race; see Locked).
    private let stopped = Locked(false)
    let interval: UInt64

    /// What the heartbeat looks at to judge progress.
    struct Sample: Equatable {
        var cpu: UInt64
        var readBytes: UInt64

        static func current() -> Sample {
            var ts = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
            return Sample(cpu: UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000, readBytes: readChars())
        }

        /// rchar of /proc/self/io: every byte read(2) and pread(2) returned, cached or not.
        static func readChars() -> UInt64 {
            let fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return 0 }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return 0 }
            for line in String(decoding: buffer[..<n], as: UTF8.self).split(separator: "\n") where line.hasPrefix("rchar: ") {
                return UInt64(line.dropFirst(7).prefix { $0.isNumber }) ?? 0
            }
            return 0
        }
    }

    /// Progress since `before`: at least 1 % of the interval on the CPU, or any byte read.
    static func progressed(from before: Sample, to after: Sample, interval: UInt64) -> Bool {
        after.cpu >= before.cpu + interval / 100 || after.readBytes > before.readBytes
    }

    /// The message for the `elapsed`-th µs of loading.
    static func message(interval: UInt64, elapsed: UInt64) -> String {
        "EXTEND_TIMEOUT_USEC=\(3 * interval)\nSTATUS=Loading the session database (\(elapsed / 1_000_000)s)..."
    }

    /// The interval: the default, or SCENED_TEST_LOAD_HEARTBEAT_MS when the test hooks are on
    /// (SCENED_TEST_HOOKS=1), so that a test sees ticks without a store that takes seconds.
    static func configuredInterval() -> UInt64 {
        guard TestingInterface.enabled, let text = DaemonPaths.environment("SCENED_TEST_LOAD_HEARTBEAT_MS"),
              let ms = UInt64(text), ms > 0 else { return defaultInterval }
        return ms * 1000
    }

    /// Starts the ticks on a thread of their own; none at all without a NOTIFY_SOCKET.
    static func start(interval: UInt64 = configuredInterval()) -> LoadHeartbeat {
        let heartbeat = LoadHeartbeat(interval: interval)
        guard getenv("NOTIFY_SOCKET") != nil else { return heartbeat }
        OSThread.detach { heartbeat.tick() }
        return heartbeat
    }

    private init(interval: UInt64) {
        self.interval = interval
    }

    private func tick() {
        let began = Self.monotonic()
        var last = Sample.current()
        while !stopped.withLock({ $0 }) {
            var pause = timespec(tv_sec: Int(interval / 1_000_000), tv_nsec: Int(interval % 1_000_000) * 1000)
            var left = timespec()
            while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
            let now = Sample.current()
            // Checked under the lock: once stop() returned, no message of the load follows READY.
            stopped.withLock { stopped in
                guard !stopped, Self.progressed(from: last, to: now, interval: interval) else { return }
                ServiceManager.notify(Self.message(interval: interval, elapsed: Self.monotonic() - began))
            }
            last = now
        }
    }

    /// No message is sent after this returns.
    func stop() {
        stopped.withLock { $0 = true }
    }

    private static func monotonic() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
    }
}
