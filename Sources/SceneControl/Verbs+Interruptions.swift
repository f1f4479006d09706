import Varlink

extension Verb {
    static let interrupt = Verb(
        "interrupt", section: .system, synopsis: "[--reason TEXT] [-- COMMAND [ARG...]]",
        summary: "Hold an interruption while COMMAND runs, or until interrupted",
        details: "While any interruption is held, every foregroundActive scene resigns active and stays in the foreground, and no scene becomes active; when the last one ends, exactly those scenes become active again (as for an incoming call or the app switcher). The interruption is held on scenectl's own connection and ends with it. With COMMAND, scenectl runs it under the interruption, passes on the signals sent to scenectl, ends the interruption when COMMAND exits and exits with COMMAND's status (128+N if a signal N killed it; 127 if it could not be found, 126 if it could not be run); -v prints the events of the beginning and of the end. Without COMMAND, it prints the interruption's token and the events, holds it until SIGINT, SIGTERM, SIGHUP or SIGQUIT, then ends it and prints the events (exit 0), or exits 3 if scened goes away. Options end at COMMAND. For administrators.",
        options: [
            OptionSpec("reason", value: "TEXT", "Why, as status shows it (1 to 255 bytes; default: the command line, or \"scenectl interrupt\")"),
        ],
        arguments: 0...Int.max, takesCommand: true, pages: false,
        run: { invocation in
            try InterruptCommand(invocation).run()
        })

    static let endInterruption = Verb(
        "end-interruption", section: .system, synopsis: "TOKEN",
        summary: "End an interruption that an open connection holds",
        details: "An interruption ends with the connection that began it, so TOKEN is one held by a process that is still connected: a shell's, or a 'scenectl interrupt' still running. Its scenes become active again once no interruption is held. For administrators.",
        arguments: 1...1,
        run: { invocation in
            let token = try Check.interruption(invocation.arguments[0])
            try invocation.reportChange(try invocation.call("EndInterruption", ["token": .string(token)]))
        })
}
