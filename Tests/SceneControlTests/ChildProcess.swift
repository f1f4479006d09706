import Glibc

/// A child process with its stdout on a pipe we read and its stderr in a file.
final class ChildProcess {
    let pid: pid_t
    /// The read end of the child's stdout; -1 once closed.
    private(set) var stdout: Int32
    let stderrPath: String
    private var buffered: [UInt8] = []

    init(_ arguments: [String], stderrPath: String) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw ChildError("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, arguments[0], &actions, nil, argv, environ)
        close(pipeFDs[1])
        guard result == 0 else {
            close(pipeFDs[0])
            throw ChildError("posix_spawn \(arguments[0]) failed: \(String(cString: strerror(result)))")
        }
        pid = child
        stdout = pipeFDs[0]
        self.stderrPath = stderrPath
    }

    deinit {
        if stdout >= 0 { close(stdout) }
    }

    /// The next line of stdout (without the newline), or nil after `seconds` or at EOF.
    func readLine(seconds: Int32 = 5) -> String? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            var entry = pollfd(fd: stdout, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, seconds * 1000) == 1 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(stdout, &chunk, chunk.count)
            guard n > 0 else { return nil }
            buffered += chunk[..<n]
        }
    }

    func closeStdout() {
        close(stdout)
        stdout = -1
    }

    /// Waits up to `seconds` for the child to end; its exit code, or nil (then it is killed).
    func wait(seconds: Double = 10) -> (exitCode: Int32?, signal: Int32?) {
        let deadline = monotonicSeconds() + seconds
        var status: Int32 = 0
        while monotonicSeconds() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid {
                // WIFEXITED / WEXITSTATUS / WTERMSIG spelled out: the macros are not imported.
                let signal = status & 0x7f
                return signal == 0 ? ((status >> 8) & 0xff, nil) : (nil, signal)
            }
            usleep(5_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return (nil, nil)
    }

    var stderr: String {
        guard let file = fopen(stderrPath, "r") else { return "" }
        defer { fclose(file) }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            out += chunk[..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}

struct ChildError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The scenectl binary built next to this test binary.
func scenectlBinary() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let exe = String(decoding: buffer[..<max(n, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var parts = exe.split(separator: "/", omittingEmptySubsequences: false)
    // The test binary is .../debug/scenedPackageTests.xctest (a file on Linux).
    while let last = parts.last, !last.hasSuffix(".xctest") { parts.removeLast() }
    parts.removeLast()
    return parts.joined(separator: "/") + "/scenectl"
}
