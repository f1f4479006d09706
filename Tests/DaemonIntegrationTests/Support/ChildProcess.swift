import Glibc

/// A program started with posix_spawn: stdout and stderr go to files in `directory` (read them
/// at any time, also while it runs), stdin is /dev/null or a file. Reaped by pid only, so that
/// concurrent tests never reap each other's children. Killed (SIGKILL) when released unreaped.
final class ChildProcess {
    let pid: pid_t
    let arguments: [String]
    let stdoutPath: String
    let stderrPath: String
    private(set) var exitStatus: Int32?
    /// The signal that ended it, if one did.
    private(set) var terminatingSignal: Int32?
    /// The read end of stdout when it is a pipe, else -1.
    let stdoutReadFD: Int32
    private var piped: [UInt8] = []

    /// - Parameters:
    ///   - environment: added to (or replacing in) the test runner's environment; a nil value
    ///     removes the variable.
    ///   - directory: where stdout/stderr files are created (named after `label`).
    init(_ arguments: [String], environment: [String: String?] = [:], directory: String, label: String,
         stdinPath: String? = nil, stdoutPipe: Bool = false) throws {
        _ = ignoreSIGPIPE
        self.arguments = arguments
        stdoutPath = directory + "/\(label).stdout"
        stderrPath = directory + "/\(label).stderr"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        var pipeEnds: [Int32] = [-1, -1]
        if stdoutPipe {
            // pipe2 is hidden behind _GNU_SOURCE: set close-on-exec right after.
            guard pipe(&pipeEnds) == 0 else { throw TestFailure("pipe failed: \(errno)") }
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            // dup2 clears close-on-exec on the child's copy only.
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        defer { if pipeEnds[1] >= 0 { close(pipeEnds[1]) } }
        stdoutReadFD = pipeEnds[0]
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        // The runner ignores SIGPIPE and its threads may block signals: the child starts clean.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signo in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD] { sigaddset(&defaults, signo) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var environmentStrings: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            let name = String(text.prefix { $0 != "=" })
            if environment.index(forKey: name) == nil { environmentStrings.append(text) }
            cursor += 1
        }
        for (name, value) in environment {
            if let value { environmentStrings.append("\(name)=\(value)") }
        }

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environmentStrings.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard rc == 0 else {
            if stdoutReadFD >= 0 { close(stdoutReadFD) }
            throw TestFailure("cannot start \(arguments[0]): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
    }

    deinit {
        if stdoutReadFD >= 0 { close(stdoutReadFD) }
        if exitStatus == nil && terminatingSignal == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    var isRunning: Bool {
        _ = poll()
        return exitStatus == nil && terminatingSignal == nil
    }

    /// Reaps the child if it has exited; true once it has.
    @discardableResult
    func poll() -> Bool {
        if exitStatus != nil || terminatingSignal != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return false }
        record(status)
        return true
    }

    private func record(_ status: Int32) {
        if status & 0x7f == 0 {
            exitStatus = (status >> 8) & 0xff
        } else {
            terminatingSignal = status & 0x7f
        }
    }

    /// Waits up to `seconds` for the exit. Returns false on timeout (the child keeps running).
    func wait(seconds: Double) -> Bool {
        waitUntil(seconds: seconds) { poll() }
    }

    /// Sends `signo` (by pid, only while the child has not been reaped).
    func signal(_ signo: Int32) {
        guard exitStatus == nil && terminatingSignal == nil else { return }
        kill(pid, signo)
    }

    /// SIGKILL and reap.
    func killNow() {
        guard exitStatus == nil && terminatingSignal == nil else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        if waitpid(pid, &status, 0) == pid { record(status) }
    }

    var stdout: String {
        if stdoutReadFD >= 0 { return String(decoding: piped, as: UTF8.self) }
        return readTextFile(stdoutPath)
    }

    /// With a stdout pipe: reads what the child wrote so far, waiting up to `milliseconds`
    /// for something. Returns false once the pipe reached EOF.
    @discardableResult
    func readPipe(waitingMilliseconds milliseconds: Int32) -> Bool {
        precondition(stdoutReadFD >= 0, "stdout is not a pipe")
        var p = pollfd(fd: stdoutReadFD, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&p, 1, milliseconds) > 0 else { return true }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = read(stdoutReadFD, &buffer, buffer.count)
        if n > 0 { piped += buffer[..<n]; return true }
        return n < 0 && (errno == EINTR || errno == EAGAIN)
    }

    /// The complete lines written to the stdout pipe so far.
    var pipedLines: [String] {
        let text = String(decoding: piped, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // the unfinished tail (empty after a final newline)
        return lines
    }
    var stderr: String { readTextFile(stderrPath) }

    /// "exit 3", "signal 9", "running".
    var outcome: String {
        if let exitStatus { return "exit \(exitStatus)" }
        if let terminatingSignal { return "signal \(terminatingSignal)" }
        return "running"
    }
}

/// Runs a program to completion (at most `timeout` seconds, then SIGKILL) and returns its
/// exit status and output.
struct Completed {
    var status: Int32
    var stdout: String
    var stderr: String
    var commandLine: String

    var summary: String {
        "`\(commandLine)` → exit \(status)\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)"
    }
}

func run(_ arguments: [String], environment: [String: String?] = [:], in directory: String,
         timeout: Double = 20, stdinPath: String? = nil) throws -> Completed {
    let label = "run-\(getpid())-\(monotonicNanoseconds())"
    let child = try ChildProcess(arguments, environment: environment, directory: directory, label: label,
                                 stdinPath: stdinPath)
    defer {
        unlink(child.stdoutPath)
        unlink(child.stderrPath)
    }
    let commandLine = arguments.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    guard child.wait(seconds: timeout) else {
        child.killNow()
        throw TestFailure("`\(commandLine)` did not finish within \(timeout) s\n--- stdout:\n\(child.stdout)\n--- stderr:\n\(child.stderr)")
    }
    let status = child.exitStatus ?? (128 + (child.terminatingSignal ?? 0))
    return Completed(status: status, stdout: child.stdout, stderr: child.stderr, commandLine: commandLine)
}
