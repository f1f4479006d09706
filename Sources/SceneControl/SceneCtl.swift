import Glibc
import Varlink

/// scenectl's entry point: parse, dispatch through the verb table, map failures to exit
/// statuses. `Sources/scenectl/main.swift` calls `main`; tests call `run` with a test context.
public enum SceneCtl {
    public static let version = "0.1.0"

    /// Runs the binary; returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        // A closed pipe must be a failed write(2) (EPIPE, handled), not a silent death.
        signal(SIGPIPE, SIG_IGN)
        return run(arguments, context: .standard())
    }

    public static func run(_ arguments: [String], context: Context) -> Int32 {
        var pager: PagerProcess?
        // The pager is waited for after the error message too, so that the prompt comes last.
        defer { pager?.finish() }
        do {
            try execute(arguments, context, pager: &pager)
            return ExitStatus.success.rawValue
        } catch {
            return report(error, context)
        }
    }

    private static func execute(_ arguments: [String], _ context: Context, pager: inout PagerProcess?) throws {
        var command = try ArgumentParser.parse(arguments)
        if command.global.jsonMode == .auto { command.global.jsonMode = context.stdoutIsTerminal ? .pretty : .short }
        if pages(command), let choice = PagerChoice.choose(
            enabled: command.global.pager, stdoutIsTerminal: context.stdoutIsTerminal,
            variable: context.variable, executable: context.executable) {
            pager = context.startPager(choice)
        }
        if command.global.version {
            try context.out.write("scenectl \(version)\n")
            return
        }
        if command.global.help {
            if let verb = command.verb {
                try context.out.write(Help.verb(verb))
            } else if let group = command.group {
                try context.out.write(Help.group(group))
            } else {
                try context.out.write(Help.main())
            }
            return
        }
        let verb = command.verb ?? Verb.all.first { $0.name == Verb.defaultName }!
        try checkArity(verb, command.arguments.count)
        try verb.run(Invocation(verb: verb, global: command.global, options: command.options,
                                arguments: command.arguments, context: context))
    }

    /// Output that streams or redraws (monitor, logs -f, top) is never paged; the rest is, as
    /// systemctl pages everything it prints.
    static func pages(_ command: ParsedCommand) -> Bool {
        if command.global.version { return false }
        if command.global.help { return true }
        let verb = command.verb ?? Verb.all.first { $0.name == Verb.defaultName }!
        return verb.pages && !command.options.flag("follow")
    }

    private static func checkArity(_ verb: Verb, _ count: Int) throws(ControlError) {
        guard !verb.arguments.contains(count) else { return }
        let usage = "usage: scenectl \(verb.name) \(verb.synopsis)"
        if verb.arguments.upperBound == 0 { throw .usage("'\(verb.name)' takes no arguments (\(usage))") }
        if count < verb.arguments.lowerBound { throw .usage("'\(verb.name)': missing argument (\(usage))") }
        throw .usage("'\(verb.name)': too many arguments (\(usage))")
    }

    /// Prints "scenectl: MESSAGE" on stderr and returns the status; a closed stdout is quiet
    /// success, and a command's own exit status (`interrupt`) is passed on.
    static func report(_ error: Error, _ context: Context) -> Int32 {
        switch error {
        case is OutputClosed: return ExitStatus.success.rawValue
        case let exit as CommandExit:
            if let message = exit.message { try? context.err.write("scenectl: \(message)\n") }
            return exit.status
        default:
            let failure = failure(for: error)
            try? context.err.write("scenectl: \(failure.message)\n")
            return failure.status.rawValue
        }
    }

    /// What a failure means for the exit status, and its message.
    static func failure(for error: Error) -> ControlError {
        switch error {
        case let error as ControlError: error
        case let error as VarlinkError: ErrorReport.control(for: error)
        default: ControlError(.failure, "\(error)")
        }
    }
}
