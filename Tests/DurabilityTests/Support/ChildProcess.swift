import Glibc

/// A program started with posix_spawn (trimmed copy of DaemonIntegrationTests' ChildProcess):
/// stdout and stderr go to files in `directory`, stdin is /dev/null. Reaped by pid only, so
/// that concurrent tests never reap each other's children. Killed (SIGKILL) when released
/// unreaped.
final class ChildProcess {
    let pid: pid_t
    let arguments: [String]
    let stdoutPath: String
    let stderrPath: String
    private(set) var exitStatus: Int32?
    /// The signal that ended it, if one did.
    private(set) var terminatingSignal: Int32?

    /// - Parameter environment: added to (or replacing in) the test runner's environment; a
    ///   nil value removes the variable.
    init(_ arguments: [String], environment: [String: String?] = [:], directory: String, label: String) throws {
        _ = ignoreSIGPIPE
        self.arguments = arguments
        stdoutPath = directory + "/\(label).stdout"
        stderrPath = directory + "/\(label).stderr"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
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
            throw TestFailure("cannot start \(arguments[0]): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
    }

    deinit { killNow() }

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

    var stdout: String { readTextFile(stdoutPath) }
    var stderr: String { readTextFile(stderrPath) }

    /// "exit 3", "signal 9", "running".
    var outcome: String {
        if let exitStatus { return "exit \(exitStatus)" }
        if let terminatingSignal { return "signal \(terminatingSignal)" }
        return "running"
    }
}

/// What a program run to completion printed, and how it ended.
struct Completed {
    var status: Int32
    var stdout: String
    var stderr: String
    var commandLine: String

    var summary: String {
        "`\(commandLine)` → exit \(status)\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)"
    }
}

/// Runs a program to completion (at most `timeout` seconds, then SIGKILL).
func run(_ arguments: [String], environment: [String: String?] = [:], in directory: String,
         timeout: Double = 30) throws -> Completed {
    let label = "run-\(getpid())-\(monotonicNanoseconds())"
    let child = try ChildProcess(arguments, environment: environment, directory: directory, label: label)
    defer {
        unlink(child.stdoutPath)
        unlink(child.stderrPath)
    }
    let commandLine = arguments.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    guard child.wait(seconds: timeout) else {
        child.killNow()
        throw TestFailure("`\(commandLine)` did not finish within \(timeout) s\n--- stderr:\n\(child.stderr)")
    }
    let status = child.exitStatus ?? (128 + (child.terminatingSignal ?? 0))
    return Completed(status: status, stdout: child.stdout, stderr: child.stderr, commandLine: commandLine)
}
