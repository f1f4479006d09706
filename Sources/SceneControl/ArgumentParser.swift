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
/// short flags (`-fv`), and `--` to end options. Options before the verb must be global ones.
enum ArgumentParser {
    static func parse(_ arguments: [String], verbs: [Verb] = Verb.all) throws(ControlError) -> ParsedCommand {
        var command = ParsedCommand()
        var i = 0
        var optionsEnded = false

        func spec(long name: String) -> OptionSpec? {
            (command.verb?.options ?? []).first { $0.long == name } ?? GlobalOptions.specs.first { $0.long == name }
        }
        func spec(short letter: Character) -> OptionSpec? {
            (command.verb?.options ?? []).first { $0.short == letter } ?? GlobalOptions.specs.first { $0.short == letter }
        }
        func record(_ spec: OptionSpec, _ value: String?) throws(ControlError) {
            if try command.global.apply(spec, value: value) { return }
            if let value { command.options.values[spec.long] = value } else { command.options.flags.insert(spec.long) }
        }
        func unknown(_ option: String) -> ControlError {
            let hint = command.verb.map { "scenectl \($0.name) --help" } ?? "scenectl --help"
            return .usage("unknown option '\(option)' (see '\(hint)')")
        }

        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if !optionsEnded && argument == "--" {
                optionsEnded = true
            } else if !optionsEnded && argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
                guard let option = spec(long: name) else { throw unknown("--" + name) }
                if option.optionalValue {
                    try record(option, inline)
                } else if option.takesValue {
                    if let inline {
                        try record(option, inline)
                    } else {
                        guard i < arguments.count else { throw .usage("option '--\(name)' needs a value \(option.value!)") }
                        try record(option, arguments[i])
                        i += 1
                    }
                } else {
                    guard inline == nil else { throw .usage("option '--\(name)' takes no value") }
                    try record(option, nil)
                }
            } else if !optionsEnded && argument.hasPrefix("-") && argument.count > 1
                        && !argument.dropFirst().first!.isNumber {
                // "-5" is a (negative, hence refused) value, not options: no short option is a digit.
                var letters = Substring(argument.dropFirst())
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    guard let option = spec(short: letter) else { throw unknown("-" + String(letter)) }
                    guard option.takesValue else {
                        // The short form of an optional-value option (-j) takes none: "".
                        try record(option, option.optionalValue ? "" : nil)
                        continue
                    }
                    if !letters.isEmpty {
                        try record(option, String(letters))
                    } else {
                        guard i < arguments.count else { throw .usage("option '-\(letter)' needs a value \(option.value!)") }
                        try record(option, arguments[i])
                        i += 1
                    }
                    break
                }
            } else if command.verb == nil && command.group == nil && argument == "help" && !command.global.help {
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
            }
        }
        if let group = command.group, !command.global.help {
            let subcommands = verbs.filter { $0.name.hasPrefix(group + " ") }.map { String($0.name.dropFirst(group.count + 1)) }
            throw .usage("'\(group)' needs a subcommand: \(subcommands.joined(separator: ", "))")
        }
        return command
    }
}
