import Glibc
import SceneCore
import SystemdKit

/// Linux pressure stall information (reclaim-policy.md §4) as a pressure source.
///
/// Arms two triggers on the pressure file (`some` stall → warning, `full` stall → critical),
/// each on its own descriptor (a second write on one fd is EBUSY). Falls back as §4.7 says:
/// a 1 s window is refused with EINVAL without CAP_SYS_RESOURCE, so retry with the 2 s window
/// unprivileged openers may use; where triggers are refused altogether (EPERM, EOPNOTSUPP, or
/// a file that is neither procfs nor cgroupfs, e.g. a test's fake), poll `total=` every half
/// second and compute the stall growth over the window ourselves. POLLERR means the source is
/// gone (cgroup removed, PSI disabled): it is re-opened with backoff, never taken as pressure.
final class PSISource {
    enum Mode: Equatable {
        case triggers(windowUSec: UInt64)
        case polling
        case unavailable(String)

        var description: String {
            switch self {
            case .triggers(let w): "triggers (\(w / 1000) ms window)"
            case .polling: "polling"
            case .unavailable(let why): "unavailable: \(why)"
            }
        }
    }

    struct Settings: Equatable {
        var path = "/proc/pressure/memory"
        /// Stall per window that means warning (`some`) and critical (`full`).
        var warningStallUSec: UInt64 = 100_000
        var criticalStallUSec: UInt64 = 100_000
        var windowUSec: UInt64 = 1_000_000
        /// The level holds this many windows after the last event before it drops.
        var holdWindows: UInt64 = 2
        var pollIntervalUSec: UInt64 = 500_000
    }

    /// What its loop sources report (`DaemonInput.psi`), for `handle`.
    enum Input {
        case trigger(PressureLevel, IOEvents)
        case holdExpired
        case poll
        case retry
    }

    let loop: EventLoop
    let inbox: LoopInbox<DaemonInput>
    let settings: Settings
    private(set) var mode: Mode = .unavailable("not started")
    private(set) var level: PressureLevel = .normal
    /// The level changed since the last `handle` returned.
    private var changed = false

    private var someFD: Int32 = -1
    private var fullFD: Int32 = -1
    private var sources: [IOSource] = []
    private var pollTimer: TimerSource?
    private var holdTimer: TimerSource?
    private var retryTimer: TimerSource?
    private var retryDelay: UInt64 = 1_000_000
    private var lastEventAt: [PressureLevel: UInt64] = [:]
    private var window: UInt64 = 1_000_000
    /// Polling: samples of (time, some total, full total) within the last window.
    private var samples: [(at: UInt64, some: UInt64, full: UInt64)] = []

    init(loop: EventLoop, inbox: LoopInbox<DaemonInput>, settings: Settings) {
        self.loop = loop
        self.inbox = inbox
        self.settings = settings
        window = settings.windowUSec
    }

    // stop(), not just closeAll(): the hold and retry timers belong to the loop, and a freed
    // source must not leave them posting.
    deinit { stop() }

    /// One of its sources fired. Returns whether the level changed.
    func handle(_ input: Input) -> Bool {
        changed = false
        switch input {
        case .trigger(let level, let events): onTrigger(level, events)
        case .holdExpired: onHoldExpired()
        case .poll: poll()
        case .retry: retry()
        }
        return changed
    }

    func start() {
        closeAll()
        retryDelay = 1_000_000
        mode = open()
        switch mode {
        case .unavailable(let why):
            Diagnostics.warning("PSI source \(settings.path): \(why); retrying")
            scheduleRetry()
        default:
            Diagnostics.info("PSI source \(settings.path): \(mode.description)")
        }
    }

