import Glibc

/// What to pipe output through, chosen as systemd's tools choose (with SCENECTL_ for SYSTEMD_):
/// only when stdout is a terminal and --no-pager was not given; $SCENECTL_PAGER, else $PAGER,
/// else less, else more; an empty value or "cat" means no pager. less gets LESS=FRSXMK
/// ($SCENECTL_LESS replaces it): it quits at once when the output fits on one screen, keeps
/// colours, chops long lines and quits on Ctrl-C, so short output looks as if unpaged.
public struct PagerChoice: Equatable, Sendable {
    /// A shell command line, run with /bin/sh -c.
    public var command: String
    /// Set in the pager's environment.
    public var environment: [String: String]

    static let defaultLess = "FRSXMK"

    /// nil: write straight to stdout.
    static func choose(enabled: Bool, stdoutIsTerminal: Bool, variable: (String) -> String?,
                       executable: (String) -> Bool) -> PagerChoice? {
        guard enabled, stdoutIsTerminal else { return nil }
        let environment = ["LESS": variable("SCENECTL_LESS") ?? defaultLess, "LESSCHARSET": variable("LESSCHARSET") ?? "utf-8"]
        for name in ["SCENECTL_PAGER", "PAGER"] {
            guard let value = variable(name) else { continue }
            let command = value.trimmingSpaces
            if command.isEmpty || command == "cat" { return nil }
            return PagerChoice(command: command, environment: environment)
        }
        // Fallbacks only when installed: a missing pager would swallow the output.
        let path = (variable("PATH") ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for name in ["less", "more"] where path.contains(where: { executable($0 + "/" + name) }) {
            return PagerChoice(command: name, environment: environment)
        }
        return nil
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first?.isWhitespace == true { text = text.dropFirst() }
        while text.last?.isWhitespace == true { text = text.dropLast() }
        return String(text)
    }
}

/// A running pager: scenectl's stdout is a pipe into it until `finish()`, which closes the
/// pipe and waits until the reader quits, so the shell's prompt comes back after the pager.
public final class PagerProcess {
    let pid: pid_t
    private var finished = false

    /// Starts `choice` on the terminal that is stdout now, then points stdout at it. nil when
    /// it cannot be started (output then goes to the terminal directly).
    public static func start(_ choice: PagerChoice) -> PagerProcess? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addclose(&actions, ends[0])
        posix_spawn_file_actions_addclose(&actions, ends[1])

        var environment: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if choice.environment[String(text.prefix { $0 != "=" })] == nil { environment.append(text) }
            cursor += 1
        }
        environment += choice.environment.map { "\($0.key)=\($0.value)" }
        let words: [String] = ["sh", "-c", choice.command]
        let argv = words.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, envp)
        close(ends[0])
        guard rc == 0, dup2(ends[1], 1) == 1 else {
            close(ends[1])
            if rc == 0 { kill(pid, SIGTERM); _ = waitpid(pid, nil, 0) }
            return nil
        }
        close(ends[1])
        return PagerProcess(pid: pid)
    }

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Ends the output (the pager sees EOF) and waits for the pager to exit.
    public func finish() {
        guard !finished else { return }
        finished = true
        // stdout becomes /dev/null rather than a closed fd, which a later open could reuse.
        let null = open("/dev/null", O_WRONLY)
        if null >= 0 { _ = dup2(null, 1); close(null) } else { close(1) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
