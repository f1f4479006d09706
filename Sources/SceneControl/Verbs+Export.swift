import Glibc
import Varlink

extension Verb {
    /// `scenectl export-trace`: the daemon's own history as a trace for `simulate`.
    static let exportTrace = Verb(
        "export-trace", section: .daemon, synopsis: "[--since SEQ] [-o FILE]",
        summary: "Write the daemon's history as a trace for 'scenectl simulate'",
        details: """
            Writes the daemon's event log (from --since, an event's sequence number as in \
            'scenectl monitor', or as far back as it reaches) as a JSON-lines trace, with the \
            daemon's budget, watermarks and reclaim settings in its first lines, so that \
            'scenectl simulate FILE --policy ours' takes the reclaim actions the daemon took \
            (--actions lists them), and other policies or budgets show what they would have \
            done. Forced pressure (pressure set) is in the trace; PSI readings are not. \
            Footprints, restore costs and protection are the sessions' current ones (a discarded session's as it connected). The trace \
            goes to standard output, or to FILE with -o.
            """,
        options: [OptionSpec("since", value: "SEQ", "Start at this event sequence number"),
                  OptionSpec("output", short: "o", value: "FILE", "Write the trace to FILE instead of standard output")],
        pages: false,
        run: { invocation in
            var parameters: JSONObject = [:]
            if let since = invocation.options.value("since") { parameters["since"] = .int(try Check.count(since, option: "--since")) }
            let path = invocation.options.value("output")
            var file: UnsafeMutablePointer<FILE>?
            if let path {
                // Opened first: an unwritable FILE fails before the daemon is asked anything.
                guard let f = fopen(path, "wb") else {
                    throw ControlError(.failure, "cannot write \(path): \(String(cString: strerror(errno)))")
                }
                file = f
            }
            var lines = 0
            do {
                try invocation.callMore("ExportTrace", parameters) { piece in
                    var text = ""
                    for line in piece["lines"]?.arrayValue ?? [] {
                        guard let s = line.stringValue else { continue }
                        text += s + "\n"
                        lines += 1
                    }
                    if let file {
                        let bytes = Array(text.utf8)
                        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else {
                            throw ControlError(.failure, "cannot write \(path!): \(String(cString: strerror(errno)))")
                        }
                    } else {
                        try invocation.write(text)
                    }
                    return true
                }
            } catch {
                if let file { fclose(file) }
                throw error
            }
            if let file {
                guard fclose(file) == 0 else { throw ControlError(.failure, "cannot write \(path!): \(String(cString: strerror(errno)))") }
                if !invocation.global.quiet { try? invocation.context.err.write("wrote \(lines) trace lines to \(path!)\n") }
            }
        })
}