    private func open() -> Mode {
        let probe = Glibc.open(settings.path, O_RDONLY | O_CLOEXEC)
        if probe < 0 { return .unavailable(String(cString: strerror(errno))) }
        let kernelFile = Self.isKernelPressureFile(probe)
        close(probe)
        guard kernelFile else { return startPolling() }

        // Privileged form first, then the unprivileged 2 s window.
        var windows = [settings.windowUSec]
        if settings.windowUSec % 2_000_000 != 0 { windows.append(2_000_000 * max(1, (settings.windowUSec + 1_999_999) / 2_000_000)) }
        for w in windows {
            let scale = Double(w) / Double(settings.windowUSec)
            let someStall = UInt64(Double(settings.warningStallUSec) * scale)
            let fullStall = UInt64(Double(settings.criticalStallUSec) * scale)
            switch arm("some", stall: someStall, window: w) {
            case .success(let fd):
                switch arm("full", stall: fullStall, window: w) {
                case .success(let fd2):
                    someFD = fd
                    fullFD = fd2
                    window = w
                    guard watch(fd, .warning), watch(fd2, .critical) else {
                        closeAll()
                        return startPolling()
                    }
                    return .triggers(windowUSec: w)
                case .failure(let e):
                    close(fd)
                    if e.code == EINVAL { continue }
                    return startPolling()
                }
            case .failure(let e):
                if e.code == EINVAL { continue }
                if e.code == EPERM || e.code == EACCES || e.code == EOPNOTSUPP || e.code == EBUSY { return startPolling() }
                return .unavailable(String(cString: strerror(e.code)))
            }
        }
        return startPolling()
    }

    /// procfs or cgroup2: only there does writing a trigger mean anything.
    static func isKernelPressureFile(_ fd: Int32) -> Bool {
        guard let magic = FileSystemType.magic(of: fd) else { return false }
        return magic == FileSystemType.proc || magic == FileSystemType.cgroup2
    }

    private func arm(_ kind: String, stall: UInt64, window: UInt64) -> Result<Int32, Int32Error> {
        let fd = Glibc.open(settings.path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 { return .failure(Int32Error(errno)) }
        // The kernel overwrites the last byte it copies with NUL: always send our own.
        let spec = "\(kind) \(stall) \(window)"
        var bytes = Array(spec.utf8)
        bytes.append(0)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            let e = errno
            close(fd)
            return .failure(Int32Error(e))
        }
        return .success(fd)
    }

    private func watch(_ fd: Int32, _ level: PressureLevel) -> Bool {
        do {
            let source = try loop.addIO(fd: fd, events: [.priority], posting: { .psi(.trigger(level, $0)) }, to: inbox)
            sources.append(source)
            return true
        } catch {
            return false
        }
    }

    private func onTrigger(_ level: PressureLevel, _ events: IOEvents) {
        if events.contains(.error) {
            // The file went away (cgroup removed, PSI switched off): not pressure.
            Diagnostics.warning("PSI source \(settings.path) reported an error; re-opening")
            closeAll()
            mode = .unavailable("source gone")
            // Events from before are about a file that no longer exists: forget them.
            lastEventAt.removeAll()
            holdTimer?.disarm()
            setLevel(.normal)
            scheduleRetry()
            return
        }
        guard events.contains(.priority) else { return }
        noteStall(level)
    }

    private func noteStall(_ stalled: PressureLevel) {
        let now = Clock.monotonic.now()
        lastEventAt[stalled] = now
        if stalled > level { setLevel(stalled) }
        armHold(now)
    }

    /// The level drops a hold time after the last event of that level.
    private func armHold(_ now: UInt64) {
        let holdFor = settings.holdWindows * window
        if holdTimer == nil {
            holdTimer = try? loop.addTimer(at: now + holdFor, accuracy: 10_000, priority: 20, posting: .psi(.holdExpired), to: inbox)
        } else {
            holdTimer?.reschedule(at: now + holdFor)
        }
    }

