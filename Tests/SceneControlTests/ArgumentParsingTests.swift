import Testing
import Varlink
@testable import SceneControl

@Suite struct ArgumentParsingTests {
    /// A valid command line for every verb, with the verb name it must resolve to.
    static let validCommands: [(String, [String])] = [
        ("status", ["status"]),
        ("reload", ["reload"]),
        ("monitor", ["monitor", "--app", "com.example.mail", "--session", "s1", "--since", "5"]),
        ("logs", ["logs", "s1", "-n", "5"]),
        ("top", ["top", "--delay", "1s", "--order", "state"]),
        ("list", ["list", "--app", "com.example.mail", "--state", "background", "--condition", "live"]),
        ("show", ["show", "s1", "-n", "3"]),
        ("connect", ["connect", "com.example.mail", "--role", "windowApplication", "--configuration", "Default",
                     "--footprint", "50M", "--background", "--user-info", "{}", "--protected", "--restore-cost", "20"]),
        ("activate", ["activate", "s1"]),
        ("deactivate", ["deactivate", "s1"]),
        ("background", ["background", "s1"]),
        ("disconnect", ["disconnect", "s1"]),
        ("discard", ["discard", "s1"]),
        ("save-state", ["save-state", "s1", "{\"a\":1}"]),
        ("set-user-info", ["set-user-info", "s1", "{}"]),
        ("set-footprint", ["set-footprint", "s1", "1K"]),
        ("set-protected", ["set-protected", "s1", "yes"]),
        ("apps", ["apps"]),
        ("show-app", ["show-app", "com.example.mail"]),
        ("launch", ["launch", "com.example.mail"]),
        ("terminate", ["terminate", "com.example.mail"]),
        ("memory-warning", ["memory-warning", "com.example.mail", "com.example.maps"]),
        ("set-app-footprint", ["set-app-footprint", "com.example.mail", "10M"]),
        ("tasks", ["tasks"]),
        ("task begin", ["task", "begin", "s1", "--name", "upload"]),
        ("task end", ["task", "end", "t1"]),
        ("notify", ["notify", "com.example.mail", "{\"text\":\"hi\"}", "--priority", "high"]),
        ("schedule", ["schedule", "com.example.mail", "mail.refresh", "--kind", "processing", "--in", "5min"]),
        ("cancel-task", ["cancel-task", "com.example.mail", "mail.refresh"]),
        ("pressure", ["pressure"]),
        ("pressure set", ["pressure", "set", "critical", "--for", "30s"]),
        ("pressure clear", ["pressure", "clear"]),
        ("pressure plan", ["pressure", "plan", "--level", "critical", "-n", "5"]),
        ("pressure chart", ["pressure", "chart", "--svg", "out.svg", "--since", "12"]),
        ("simulate", ["simulate", "t.jsonl", "--policy", "ours,lru", "--budget", "50%"]),
        ("export-trace", ["export-trace", "--since", "12", "-o", "t.jsonl"]),
        ("metrics", ["metrics", "--format", "prometheus"]),
        ("interrupt", ["interrupt", "--reason", "incoming call", "--", "sleep", "1"]),
        ("end-interruption", ["end-interruption", "i3"]),
        ("open", ["open", "notes:hello", "--session", "s1", "--background"]),
        ("routes", ["routes"]),
        ("desktop-entries", ["desktop-entries", "--directory", "/tmp/x", "--exec", "/usr/bin/scenectl"]),
    ]

    @Test func everyVerbHasAValidCommandLine() {
        #expect(Set(Self.validCommands.map(\.0)) == Set(Verb.all.map(\.name)))
        #expect(Verb.all.count == Set(Verb.all.map(\.name)).count, "verb names are unique")
    }

    @Test(arguments: validCommands) func parsesEveryVerb(_ name: String, _ arguments: [String]) throws {
        let command = try ArgumentParser.parse(arguments)
        #expect(command.verb?.name == name)
        #expect(command.verb?.arguments.contains(command.arguments.count) == true)
    }

