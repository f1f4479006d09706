import Glibc

/// A program started with posix_spawn: stdout and stderr go to files in `directory` (read them
/// at any time, also while it runs) or stdout to a pipe, stdin is /dev/null or a file. It
/// starts with a clean signal mask and default dispositions, whatever the test runner set.
/// Reaped by pid only, so that concurrent tests never reap each other's children. Killed
/// (SIGKILL) when released unreaped.
public final class ChildProcess {
    public let pid: pid_t
    public let arguments: [String]
    public let stdoutPath: String
    public let stderrPath: String
    public private(set) var exitStatus: Int32?
    /// The signal that ended it, if one did.
    public private(set) var terminatingSignal: Int32?
    /// The read end of stdout when it is a pipe (until `closeStdout()`), else -1.
    public private(set) var stdoutReadFD: Int32
    private let stdoutIsPipe: Bool
    /// Everything read from the stdout pipe so far.
    private var piped: [UInt8] = []
    /// Where the next `readLine` starts in `piped`.
    private var lineStart = 0

    /// - Parameters:
    ///   - environment: added to (or replacing in) the test runner's environment; a nil value
    ///     removes the variable.
    ///   - directory: where the stdout/stderr files are created (named after `label`).
    ///   - stdoutPipe: stdout goes to a pipe, read with `readPipe`/`readLine`, instead of a file.
    public init(_ arguments: [String], environment: [String: String?] = [:], directory: String, label: String,
                stdinPath: String? = nil, stdoutPipe: Bool = false) throws {
        _ = ignoreSIGPIPE
        self.arguments = arguments
        stdoutPath = directory + "/\(label).stdout"
        stderrPath = directory + "/\(label).stderr"
        stdoutIsPipe = stdoutPipe

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        var pipeEnds: [Int32] = [-1, -1]
        if stdoutPipe {
            // pipe2 is hidden behind _GNU_SOURCE: set close-on-exec right after.
            guard pipe(&pipeEnds) == 0 else { throw TestFailure("pipe failed: \(errnoText())") }
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
            throw TestFailure("cannot start \(arguments[0]): \(errnoText(rc))")
        }
        self.pid = pid
    }

    deinit {
        if stdoutReadFD >= 0 { close(stdoutReadFD) }
        killNow()
    }

    public var isRunning: Bool {
        _ = poll()
        return exitStatus == nil && terminatingSignal == nil
    }

    /// Reaps the child if it has exited; true once it has.
    @discardableResult
    public func poll() -> Bool {
        if exitStatus != nil || terminatingSignal != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return false }
        record(status)
        return true
    }

    private func record(_ status: Int32) {
        // WIFEXITED / WEXITSTATUS / WTERMSIG spelled out: the macros are not imported.
        if status & 0x7f == 0 {
            exitStatus = (status >> 8) & 0xff
        } else {
            terminatingSignal = status & 0x7f
        }
    }

    /// The exit status, or 128+signal when a signal ended it (as a shell reports it); nil while
    /// it runs.
    public var status: Int32? {
        _ = poll()
        return exitStatus ?? terminatingSignal.map { 128 + $0 }
    }

    /// Waits up to `seconds` for the exit. Returns false on timeout (the child keeps running).
    public func wait(seconds: Double) -> Bool {
        waitUntil(seconds: seconds) { poll() }
    }

    /// Waits up to `seconds` for the exit and kills the child if it is still running then;
    /// returns `status` (137 after the kill).
    @discardableResult
    public func finish(within seconds: Double) -> Int32 {
        if !wait(seconds: seconds) { killNow() }
        return status ?? 128 + SIGKILL
    }

    /// Sends `signo` (by pid, only while the child has not been reaped).
    public func signal(_ signo: Int32) {
        guard exitStatus == nil && terminatingSignal == nil else { return }
        kill(pid, signo)
    }

    /// SIGKILL and reap.
    public func killNow() {
        guard exitStatus == nil && terminatingSignal == nil else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        if waitpid(pid, &status, 0) == pid { record(status) }
    }

    /// What the child wrote to stdout: the file, or what was read from the pipe so far.
    public var stdout: String {
        if stdoutIsPipe { return String(decoding: piped, as: UTF8.self) }
        return readTextFile(stdoutPath)
    }

    public var stderr: String { readTextFile(stderrPath) }

    /// With a stdout pipe: reads what the child wrote so far, waiting up to `milliseconds`
    /// for something. Returns false once the pipe reached EOF.
    @discardableResult
    public func readPipe(waitingMilliseconds milliseconds: Int32) -> Bool {
        precondition(stdoutIsPipe, "stdout is not a pipe")
        guard stdoutReadFD >= 0 else { return false }
        var p = pollfd(fd: stdoutReadFD, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&p, 1, milliseconds) > 0 else { return true }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = read(stdoutReadFD, &buffer, buffer.count)
        if n > 0 { piped += buffer[..<n]; return true }
        return n < 0 && (errno == EINTR || errno == EAGAIN)
    }

    /// The complete lines written to the stdout pipe so far.
    public var pipedLines: [String] {
        let text = String(decoding: piped, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // the unfinished tail (empty after a final newline)
        return lines
    }

    /// With a stdout pipe: the next line (without the newline) not yet returned by `readLine`,
    /// or nil when none is complete after `seconds` or the pipe reached EOF.
    public func readLine(seconds: Double = 5) -> String? {
        let deadline = Deadline(seconds: seconds)
        while true {
            if let newline = piped[lineStart...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: piped[lineStart..<newline], as: UTF8.self)
                lineStart = newline + 1
                return line
            }
            if deadline.hasPassed { return nil }
            let before = piped.count
            guard readPipe(waitingMilliseconds: max(deadline.remainingMilliseconds, 1)) else { return nil }
            if piped.count == before && deadline.hasPassed { return nil }
        }
    }

    /// Closes the read end of the stdout pipe: the child's next write fails with EPIPE.
    public func closeStdout() {
        guard stdoutReadFD >= 0 else { return }
        close(stdoutReadFD)
        stdoutReadFD = -1
    }

    /// "exit 3", "signal 9", "running".
    public var outcome: String {
        if let exitStatus { return "exit \(exitStatus)" }
        if let terminatingSignal { return "signal \(terminatingSignal)" }
        return "running"
    }
}

/// Writes to a closed socket or pipe must fail with EPIPE rather than kill the test runner.
/// Children get the default disposition back (see ChildProcess).
public let ignoreSIGPIPE: Void = {
    signal(SIGPIPE, SIG_IGN)
}()
