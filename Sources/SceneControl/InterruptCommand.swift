import Glibc
import Varlink

/// `scenectl interrupt`: begins an interruption on its own connection, holds it while COMMAND
/// runs (or until a signal), then ends it. `InterruptHold` decides; this carries it out.
struct InterruptCommand {
    let invocation: Invocation
    let command: [String]
    let reason: String

    static let defaultReason = "scenectl interrupt"
    static let maxReasonBytes = 255

    init(_ invocation: Invocation) throws {
        self.invocation = invocation
        command = invocation.arguments
        reason = try Check.reason(invocation.options.value("reason") ?? Self.reason(for: command))
    }

    /// The command line, shortened to what the daemon accepts.
    static func reason(for command: [String]) -> String {
        guard !command.isEmpty else { return defaultReason }
        var text = ""
        for character in command.joined(separator: " ") {
            guard text.utf8.count + String(character).utf8.count <= maxReasonBytes else { break }
            text.append(character)
        }
        return text
    }

    func run() throws {
        let context = invocation.context
        let watch = try InterruptWatch(ownSignals: context.exitOnInterrupt)
        let begun = try invocation.call("BeginInterruption", ["reason": .string(reason)])
        let token = begun.text("token") ?? "?"
        try report(begun, token: command.isEmpty ? token : nil)
        var child: pid_t?
        if !command.isEmpty {
            do {
                child = try CommandProcess.spawn(command)
            } catch {
                try? end(token)
                throw error
            }
        }
        var hold = InterruptHold(runsCommand: child != nil)
        while true {
            let event = watch.next(connection: invocation.hangUpDescriptor, command: child, shouldStop: context.shouldStop)
            for action in hold.handle(event) {
                switch action {
                case .forward(let signo): if let child { kill(child, signo) }
                case .end: try end(token)
                case .warnDaemonGone:
                    try? context.err.write("scenectl: scened closed the connection; interruption \(token) ended with it\n")
                case .exit(let status): if status == 0 { return } else { throw CommandExit(status) }
                case .fail(let error): throw error
                }
            }
        }
    }

    /// The beginning's reply: the token when held until a signal, the events then or with -v.
    private func report(_ reply: JSONObject, token: String?) throws {
        let global = invocation.global
        if global.quiet { return }
        if global.json { return try invocation.json(reply) }
        if let token { try invocation.line(token) }
        try events(reply, always: token != nil)
    }

    private func events(_ reply: JSONObject, always: Bool) throws {
        guard always || invocation.global.verbose, let events = reply["events"]?.arrayValue else { return }
        try invocation.write(EventTable.table(events.compactMap(\.objectValue)).render(legend: !invocation.global.noLegend))
    }

    /// EndInterruption. One already ended (end-interruption) leaves nothing to do; with a
    /// command, a failure is said on stderr and the command's status still wins.
    private func end(_ token: String) throws {
        let reply: JSONObject
        do {
            reply = try invocation.call("EndInterruption", ["token": .string(token)])
        } catch let error as VarlinkError where error.name == ErrorReport.interface + ".NoSuchInterruption" {
            return
        } catch {
            guard !command.isEmpty else { throw error }
            try? invocation.context.err.write("scenectl: ending interruption \(token): \(SceneCtl.failure(for: error).message)\n")
            return
        }
        if invocation.global.quiet { return }
        if invocation.global.json { return try invocation.json(reply) }
        try events(reply, always: command.isEmpty)
    }
}

/// Ends scenectl with a status of its own choosing rather than one of `ExitStatus`'s: that of
/// the command `interrupt` ran. `message`, if any, goes to stderr as other errors do.
public struct CommandExit: Error, Equatable {
    public var status: Int32
    public var message: String?

    public init(_ status: Int32, message: String? = nil) {
        self.status = status
        self.message = message
    }
}

/// The command `interrupt` runs: on scenectl's terminal and environment, with the signals
/// scenectl blocks or ignores back to their defaults.
enum CommandProcess {
    static func spawn(_ command: [String]) throws(CommandExit) -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        // SIGPIPE too: scenectl ignores it, and an ignored signal stays ignored across exec.
        for signo in InterruptWatch.signals + [SIGPIPE] { sigaddset(&defaults, signo) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, command[0], nil, &attributes, argv, environ)
        guard rc == 0 else {
            // As env(1) and timeout(1) say it: 127 not found, 126 found but not runnable.
            throw CommandExit(rc == ENOENT ? 127 : 126, message: "cannot run '\(command[0])': \(String(cString: strerror(rc)))")
        }
        return pid
    }
}
