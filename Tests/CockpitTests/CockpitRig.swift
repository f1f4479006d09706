import Glibc
import ScenedTestSupport
import Testing

/// Where the repository's files are: the page (cockpit/scened) and the browser script.
enum CockpitPaths {
    static let repository: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()
    static var page: String { repository + "/cockpit/scened" }
    static var script: String { repository + "/Tests/Cockpit/cockpit_page_test.py" }
    static let python = "/usr/bin/python3"
    static let cockpitWS = "/usr/lib/cockpit/cockpit-ws"
    static let bridge = "/usr/bin/cockpit-bridge"

    /// Fails (never skips) when a tool is missing: packaging/dev-deps installs them.
    static func requireTools() throws {
        for tool in [cockpitWS, bridge, "/usr/bin/chromium", "/usr/bin/chromedriver", python, script]
        where access(tool, X_OK) != 0 && access(tool, R_OK) != 0 {
            throw TestFailure("\(tool) is missing; run packaging/dev-deps (cockpit-ws, cockpit-bridge, chromium, chromium-driver, python3-selenium)")
        }
        let probe = try run([python, "-c", "import selenium"], timeout: 30)
        guard probe.status == 0 else { throw TestFailure("Debian's python3 cannot import selenium (python3-selenium)\n\(probe.summary)") }
    }
}

/// A user made for one test and removed after it: the page is tested as someone who is not an
/// administrator of scened, with the credentials the kernel vouches for.
final class TestAccount {
    let name: String

    init() throws {
        name = "sctck" + String(UInt32(truncatingIfNeeded: monotonicNanoseconds() ^ UInt64(getpid()) << 20) % 0xFFFFFF, radix: 16)
        let made = try run(["/usr/sbin/useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name])
        guard made.status == 0 else { throw TestFailure("useradd failed\n\(made.summary)") }
    }

    var uid: uid_t { getpwnam(name)?.pointee.pw_uid ?? uid_t.max }

    private var removed = false

    /// Removes the user; a failure (a process of the user's left running) fails the test.
    func remove() {
        guard !removed else { return }
        removed = true
        let result = try? run(["/usr/sbin/userdel", name])
        if result?.status != 0 { Issue.record("userdel \(name) failed: \(result?.summary ?? "did not run")") }
    }

    deinit { remove() }
}

/// The page as Cockpit finds it: DIR/cockpit/scened, copied so that another user can read it
/// wherever the checkout lives.
func installPage(into dataDirectory: String) throws {
    let target = dataDirectory + "/cockpit/scened"
    try makeDirectories(target)
    for file in directoryEntries(CockpitPaths.page) {
        guard try copyFile(CockpitPaths.page + "/" + file, to: target + "/" + file) else {
            throw TestFailure("cannot copy \(file) of the page")
        }
    }
    _ = try run(["/bin/chmod", "-R", "a+rX", dataDirectory])
}

/// A free TCP port on the loopback (the kernel's choice; cockpit-ws takes it a moment later).
func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: \(errnoText())") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestFailure("bind: \(errnoText())") }
    return UInt16(bigEndian: address.sin_port)
}

func loopbackPortAccepts(_ port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// The live processes whose session id is `session` (from /proc; zombies are not counted).
func sessionMembers(_ session: pid_t) -> [pid_t] {
    directoryEntries("/proc").compactMap { entry -> pid_t? in
        guard let pid = pid_t(entry) else { return nil }
        let stat = readTextFile("/proc/\(pid)/stat")
        // After the command name (in parentheses, which may hold spaces): state, ppid, pgrp, session.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 3, fields[0] != "Z", pid_t(fields[3]) == session else { return nil }
        return pid
    }
}

/// Ends every process left in session `session` (SIGTERM, then SIGKILL after 5 s): what a
/// program run with setsid started and left behind.
func endSession(_ session: pid_t) {
    var left = sessionMembers(session)
    for pid in left { kill(pid, SIGTERM) }
    if !waitUntil(seconds: 5, { left = sessionMembers(session); return left.isEmpty }) {
        for pid in left { kill(pid, SIGKILL) }
    }
}
