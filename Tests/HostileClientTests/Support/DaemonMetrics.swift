import Glibc
import ScenedTestSupport

/// What the daemon costs, read from /proc while it runs.
extension DaemonProcess {
    /// The share of one CPU (utime + stime) the daemon uses over the next `seconds`: a busy
    /// loop is about 100, an idle daemon about 0.
    func cpuPercent(over seconds: Double) throws -> Double {
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let before = try cpuTicks()
        let start = monotonicSeconds()
        sleepMilliseconds(Int(seconds * 1000))
        let after = try cpuTicks()
        return Double(after - before) / ticksPerSecond / (monotonicSeconds() - start) * 100
    }

    /// VmRSS, bytes.
    var residentBytes: Int { statusKilobytes("VmRSS") * 1024 }

    /// VmHWM, the largest RSS since the start, bytes: a peak no sampling can miss.
    var peakResidentBytes: Int { statusKilobytes("VmHWM") * 1024 }

    /// Open file descriptors.
    var openDescriptors: Int {
        guard let dir = opendir("/proc/\(pid)/fd") else { return 0 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return count
    }

    private func statusKilobytes(_ field: String) -> Int {
        let line = readTextFile("/proc/\(pid)/status").split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    }

    /// Bytes the daemon wrote to stderr so far (its log when not under journald).
    var logBytes: Int { fileSize(child.stderrPath) ?? 0 }
}

func mebibytes(_ bytes: Int) -> String { "\(bytes >> 20) MiB" }

/// RLIMIT_NOFILE of this process, raised to at least `wanted` (up to the hard limit), for tests
/// that hold thousands of connections.
func raiseOpenFileLimit(to wanted: Int) throws {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0 else { throw TestFailure("getrlimit: \(errnoText())") }
    if limit.rlim_cur >= rlim_t(wanted) { return }
    guard limit.rlim_max >= rlim_t(wanted) else {
        throw TestFailure("RLIMIT_NOFILE hard limit \(limit.rlim_max) is below the \(wanted) this test needs")
    }
    limit.rlim_cur = rlim_t(wanted)
    guard setrlimit(resource, &limit) == 0 else { throw TestFailure("setrlimit: \(errnoText())") }
}
