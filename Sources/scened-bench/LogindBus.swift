import Glibc

/// A private dbus-daemon with python3-dbusmock's logind template on it, one session for a
/// given uid, and a python3 helper holding one bus connection that calls the session's
/// Lock/Unlock (the mock emits the signals) on a line of its stdin: no process spawn sits
/// between the bench's clock reading and the signal.
final class LogindBus {
    static let python = "/usr/bin/python3"
    static let templateFile = "/usr/lib/python3/dist-packages/dbusmock/templates/logind.py"

    /// Why the lock part cannot run here, or nil.
    static var missing: String? {
        for path in ["/usr/bin/dbus-daemon", python] where access(path, X_OK) != 0 { return "\(path) is missing" }
        if access(templateFile, R_OK) != 0 { return "python3-dbusmock is missing (\(templateFile))" }
        return nil
    }

    let directory: String
    var address: String { "unix:path=\(directory)/bus" }
    let session = "bench"
    private var pids: [pid_t] = []
    private var toHelper: Int32 = -1
    private var fromHelper: Int32 = -1
    private var pending: [UInt8] = []

    init(uid: UInt32, user: String) throws {
        directory = makeDirectory()
        do {
            try writeFile(directory + "/bus.conf", Self.busConfig(socket: directory + "/bus"))
            try writeFile(directory + "/bench_logind.py", Self.template)
            try writeFile(directory + "/helper.py", Self.helper)
            pids.append(try spawn(["/usr/bin/dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"],
                                  env: [], stdoutPath: directory + "/dbus.out", stderrPath: directory + "/dbus.err"))
            let env = ["DBUS_SYSTEM_BUS_ADDRESS=\(address)", "BENCH_UID=\(uid)", "BENCH_USER=\(user)", "BENCH_SESSION=\(session)",
                       "PYTHONPATH=\(directory)"]
            try waitForSocket(directory + "/bus", seconds: 10)
            pids.append(try spawn([Self.python, "-m", "dbusmock", "--template", directory + "/bench_logind.py"],
                                  env: env, stdoutPath: directory + "/mock.out", stderrPath: directory + "/mock.err"))
            let helper = try spawnPiped([Self.python, directory + "/helper.py", address, session], env: env,
                                        stderrPath: directory + "/helper.err")
            pids.append(helper.pid)
            toHelper = helper.input
            fromHelper = helper.output
            let ready = try readLine(timeout: 20)
            guard ready == "ready" else { throw BenchError("the logind mock did not come up: \(ready); see \(directory)/*.err") }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Ends the helper, the mock and the bus (each by its pid), and removes the directory.
    func close() {
        if toHelper >= 0 { Glibc.close(toHelper); toHelper = -1 }
        if fromHelper >= 0 { Glibc.close(fromHelper); fromHelper = -1 }
        for pid in pids.reversed() {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        pids = []
        removeTree(directory)
    }

    /// Sends a command to the helper now ("lock", "unlock", "ping"); `reply` reads its answer.
    func send(_ command: String) throws {
        let line = Array((command + "\n").utf8)
        guard line.withUnsafeBytes({ write(toHelper, $0.baseAddress, $0.count) }) == line.count else {
            throw BenchError("the logind helper is gone: \(errnoText())")
        }
    }

    /// The helper's answer to the last command: the µs its bus call took.
    func reply(timeout: Double = 10) throws -> Double {
        let line = try readLine(timeout: timeout)
        let parts = line.split(separator: " ")
        guard parts.count == 2, parts[0] == "ok", let usec = Double(parts[1]) else {
            throw BenchError("the logind helper says: \(line)")
        }
        return usec / 1e6
    }

    private func readLine(timeout: Double) throws -> String {
        let deadline = now() + timeout
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let nl = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeFirst(nl + 1)
                return line
            }
            let left = deadline - now()
            guard left > 0 else { throw BenchError("the logind helper did not answer within \(timeout) s") }
            var pfd = pollfd(fd: fromHelper, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fromHelper, $0.baseAddress, $0.count) }
            guard n > 0 else { throw BenchError("the logind helper ended; see \(directory)/helper.err") }
            pending += chunk[0..<n]
        }
    }

    private func waitForSocket(_ path: String, seconds: Double) throws {
        let deadline = now() + seconds
        while now() < deadline {
            if let fd = try? benchConnect(path) {
                Glibc.close(fd)
                return
            }
            usleep(10_000)
        }
        throw BenchError("dbus-daemon did not listen on \(path)")
    }
}

/// A child with pipes on its stdin and stdout.
func spawnPiped(_ args: [String], env: [String], stderrPath: String) throws -> (pid: pid_t, input: Int32, output: Int32) {
    var toChild: [Int32] = [0, 0], fromChild: [Int32] = [0, 0]
    guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw BenchError("pipe: \(errnoText())") }
    // Not inherited by the daemon the bench starts later (dup2 gives the child its own ends).
    for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = args.map { strdup($0) } + [nil]
    let envp = env.map { strdup($0) } + [nil]
    defer {
        for p in argv { free(p) }
        for p in envp { free(p) }
    }
    var pid: pid_t = 0
    let r = posix_spawn(&pid, args[0], &actions, nil, argv, envp)
    close(toChild[0])
    close(fromChild[1])
    guard r == 0 else {
        close(toChild[1])
        close(fromChild[0])
        throw BenchError("spawn \(args[0]): \(String(cString: strerror(r)))")
    }
    return (pid, toChild[1], fromChild[0])
}
