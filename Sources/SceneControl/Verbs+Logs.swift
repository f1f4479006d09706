import SystemdKit

extension Verb {
    static let journalDirectoryOption = OptionSpec(
        "journal-directory", value: "DIR", "Read the journal files in DIR instead of the system's (as journalctl -D; meant for tests)")

    static let logs = Verb(
        "logs", section: .daemon, synopsis: "[SESSION | --app APP] [-n N] [-f]",
        summary: "Show scened's journal entries",
        details: "Entries logged by scened (SYSLOG_IDENTIFIER=scened), in journalctl's short format, oldest first. With SESSION only that session's (SCENED_SESSION=), with --app only that app's (SCENED_APP=). Reading the system journal needs root or membership in the systemd-journal group. --json prints each entry's fields as one JSON object.",
        options: [
            OptionSpec("app", value: "APP", "Only entries about APP"),
            OptionSpec("lines", short: "n", value: "N", "Show the last N entries (default: all; 10 with --follow); 'all' for all"),
            OptionSpec("follow", short: "f", "Keep printing new entries as they are logged, until interrupted (Ctrl-C)"),
            journalDirectoryOption,
        ],
        arguments: 0...1,
        run: { invocation in
            let follow = invocation.options.flag("follow")
            var view = JournalView(directory: invocation.options.value("journal-directory"))
            if let session = invocation.arguments.first { view.session = try Check.session(session) }
            if let app = invocation.options.value("app") {
                guard view.session == nil else { throw ControlError.usage("give either SESSION or --app, not both") }
                view.app = try Check.app(app)
            }
            let count = try invocation.lineCount(default: follow ? 10 : nil)
            let reader: JournalReader
            do {
                reader = try view.open()
            } catch {
                throw ControlError(.failure, "cannot read the journal: \(error)")
            }
            if follow && invocation.context.exitOnInterrupt { Interrupts.exitQuietly() }
            var shown = 0
            do {
                try JournalView.read(reader, count: count, follow: follow, shouldStop: invocation.context.shouldStop) { entry in
                    if invocation.global.json {
                        try invocation.json(JournalView.jsonObject(entry))
                    } else if let line = JournalView.shortLine(entry, time: invocation.time) {
                        try invocation.line(line)
                    }
                    shown += 1
                }
            } catch let error as SystemdError {
                throw ControlError(.failure, "cannot read the journal: \(error)")
            }
            if shown == 0 && !follow && !invocation.global.json && !invocation.global.quiet {
                try invocation.line("-- No entries --")
            }
        })
}

extension Invocation {
    /// -n/--lines: a count, or "all" (nil).
    func lineCount(default fallback: Int?) throws(ControlError) -> Int? {
        guard let text = options.value("lines") else { return fallback }
        if text == "all" { return nil }
        return Int(try Check.count(text, option: "line count"))
    }

    /// The journal section that ends `show`: the session's last entries, or one line saying why
    /// there are none to show (the rest of `show` stands without them).
    func journalSection(session: String) throws {
        let count = try lineCount(default: 10)
        guard count != 0 else { return }
        let view = JournalView(session: session, directory: options.value("journal-directory"))
        var lines: [String] = []
        do {
            let reader = try view.open()
            try JournalView.read(reader, count: count, follow: false, shouldStop: { true }) { entry in
                if let line = JournalView.shortLine(entry, time: time) { lines.append(line) }
            }
        } catch {
            try write("\nJournal entries unavailable: \(error)\n")
            return
        }
        guard !lines.isEmpty else { return }
        try write("\n" + lines.joined(separator: "\n") + "\n")
    }
}
