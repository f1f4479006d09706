import Glibc
import ProcessKit
import ScenedTestSupport

/// A process a test started: reaped through its pidfd, and at the latest when released killed
/// with its whole process group (it leads one: setsid) and reaped, so that a failing test
/// leaves nothing running.
final class Launched {
    let process: SpawnedProcess
    private(set) var status: ExitStatus?

    init(_ spec: LaunchSpec) throws {
        process = try ProcessSpawner.spawn(spec)
    }

    var pid: pid_t { process.pid }

    /// Reaps it once it has exited within `seconds`; nil if it still runs then.
    @discardableResult
    func waitForExit(seconds: Double = 5) -> ExitStatus? {
        _ = waitUntil(seconds: seconds) { reap() != nil }
        return status
    }

    func reap() -> ExitStatus? {
        if status == nil { status = ProcessSpawner.reap(pidfd: process.pidfd) }
        return status
    }

    /// SIGKILL to its process group (while the leader is unreaped its pid cannot be reused).
    func killGroup() {
        if reap() == nil { killpg(pid, SIGKILL) }
    }

    deinit {
        if reap() == nil {
            killpg(pid, SIGKILL)
            ProcessSpawner.signal(SIGKILL, pidfd: process.pidfd)
            var p = pollfd(fd: process.pidfd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 10_000)
            _ = reap()
        }
        close(process.pidfd)
    }
}

/// A file a child writes its stdout into: the descriptor given in the LaunchSpec.
final class OutputFile {
    let path: String
    let fd: Int32

    init(_ directory: TemporaryDirectory, _ name: String) throws {
        path = directory.file(name)
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw TestFailure("open \(path): \(errnoText())") }
    }

    deinit { close(fd) }

    var text: String { readTextFile(path) }
}

/// The test runner's environment, for programs that need PATH and HOME (python3 via pyenv).
func inheritedEnvironment() -> [String] {
    var entries: [String] = []
    var cursor = environ
    while let entry = cursor.pointee {
        entries.append(String(cString: entry))
        cursor += 1
    }
    return entries
}

/// The /proc/PID/fd entries of a process, sorted.
func openDescriptors(_ pid: pid_t) -> [Int32] {
    guard let dir = opendir("/proc/\(pid)/fd") else { return [] }
    defer { closedir(dir) }
    var fds: [Int32] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let fd = Int32(name) { fds.append(fd) }
    }
    return fds.sorted()
}

/// What descriptor `fd` of `pid` refers to (readlink of /proc/PID/fd/FD), "" if unreadable.
func descriptorTarget(_ pid: pid_t, _ fd: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    guard readlink("/proc/\(pid)/fd/\(fd)", &buffer, buffer.count - 1) > 0 else { return "" }
    return text(buffer)
}

/// True when `pid` is not a zombie child of this process (it was reaped, or never ours).
func isNotOurZombie(_ pid: pid_t) -> Bool {
    guard let stat = ProcessStat(pid: pid) else { return true }
    return !(stat.parentPID == getpid() && stat.state == "Z")
}

let isRoot = geteuid() == 0

/// A NUL-terminated C buffer as a String.
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
