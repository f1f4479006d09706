import Glibc
import ProcessKit
import Varlink

// The bench's own cgroups and what it reads of processes (cgroup, Pss and RSS, whether one is gone).

/// A v2 cgroup the bench moves into (below the one it was started in) for the run; `end` moves
/// it back, kills whatever is left below and removes the directories. Nil without a writable
/// cgroup v2 hierarchy (not root): then the run goes on where the bench is.
final class BenchCgroup {
    let home: String
    let path: String

    init?() {
        guard let own = Cgroup.own(), Cgroup(path: own).isWritable else { return nil }
        home = own
        path = own + "/scened-bench.\(getpid())"
        do {
            try Cgroup.create(path)
            try Cgroup(path: path).add(getpid())
        } catch {
            rmdir(path)
            return nil
        }
    }

    func end() {
        for sig in [SIGINT, SIGTERM, SIGHUP] { signal(sig, SIG_DFL) }
        try? Cgroup(path: home).add(getpid())
        Self.remove(path)
    }

    /// At SIGINT, SIGTERM or SIGHUP (no defer runs then): the bench moves home and kills
    /// everything below its cgroup (the daemon, the apps, the scratch processes), then dies of
    /// the signal. The empty directories stay; the next scened removes its stale ones.
    func killOnSignals() {
        benchSignalHome = strdup(home + "/cgroup.procs")
        benchSignalKill = strdup(path + "/cgroup.kill")
        benchSignalPid = strdup("\(getpid())\n")
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { sig in
                // Async-signal-safe only: open, write, close, signal, raise.
                for (file, text) in [(benchSignalHome, benchSignalPid), (benchSignalKill, benchSignalOne)] {
                    guard let file, let text else { continue }
                    let fd = open(file, O_WRONLY)
                    if fd >= 0 {
                        _ = write(fd, text, strlen(text))
                        close(fd)
                    }
                }
                signal(sig, SIG_DFL)
                raise(sig)
            }
        }
    }

    private static func remove(_ dir: String) {
        let cgroup = Cgroup(path: dir)
        try? cgroup.kill()
        try? cgroup.thaw()
        let deadline = now() + 5
        while (try? cgroup.events())?.populated == true && now() < deadline { usleep(1_000) }
        if let d = opendir(dir) {
            var children: [String] = []
            while let entry = readdir(d) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != ".", name != "..", entry.pointee.d_type == UInt8(DT_DIR) { children.append(dir + "/" + name) }
            }
            closedir(d)
            for child in children { remove(child) }
        }
        rmdir(dir)
    }
}

/// The v2 cgroup directory of a process, from /proc/PID/cgroup's "0::" line.
func cgroupDirectory(of pid: Int32) -> String? {
    guard let root = Cgroup.hierarchy(), let text = try? readFile("/proc/\(pid)/cgroup"),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) else { return nil }
    let relative = String(line.dropFirst(3))
    return relative == "/" ? root : root + relative
}

/// The `Pss:` and `Rss:` of /proc/PID/smaps_rollup, bytes (0 for a process gone).
func pssAndRss(of pid: Int32) -> (pss: Int, rss: Int) {
    guard let text = try? readFile("/proc/\(pid)/smaps_rollup") else { return (0, 0) }
    var pss = 0, rss = 0
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2, let kib = Int(fields[1]) else { continue }
        if fields[0] == "Pss:" { pss = kib * 1024 }
        if fields[0] == "Rss:" { rss = kib * 1024 }
    }
    return (pss, rss)
}

func processIsGone(_ pid: Int32) -> Bool { access("/proc/\(pid)", F_OK) != 0 }

func waitFor(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
    let deadline = now() + timeout
    while !(try condition()) {
        if now() > deadline { throw BenchError("not within \(timeout) s: \(what)") }
        usleep(1_000)
    }
}

func mib(_ bytes: Int) -> String {
    let v = (Double(bytes) / Double(1 << 20) * 10).rounded() / 10
    return "\(v) MiB"
}
