import Glibc
import Varlink

/// A scened process started for a measurement: its own socket, state directory and
/// configuration, and a NOTIFY_SOCKET of ours so that exec → READY=1 can be timed.
final class BenchDaemon {
    let binary: String
    let directory: String
    let socket: String
    let stateDirectory: String
    private(set) var pid: pid_t = 0
    private(set) var readyAfter: Double = 0
    /// Added to the daemon's environment at each start (e.g. DBUS_SYSTEM_BUS_ADDRESS=).
    var environment: [String] = []

    init(binary: String, directory: String) {
        self.binary = binary
        self.directory = directory
        socket = directory + "/sock"
        stateDirectory = directory + "/state"
    }

    /// Starts the daemon with `config` as its configuration file and waits for READY=1.
    func start(config: String) throws {
        let configPath = directory + "/scened.conf"
        try writeFile(configPath, config)
        let notifyPath = directory + "/notify"
        unlink(notifyPath)
        let notify = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard notify >= 0 else { throw BenchError("notify socket: \(errnoText())") }
        defer { close(notify); unlink(notifyPath) }
        try bindUnix(notify, notifyPath)

        let args = [binary, "--socket", socket, "--state-dir", stateDirectory, "--config", configPath]
        var env = ["NOTIFY_SOCKET=\(notifyPath)", "SWIFT_BACKTRACE=enable=no"]
        if let path = getenv("PATH") { env.append("PATH=" + String(cString: path)) }
        env += environment
        let logPath = directory + "/scened.log"
        let start = now()
        pid = try spawn(args, env: env, stdoutPath: "/dev/null", stderrPath: logPath)
        // Wait for READY=1 (or the daemon's death).
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var pfd = pollfd(fd: notify, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 200)
            if r > 0 {
                let n = buffer.withUnsafeMutableBytes { recv(notify, $0.baseAddress, $0.count, 0) }
                if n > 0, String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n").contains("READY=1") {
                    readyAfter = now() - start
                    return
                }
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                throw BenchError("scened exited before READY=1; see \(logPath)")
            }
            if now() - start > 600 { throw BenchError("scened not ready after 600 s") }
        }
    }

    /// SIGTERM and wait.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    /// Whether the daemon has exited (reaped now, without waiting): a stop's end, as its
    /// parent sees it.
    func reapIfExited() -> Bool {
        guard pid > 0 else { return true }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return false }
        pid = 0
        return true
    }

    /// Resident set size of the daemon, bytes.
    func residentBytes() -> Int {
        guard pid > 0, let text = try? readFile("/proc/\(pid)/status") else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let digits = line.split(separator: " ").dropFirst().first ?? "0"
            return (Int(digits) ?? 0) * 1024
        }
        return 0
    }

    /// CPU time the daemon used so far, seconds.
    func cpuSeconds() -> Double {
        guard pid > 0, let text = try? readFile("/proc/\(pid)/stat"),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the comm: state is field 3, utime 14, stime 15 (1-based in proc(5)).
        let utime = Double(fields[11]) ?? 0
        let stime = Double(fields[12]) ?? 0
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func errnoText() -> String { String(cString: strerror(errno)) }

func bindUnix(_ fd: Int32, _ path: String) throws {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < 108 else { throw BenchError("path too long: \(path)") }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
        raw[bytes.count] = 0
    }
    let r = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard r == 0 else { throw BenchError("bind \(path): \(errnoText())") }
}

func spawn(_ args: [String], env: [String], stdoutPath: String, stderrPath: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // The bench blocks nothing, but be explicit: the daemon starts with an empty mask.
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    let argv = args.map { strdup($0) } + [nil]
    let envp = env.map { strdup($0) } + [nil]
    defer {
        for p in argv { free(p) }
        for p in envp { free(p) }
    }
    var pid: pid_t = 0
    let r = posix_spawn(&pid, args[0], &actions, &attributes, argv, envp)
    guard r == 0 else { throw BenchError("spawn \(args[0]): \(String(cString: strerror(r)))") }
    return pid
}

func writeFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchError("open \(path): \(errnoText())") }
    defer { close(fd) }
    var t = text
    t.withUTF8 { _ = write(fd, $0.baseAddress, $0.count) }
}

func readFile(_ path: String) throws -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchError("open \(path): \(errnoText())") }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 8192)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        out += chunk[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}
