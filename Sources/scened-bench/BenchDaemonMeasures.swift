import Glibc

/// What the fairness and hostile figures read from a running daemon, and a stop that cannot
/// hang on a wedged one.
extension BenchDaemon {
    /// The share of one CPU the daemon uses over the next `seconds`, in %.
    func cpuPercent(over seconds: Double) -> Int {
        let before = cpuSeconds()
        let start = now()
        usleep(useconds_t(seconds * 1e6))
        return Int(((cpuSeconds() - before) / (now() - start) * 100).rounded())
    }

    /// VmHWM: the largest RSS since the start, bytes.
    func peakResidentBytes() -> Int {
        guard pid > 0, let text = try? readFile("/proc/\(pid)/status") else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
        }
        return 0
    }

    /// SIGTERM, and SIGKILL if it has not exited within `seconds` (a wedged daemon may never
    /// get to its signal handler); then the usual reaping stop.
    func stopWithin(_ seconds: Double) {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        let deadline = now() + seconds
        // An exited, unreaped child is a zombie: its pid is still ours to signal and reap.
        while now() < deadline && !isZombie { usleep(10_000) }
        if !isZombie { kill(pid, SIGKILL) }
        stop()
    }

    private var isZombie: Bool {
        guard let text = try? readFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return true }
        return text[text.index(after: close)...].split(separator: " ").first == "Z"
    }
}

/// The bench's daemon configuration with a [Limits] section (ignored, with a warning, by a
/// daemon that has none).
func limitsConfig(_ limits: [String]) -> String {
    config(durability: "off") + "\n[Limits]\n" + limits.joined(separator: "\n") + "\n"
}

/// RLIMIT_NOFILE raised to `wanted` (or the hard limit); the limit now in force.
@discardableResult
func raiseOpenFiles(to wanted: Int) -> Int {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0 else { return 0 }
    if limit.rlim_cur < rlim_t(wanted) {
        limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
        _ = setrlimit(resource, &limit)
        _ = getrlimit(resource, &limit)
    }
    return Int(limit.rlim_cur)
}
