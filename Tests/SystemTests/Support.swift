import Foundation
import Glibc

/// Errors of the harness itself (as opposed to failed expectations about scened).
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What a finished command left behind.
struct CommandResult: CustomStringConvertible {
    let arguments: [String]
    /// Exit status, 128+signal when killed; -1 when it could not be started.
    let status: Int32
    let stdout: String
    let stderr: String
    let timedOut: Bool

    var succeeded: Bool { status == 0 && !timedOut }

    var description: String {
        var text = "$ \(arguments.joined(separator: " "))\n-> status \(status)\(timedOut ? " (timed out, killed)" : "")"
        if !stdout.isEmpty { text += "\n--- stdout\n" + String(stdout.suffix(4000)) }
        if !stderr.isEmpty { text += "\n--- stderr\n" + String(stderr.suffix(4000)) }
        return text
    }
}

/// CLOCK_MONOTONIC in µs: the clock systemd's *TimestampMonotonic properties, MONOTONIC_USEC=
/// and the journal's __MONOTONIC_TIMESTAMP use (no time namespace is involved).
func monotonicMicroseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
}

func monotonicSeconds() -> Double { Double(monotonicMicroseconds()) / 1e6 }

func sleepSeconds(_ seconds: Double) { usleep(UInt32(max(0, seconds) * 1e6)) }

/// Polls `condition` until it is true or `seconds` passed; returns its last value.
@discardableResult
func waitUntil(seconds: Double, interval: Double = 0.05, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicSeconds() + seconds
    while true {
        if try condition() { return true }
        if monotonicSeconds() > deadline { return false }
        sleepSeconds(interval)
    }
}

/// A private directory under /tmp (on the host), removed with its content by `remove()`.
struct ScratchDirectory {
    let path: String

    init(prefix: String) throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw HarnessError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

func readTextFile(_ path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return String(decoding: data, as: UTF8.self)
}

func writeTextFile(_ path: String, _ text: String) throws {
    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
        throw HarnessError("cannot write \(path)")
    }
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// Runs a program, stdin from /dev/null (or `stdinFD`), stdout and stderr captured in files.
/// Kills it (by pid) when it outlives `timeout`.
func runCommand(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 60) -> CommandResult {
    let scratch: ScratchDirectory
    do { scratch = try ScratchDirectory(prefix: "scened-systest-cmd") } catch {
        return CommandResult(arguments: arguments, status: -1, stdout: "", stderr: "\(error)", timedOut: false)
    }
    defer { scratch.remove() }
    let spawned = spawn(arguments, environment: environment, stdinPath: "/dev/null",
                        stdoutPath: scratch.file("out"), stderrPath: scratch.file("err"))
    guard case .success(let pid) = spawned else {
        if case .failure(let error) = spawned {
            return CommandResult(arguments: arguments, status: -1, stdout: "", stderr: "\(error)", timedOut: false)
        }
        fatalError("unreachable")
    }
    let (status, timedOut) = waitForExit(pid, timeout: timeout)
    return CommandResult(arguments: arguments, status: status, stdout: readTextFile(scratch.file("out")) ?? "",
                         stderr: readTextFile(scratch.file("err")) ?? "", timedOut: timedOut)
}

/// posix_spawn with the given stdio; `stdinFD` (if any) wins over `stdinPath`.
func spawn(_ arguments: [String], environment: [String: String]? = nil, stdinPath: String = "/dev/null",
           stdinFD: Int32? = nil, stdoutPath: String, stderrPath: String) -> Result<pid_t, HarnessError> {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let stdinFD {
        posix_spawn_file_actions_adddup2(&actions, stdinFD, 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath, O_RDONLY, 0)
    }
    posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)

    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment ?? [:] { env[key] = value }
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
    guard rc == 0 else {
        return .failure(HarnessError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))"))
    }
    return .success(pid)
}

/// Waits for `pid`; after `timeout` kills it with SIGKILL. Returns (status or 128+signal, timedOut).
func waitForExit(_ pid: pid_t, timeout: Double) -> (Int32, Bool) {
    let deadline = monotonicSeconds() + timeout
    var status: Int32 = 0
    var timedOut = false
    while true {
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { break }
        if r < 0 && errno != EINTR { return (-1, false) }
        if monotonicSeconds() > deadline {
            timedOut = true
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            break
        }
        usleep(2_000)
    }
    let signal = status & 0x7f
    return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, timedOut)
}

/// The directory of the running test bundle (SwiftPM's bin dir, holding scened and scenectl too).
func testBinaryDirectory() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return (path as NSString).deletingLastPathComponent
}

/// The package's root, from this file's path (Tests/SystemTests/Support.swift).
func packageRoot(_ file: String = #filePath) -> String {
    var url = URL(fileURLWithPath: file)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}

/// Where the scened and scenectl under test are: $SCENED_SYSTEST_BIN_DIR (e.g. a release build, for
/// figures worth quoting), else next to the test bundle (what `swift test` just built).
func binariesUnderTest() throws -> String {
    let dir = ProcessInfo.processInfo.environment["SCENED_SYSTEST_BIN_DIR"] ?? testBinaryDirectory()
    for name in ["scened", "scenectl"] where access(dir + "/" + name, X_OK) != 0 {
        throw HarnessError("no executable \(dir)/\(name): build the products first (swift build), or set SCENED_SYSTEST_BIN_DIR")
    }
    return dir
}

/// Why this process cannot run the namespace-based tests, or nil when it can. The tests FAIL
/// with this reason: CI runs them as root on a Debian with systemd installed.
func privilegeProblem(tools: [String]) -> String? {
    if geteuid() != 0 {
        return "needs root (unshare --mount, tmpfs mounts, cgroup creation); CI runs as root, run 'sudo swift test --filter SystemTests' locally"
    }
    for tool in tools where access(tool, X_OK) != 0 {
        return "\(tool) is missing: install systemd and util-linux (packaging/dev-deps)"
    }
    return nil
}

/// Parses `systemctl show` output (KEY=VALUE lines).
func parseProperties(_ text: String) -> [String: String] {
    var out: [String: String] = [:]
    for line in text.split(separator: "\n") {
        guard let eq = line.firstIndex(of: "=") else { continue }
        out[String(line[..<eq])] = String(line[line.index(after: eq)...])
    }
    return out
}

/// Values of a journal JSON field: a string, or an array of strings when repeated.
func journalValues(_ entry: [String: Any], _ field: String) -> [String] {
    if let s = entry[field] as? String { return [s] }
    if let a = entry[field] as? [Any] { return a.compactMap { $0 as? String } }
    return []
}

/// `journalctl -o json` output: one object per line.
func parseJournalJSON(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { line in
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// Progress and figures on stdout, so a CI log shows where time went.
func report(_ line: String) {
    print("[SystemTests] \(line)")
    fflush(nil)
}