    private func onHoldExpired() {
        let now = Clock.monotonic.now()
        let holdFor = settings.holdWindows * window
        var newLevel = PressureLevel.normal
        for (l, at) in lastEventAt where now < at + holdFor && l > newLevel { newLevel = l }
        setLevel(newLevel)
        if newLevel != .normal { armHold(now) }
    }

    private func setLevel(_ new: PressureLevel) {
        guard new != level else { return }
        level = new
        changed = true
    }

    // MARK: - Polling

    private func startPolling() -> Mode {
        window = settings.windowUSec
        samples.removeAll()
        pollTimer = try? loop.addTimer(at: Clock.monotonic.now(), accuracy: 10_000, priority: 20, posting: .psi(.poll), to: inbox)
        return pollTimer == nil ? .unavailable("cannot arm the poll timer") : .polling
    }

    private func poll() {
        let now = Clock.monotonic.now()
        defer { pollTimer?.reschedule(at: now + settings.pollIntervalUSec) }
        guard let totals = Self.readTotals(settings.path) else {
            // Unreadable now: not pressure; keep trying.
            return
        }
        if let previous = samples.last, totals.some < previous.some || totals.full < previous.full {
            // The counters went backwards (the file was replaced, e.g. a cgroup re-created):
            // a new history, not a negative (wrapped, overflowing) growth.
            samples.removeAll()
        }
        samples.append((now, totals.some, totals.full))
        // Keep the samples of the last window, and always the newest (taken `now`). The closure
        // must not read `samples`: that is an overlapping access to the array removeAll is
        // mutating, which traps at run time ("Simultaneous accesses").
        samples.removeAll { $0.at + window < now && $0.at != now }
        guard let oldest = samples.first, oldest.at < now else { return }
        let span = Double(now - oldest.at)
        // Scale growth to the window so that a short history is not under-counted; in floating
        // point, so that a large growth cannot overflow the multiplication.
        let someGrowth = Double(totals.some - oldest.some) * Double(window) / span
        let fullGrowth = Double(totals.full - oldest.full) * Double(window) / span
        if fullGrowth >= Double(settings.criticalStallUSec) {
            noteStall(.critical)
        } else if someGrowth >= Double(settings.warningStallUSec) {
            noteStall(.warning)
        }
    }

    /// Parses `some ... total=N` and `full ... total=N`.
    static func readTotals(_ path: String) -> (some: UInt64, full: UInt64)? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self)
        var some: UInt64?
        var full: UInt64?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard let kind = parts.first, let totalField = parts.first(where: { $0.hasPrefix("total=") }),
                  let total = UInt64(totalField.dropFirst(6)) else { continue }
            if kind == "some" { some = total }
            if kind == "full" { full = total }
        }
        guard let some else { return nil }
        return (some, full ?? 0)
    }

    // MARK: - Lifetime

    private func scheduleRetry() {
        let at = Clock.monotonic.now() + retryDelay
        retryDelay = min(retryDelay * 2, 60_000_000)
        if retryTimer == nil {
            retryTimer = try? loop.addTimer(at: at, accuracy: 100_000, priority: 20, posting: .psi(.retry), to: inbox)
        } else {
            retryTimer?.reschedule(at: at)
        }
    }

    private func retry() {
        mode = open()
        if case .unavailable = mode { scheduleRetry() } else {
            retryDelay = 1_000_000
            Diagnostics.info("PSI source \(settings.path): \(mode.description)")
        }
    }

    func closeAll() {
        for s in sources { s.cancel() }
        sources.removeAll()
        if someFD >= 0 { close(someFD); someFD = -1 }
        if fullFD >= 0 { close(fullFD); fullFD = -1 }
        pollTimer?.cancel()
        pollTimer = nil
    }

    func stop() {
        closeAll()
        holdTimer?.cancel()
        holdTimer = nil
        retryTimer?.cancel()
        retryTimer = nil
    }
}

struct Int32Error: Error, Equatable {
    let code: Int32
    init(_ code: Int32) { self.code = code }
}