    @Test(arguments: Verb.all.map(\.name)) func helpForEveryVerb(_ name: String) {
        let words = name.split(separator: " ").map(String.init)
        for arguments in [words + ["--help"], words + ["-h"], ["help"] + words, ["--help"] + words] {
            let result = ctl(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.out.hasPrefix("scenectl \(name)"), "\(arguments): \(result.out)")
            #expect(result.err.isEmpty)
            #expect(result.connections.isEmpty, "help never connects")
        }
        // Help wins over missing arguments.
        #expect(ctl(words + ["--help"]).status == 0)
    }

    @Test func mainHelpListsEveryVerbAndTheExitStatuses() {
        let result = ctl(["--help"])
        #expect(result.status == 0)
        for verb in Verb.all { #expect(result.out.contains("\n  \(verb.name)"), "\(verb.name) missing from --help") }
        for line in ["0  success", "1  the daemon refused", "2  usage error", "3  the daemon cannot be reached", "4  no such session, app or task"] {
            #expect(result.out.contains(line))
        }
        #expect(result.out.contains("--socket PATH") && result.out.contains("--json") && result.out.contains("--no-legend"))
        #expect(ctl(["help"]).out == result.out)
        #expect(ctl(["-h"]).out == result.out)
    }

    @Test func groupHelpAndMissingSubcommand() {
        let help = ctl(["task", "--help"])
        #expect(help.status == 0)
        #expect(help.out.contains("task begin") && help.out.contains("task end"))
        let missing = ctl(["task"])
        #expect(missing.status == 2)
        #expect(missing.err == "scenectl: 'task' needs a subcommand: begin, end\n")
        #expect(ctl(["task", "start"]).err == "scenectl: unknown command 'task start' (see 'scenectl --help')\n")
    }

    @Test func versionAndDefaultVerb() throws {
        #expect(ctl(["--version"]).out == "scenectl \(SceneCtl.version)\n")
        let bare = ctl([])
        #expect(bare.calls.map(\.method) == ["io.scened.Manager.ListSessions"], "no verb lists sessions, like loginctl")
    }

    @Test func optionForms() throws {
        var command = try ArgumentParser.parse(["list", "--app=com.example.mail", "--state", "background"])
        #expect(command.options.value("app") == "com.example.mail")
        #expect(command.options.value("state") == "background")

        // Global options before or after the verb; bundled short flags; -nVALUE.
        command = try ArgumentParser.parse(["--json", "logs", "-fvn5", "--socket=/x", "s3"])
        #expect(command.global.json && command.global.verbose)
        #expect(command.global.socket == "/x")
        #expect(command.options.flag("follow"))
        #expect(command.options.value("lines") == "5")
        #expect(command.arguments == ["s3"])

        command = try ArgumentParser.parse(["logs", "-n", "7", "--no-legend"])
        #expect(command.options.value("lines") == "7")
        #expect(command.global.noLegend)

        // The last occurrence wins, as with getopt.
        command = try ArgumentParser.parse(["list", "--app", "a.b", "--app", "c.d"])
        #expect(command.options.value("app") == "c.d")

        // After --, everything is an argument, even what looks like an option.
        command = try ArgumentParser.parse(["save-state", "--", "s1", "--clear"])
        #expect(command.arguments == ["s1", "--clear"])
        #expect(!command.options.flag("clear"))
    }

    /// Bad command lines: exit 2, one message on stderr, nothing on stdout, no connection.
    @Test(arguments: [
        (["bogus"], "unknown command 'bogus' (see 'scenectl --help')"),
        (["list", "--bogus"], "unknown option '--bogus' (see 'scenectl list --help')"),
        (["--app", "a.b", "list"], "unknown option '--app' (see 'scenectl --help')"),
        (["list", "-x"], "unknown option '-x' (see 'scenectl list --help')"),
        (["list", "--app"], "option '--app' needs a value APP"),
        (["logs", "-n"], "option '-n' needs a value N"),
        (["list", "--json=yes"], "invalid --json 'yes'; expected short, pretty or off"),
        (["list", "--json=auto"], "invalid --json 'auto'; expected short, pretty or off"),
        (["list", "--legend=maybe"], "invalid --legend 'maybe'; expected yes or no"),
        (["list", "--no-pager=yes"], "option '--no-pager' takes no value"),
        (["status", "extra"], "'status' takes no arguments (usage: scenectl status )"),
        (["show"], "'show': missing argument (usage: scenectl show SESSION [-n N])"),
        (["show", "s1", "s2"], "'show': too many arguments (usage: scenectl show SESSION [-n N])"),
        (["show", "x42"], "'x42' is not a session id (s<number>, e.g. s42)"),
        (["show", "s0"], "'s0' is not a session id (s<number>, e.g. s42)"),
        (["show", "s1", "-n", "-1"], "invalid line count '-1'; expected a non-negative integer"),
        (["activate", "mail"], "'mail' is not a session id (s<number>, e.g. s42)"),
        (["launch", "mail"], "'mail' is not an app id (reverse-DNS, e.g. com.example.mail)"),
        (["launch", "1com.example"], "'1com.example' is not an app id (reverse-DNS, e.g. com.example.mail)"),
        (["list", "--state", "suspended"], "invalid state 'suspended'; expected one of: unattached, foregroundInactive, foregroundActive, background"),
        (["list", "--condition", "discarded"], "invalid condition 'discarded'; expected one of: live, archived"),
        (["list", "--app", "nodots"], "'nodots' is not an app id (reverse-DNS, e.g. com.example.mail)"),
        (["connect", "com.example.mail", "--role", "window"], "invalid role 'window'; expected one of: windowApplication, windowExternalDisplayNonInteractive, carTemplateApplication, volumetricApplication, immersiveSpaceApplication"),
        (["connect", "com.example.mail", "--footprint", "lots"], "invalid footprint 'lots'; expected bytes, e.g. 52428800, 512K, 50M, 1.5G"),
        (["connect", "com.example.mail", "--user-info", "[1]"], "--user-info must be a JSON object ({...})"),
        (["connect", "com.example.mail", "--user-info", "{"], "--user-info is not valid JSON: unexpected end of input at byte 1"),
        (["connect", "com.example.mail", "--restore-cost", "soon"], "invalid restore cost 'soon'; expected a non-negative integer"),
        (["save-state", "s1"], "save-state needs exactly one of JSON, --base64 DATA or --clear"),
        (["save-state", "s1", "{}", "--clear"], "save-state needs exactly one of JSON, --base64 DATA or --clear"),
        (["save-state", "s1", "42"], "the state must be a JSON object ({...})"),
        (["save-state", "s1", "--base64", "abc"], "--base64 is not base64 (RFC 4648, padded)"),
        (["set-protected", "s1", "maybe"], "invalid protection 'maybe'; expected yes or no"),
        (["set-footprint", "s1", "1.5"], "invalid footprint '1.5'; expected bytes, e.g. 52428800, 512K, 50M, 1.5G"),
        (["set-footprint", "s1", "-5"], "invalid footprint '-5'; expected bytes, e.g. 52428800, 512K, 50M, 1.5G"),
        (["set-footprint", "s1", "7E"], "invalid footprint '7E'; the largest is 1.0T (1099511627776 bytes)"),
        (["set-app-footprint", "com.example.mail", "2T"], "invalid footprint '2T'; the largest is 1.0T (1099511627776 bytes)"),
        (["connect", "com.example.mail", "--footprint", "9223372036854775807"], "invalid footprint '9223372036854775807'; the largest is 1.0T (1099511627776 bytes)"),
        (["connect", "com.example.mail", "--restore-cost", "9223372036854775807"], "invalid restore cost '9223372036854775807'; the largest is 4294967295"),
        (["connect", "com.example.mail", "--configuration", ""], "invalid configuration name ''; it must be 1 to 255 bytes"),
        (["show", "s01"], "'s01' is not a session id (s<number>, e.g. s42)"),
        (["discard", "007"], "'007' is not a session id (s<number>, e.g. s42)"),
        (["task", "end", "t01"], "'t01' is not a task token (t<number>, e.g. t3)"),
        (["task", "begin"], "task begin needs either SESSION or --app APP"),
        (["task", "begin", "s1", "--app", "com.example.mail"], "task begin takes either SESSION or --app APP, not both"),
        (["task", "end", "s1"], "'s1' is not a task token (t<number>, e.g. t3)"),
        (["monitor", "--since", "x"], "invalid sequence number 'x'; expected a non-negative integer"),
        (["monitor", "--session", "1x"], "'1x' is not a session id (s<number>, e.g. s42)"),
        (["logs", "s1", "--app", "com.example.mail"], "give either SESSION or --app, not both"),
        (["logs", "-n", "many"], "invalid line count 'many'; expected a non-negative integer"),
        (["top", "--delay", "10ms"], "invalid --delay '10ms'; expected a time span of at least 100ms, such as 1s"),
        (["top", "--order", "size"], "invalid --order 'size'; expected one of: footprint, state, name, activity"),
        (["memory-warning", "com.example.mail", "bad"], "'bad' is not an app id (reverse-DNS, e.g. com.example.mail)"),
        (["notify", "com.example.mail"], "'notify': missing argument (usage: scenectl notify APP JSON [--priority high|normal])"),
        (["notify", "mail", "{}"], "'mail' is not an app id (reverse-DNS, e.g. com.example.mail)"),
        (["notify", "com.example.mail", "[1]"], "JSON must be a JSON object ({...})"),
        (["notify", "com.example.mail", "{\"a\":"], "JSON is not valid JSON: unexpected end of input at byte 5"),
        (["notify", "com.example.mail", "{}", "--priority", "urgent"], "invalid --priority 'urgent'; expected one of: normal, high"),
        (["schedule", "com.example.mail", ""], "invalid task identifier ''; it must be 1 to 255 bytes"),
        (["schedule", "com.example.mail", String(repeating: "x", count: 256)],
         "invalid task identifier '\(String(repeating: "x", count: 256))'; it must be 1 to 255 bytes"),
        (["schedule", "com.example.mail", "a", "--kind", "notification"], "invalid --kind 'notification'; expected one of: refresh, processing"),
        (["schedule", "com.example.mail", "a", "--in", "soon"], "invalid --in 'soon'; expected a time span such as 30s, 5min, 1h"),
        (["schedule", "com.example.mail", "a", "--in", "5min", "--at", "@0"], "schedule takes either --at or --in, not both"),
        (["schedule", "com.example.mail", "a", "--at", "tomorrow"],
         "invalid --at 'tomorrow'; expected 'YYYY-MM-DD HH:MM[:SS]' (local, or with ' UTC') or @SECONDS"),
        (["schedule", "com.example.mail", "a", "--at", "2024-02-30 10:00"],
         "invalid --at '2024-02-30 10:00'; expected 'YYYY-MM-DD HH:MM[:SS]' (local, or with ' UTC') or @SECONDS"),
        (["schedule", "com.example.mail", "a", "--at", "2024-11-29 25:00"],
         "invalid --at '2024-11-29 25:00'; expected 'YYYY-MM-DD HH:MM[:SS]' (local, or with ' UTC') or @SECONDS"),
        (["schedule", "com.example.mail", "a", "--at", "@-5"],
         "invalid --at '@-5'; expected 'YYYY-MM-DD HH:MM[:SS]' (local, or with ' UTC') or @SECONDS"),
        (["cancel-task", "com.example.mail"], "'cancel-task': missing argument (usage: scenectl cancel-task APP IDENTIFIER)"),
        (["cancel-task", "x", "a"], "'x' is not an app id (reverse-DNS, e.g. com.example.mail)"),
    ])
    func usageErrors(_ arguments: [String], _ message: String) {
        let result = ctl(arguments)
        #expect(result.status == 2, "\(arguments)")
        #expect(result.err == "scenectl: \(message)\n", "\(arguments)")
        #expect(result.out.isEmpty)
        #expect(result.connections.isEmpty, "\(arguments) must fail before connecting")
    }
}
