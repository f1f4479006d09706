/// A command line taken apart: global options anywhere, then a verb (one or two words), its
/// options and its positional arguments.
struct ParsedCommand {
    var global = GlobalOptions()
    var verb: Verb?
    /// A group's first word ("task") given alone: only valid with --help.
    var group: String?
    var options = ParsedOptions()
    var arguments: [String] = []
}

/// getopt_long-like parsing: `--name value`, `--name=value`, `-n value`, `-nvalue`, bundled
/// short flags (`-fv`), and `--` to end options. Options before the verb must be global ones;
/// a verb that runs a command takes none after the command's first word.
enum ArgumentParser {
    static func parse(_ arguments: [String], verbs: [Verb] = Verb.all) throws(ControlError) -> ParsedCommand {
        var scan = Scan(arguments: arguments, verbs: verbs)
        while let argument = scan.next() {
            if !scan.optionsEnded && argument == "--" {
                scan.optionsEnded = true
            } else if !scan.optionsEnded && argument.hasPrefix("--") {
                try scan.longOption(argument.dropFirst(2))
            } else if !scan.optionsEnded && argument.hasPrefix("-") && argument.count > 1
                        && !argument.dropFirst().first!.isNumber {
                // "-5" is a (negative, hence refused) value, not options: no short option is a digit.
                try scan.shortOptions(argument.dropFirst())
            } else {
                try scan.word(argument)
            }
        }
        return try scan.finished()
    }

    /// One parse under way: the command so far and the next argument.
    struct Scan {
        let arguments: [String]
        let verbs: [Verb]
        var command = ParsedCommand()
        var i = 0
        var optionsEnded = false

        init(arguments: [String], verbs: [Verb]) {
            self.arguments = arguments
            self.verbs = verbs
        }

        mutating func next() -> String? {
            guard i < arguments.count else { return nil }
            defer { i += 1 }
            return arguments[i]
        }

        /// The argument after `option`, its value.
        mutating func value(of option: String, _ spec: OptionSpec) throws(ControlError) -> String {
            guard let value = next() else { throw .usage("option '\(option)' needs a value \(spec.value!)") }
            return value
        }

        func spec(long name: String) -> OptionSpec? {
            (command.verb?.options ?? []).first { $0.long == name } ?? GlobalOptions.specs.first { $0.long == name }
        }

        func spec(short letter: Character) -> OptionSpec? {
            (command.verb?.options ?? []).first { $0.short == letter } ?? GlobalOptions.specs.first { $0.short == letter }
        }

        mutating func record(_ spec: OptionSpec, _ value: String?) throws(ControlError) {
            if try command.global.apply(spec, value: value) { return }
            if let value { command.options.values[spec.long] = value } else { command.options.flags.insert(spec.long) }
        }

        func unknown(_ option: String) -> ControlError {
            let hint = command.verb.map { "scenectl \($0.name) --help" } ?? "scenectl --help"
            return .usage("unknown option '\(option)' (see '\(hint)')")
        }

        /// `--name`, `--name=value` or `--name value` (`body` is what follows the dashes).
        mutating func longOption(_ body: Substring) throws(ControlError) {
            let name = body.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            guard let option = spec(long: name) else { throw unknown("--" + name) }
            if option.optionalValue {
                try record(option, inline)
            } else if option.takesValue {
                let given = if let inline { inline } else { try value(of: "--" + name, option) }
                try record(option, given)
            } else {
                guard inline == nil else { throw .usage("option '--\(name)' takes no value") }
                try record(option, nil)
            }
        }

        /// Bundled short options (`-fv`); the first that takes a value takes the rest of the
        /// word (`-nvalue`) or the next argument.
        mutating func shortOptions(_ word: Substring) throws(ControlError) {
            var letters = word
            while let letter = letters.first {
                letters = letters.dropFirst()
                guard let option = spec(short: letter) else { throw unknown("-" + String(letter)) }
                guard option.takesValue else {
                    // The short form of an optional-value option (-j) takes none: "".
                    try record(option, option.optionalValue ? "" : nil)
                    continue
                }
                let given = if letters.isEmpty { try value(of: "-" + String(letter), option) } else { String(letters) }
                try record(option, given)
                return
            }
        }

        /// A word that is no option: `help`, the verb (or its group's first word), or a
        /// positional argument.
        mutating func word(_ argument: String) throws(ControlError) {
            if command.verb == nil && command.group == nil && argument == "help" && !command.global.help {
                // `scenectl help list` is `scenectl list --help`.
                command.global.help = true
            } else if command.verb == nil {
                let name = command.group.map { $0 + " " + argument } ?? argument
                if let verb = verbs.first(where: { $0.name == name }) {
                    command.verb = verb
                    command.group = nil
                } else if command.group == nil, verbs.contains(where: { $0.name.hasPrefix(argument + " ") }) {
                    command.group = argument
                } else {
                    throw .usage("unknown command '\(name)' (see 'scenectl --help')")
                }
            } else if command.arguments.isEmpty, let current = command.verb,
                      let sub = verbs.first(where: { $0.name == current.name + " " + argument }) {
                // A verb that is also a group ("pressure", "pressure set"): the longer name wins.
                command.verb = sub
            } else {
                command.arguments.append(argument)
                // `interrupt sleep -v 1`: -v is the command's.
                if command.verb?.takesCommand == true { optionsEnded = true }
            }
        }

        /// The command, once a group's first word has found its subcommand.
        func finished() throws(ControlError) -> ParsedCommand {
            if let group = command.group, !command.global.help {
                let subcommands = verbs.filter { $0.name.hasPrefix(group + " ") }.map { String($0.name.dropFirst(group.count + 1)) }
                throw .usage("'\(group)' needs a subcommand: \(subcommands.joined(separator: ", "))")
            }
            return command
        }
    }
}
