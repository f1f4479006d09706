import Glibc
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// completions/scenectl.bash, driven as bash drives it (COMP_WORDS, COMP_CWORD, then the
/// function), with ids from a live daemon; and the zsh script's syntax.
@Suite struct CompletionTests {
    static let script = packageRoot() + "/completions/scenectl.bash"
    static let zshScript = packageRoot() + "/completions/_scenectl"

    /// What _scenectl offers for `words`, the last being the word under the cursor.
    static func complete(_ words: [String], environment: [String: String] = [:]) throws -> [String] {
        let bash = try SystemTools.require("bash", for: "the completion tests")
        let array = words.map { "'" + $0 + "'" }.joined(separator: " ")
        let program = """
            source \(script) || exit 90
            COMP_WORDS=(\(array)); COMP_CWORD=\(words.count - 1); COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            _scenectl scenectl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" || exit 91
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        var env: [String: String?] = ["PATH": Binaries.directory + ":/usr/bin:/bin", "SCENED_SOCKET": nil]
        for (key, value) in environment { env[key] = value }
        let result = try run([bash, "--norc", "--noprofile", "-c", program], environment: env, timeout: 30)
        guard result.status == 0, result.stderr.isEmpty else { throw TestFailure("completion failed:\n\(result.summary)") }
        return result.stdout.split(separator: "\n").map(String.init).sorted()
    }

    @Test(.timeLimit(.minutes(1))) func idsFromTheLiveDaemon() throws {
        let daemon = try DaemonProcess(try Workspace())
        defer { try? daemon.stop() }
        try daemon.call("Connect", ["app": "com.example.mail"])
        try daemon.call("Connect", ["app": "com.example.mail", "background": true])
        try daemon.call("Connect", ["app": "com.example.maps"])
        let task = try daemon.call("BeginBackgroundTask", ["session": "s2", "name": "upload"])
        let token = try #require(task["task"]?["token"]?.stringValue)
        let socket = ["SCENED_SOCKET": daemon.socketPath]

        #expect(try Self.complete(["scenectl", "activate", ""], environment: socket) == ["s1", "s2", "s3"])
        #expect(try Self.complete(["scenectl", "show", "s"], environment: socket) == ["s1", "s2", "s3"])
        #expect(try Self.complete(["scenectl", "launch", "com.example.ma"], environment: socket) == ["com.example.mail", "com.example.maps"])
        #expect(try Self.complete(["scenectl", "list", "--app", ""], environment: socket) == ["com.example.mail", "com.example.maps"])
        #expect(try Self.complete(["scenectl", "monitor", "--session", "s3"], environment: socket) == ["s3"])
        #expect(try Self.complete(["scenectl", "task", "end", ""], environment: socket) == [token])
        #expect(try Self.complete(["scenectl", "memory-warning", "com.example.mail", "com.example.map"], environment: socket)
                == ["com.example.maps"])
        // The socket given on the command line is the one asked, in both spellings.
        #expect(try Self.complete(["scenectl", "--socket", daemon.socketPath, "discard", ""]) == ["s1", "s2", "s3"])
        #expect(try Self.complete(["scenectl", "--socket", "=", daemon.socketPath, "discard", ""]) == ["s1", "s2", "s3"])
        // The second argument of set-protected is a value, not a session.
        #expect(try Self.complete(["scenectl", "set-protected", "s1", ""], environment: socket) == ["no", "yes"])
        #expect(try Self.complete(["scenectl", "activate", "s1", ""], environment: socket) == [])

        // No daemon: nothing offered, nothing printed.
        #expect(try Self.complete(["scenectl", "--socket", "/nonexistent/sock", "activate", ""]) == [])
    }

    @Test func verbsOptionsAndValues() throws {
        let verbs = try Self.complete(["scenectl", ""])
        let firstWords = Set(Verb.all.map { String($0.name.split(separator: " ")[0]) })
        #expect(Set(verbs) == firstWords.union(["help"]), "every verb and nothing else")
        #expect(try Self.complete(["scenectl", "pre"]) == ["pressure"])
        #expect(try Self.complete(["scenectl", "pressure", ""]) == ["chart", "clear", "plan", "set"])
        #expect(try Self.complete(["scenectl", "pressure", "set", ""]) == ["critical", "warning"])
        #expect(try Self.complete(["scenectl", "task", ""]) == ["begin", "end"])
        #expect(try Self.complete(["scenectl", "help", "disc"]) == ["disconnect", "discard"].sorted())
        #expect(try Self.complete(["scenectl", "list", "--state", ""]) == ["background", "foregroundActive", "foregroundInactive", "unattached"])
        #expect(try Self.complete(["scenectl", "list", "--condition", "a"]) == ["archived"])
        #expect(try Self.complete(["scenectl", "top", "--order", ""]) == ["activity", "footprint", "name", "state"])
        #expect(try Self.complete(["scenectl", "--json", "=", ""]) == ["off", "pretty", "short"])
        #expect(try Self.complete(["scenectl", "--json", "=", "p"]) == ["pretty"])
        #expect(try Self.complete(["scenectl", "--legend", "=", ""]) == ["no", "yes"])
        // A bare --json takes no value: the verb comes next.
        #expect(try Self.complete(["scenectl", "--json", "pre"]) == ["pressure"])
        #expect(try Self.complete(["scenectl", "--json", "=", "pretty", "st"]) == ["status"])
        #expect(try Self.complete(["scenectl", "connect", "x.y", "--role", "window"]).contains("windowApplication"))

        // Every option of every verb, and every global option, is offered after "-".
        let globals = GlobalOptions.specs.map { "--" + $0.long + ($0.optionalValue || $0.takesValue && $0.long != "socket" ? "=" : "") }
        for verb in Verb.all {
            let offered = Set(try Self.complete(["scenectl"] + verb.name.split(separator: " ").map(String.init) + ["-"]))
            for option in verb.options {
                #expect(offered.contains("--" + option.long), "\(verb.name): --\(option.long) is not offered")
                if let short = option.short { #expect(offered.contains("-\(short)"), "\(verb.name): -\(short) is not offered") }
            }
            for global in globals { #expect(offered.contains(global), "\(verb.name): \(global) is not offered") }
        }
    }

    @Test(.timeLimit(.minutes(1))) func interruptionTokensAndTheCommandAfterInterrupt() throws {
        let daemon = try DaemonProcess(try Workspace())
        defer { try? daemon.stop() }
        // An interruption lasts as long as its connection: hold one open.
        let shell = try VarlinkClient(path: daemon.socketPath, timeout: .seconds(10))
        defer { shell.close() }
        let token = try #require(try shell.call("io.scened.Manager.BeginInterruption", ["reason": "call"])["token"]?.stringValue)
        let socket = ["SCENED_SOCKET": daemon.socketPath]
        #expect(try Self.complete(["scenectl", "end-interruption", ""], environment: socket) == [token])
        #expect(try Self.complete(["scenectl", "--socket", daemon.socketPath, "end-interruption", "i"]) == [token])
        #expect(try Self.complete(["scenectl", "end-interruption", token, ""], environment: socket) == [])

        // After interrupt: a command, then that command's arguments (files without
        // bash-completion's _command_offset, which --norc does not load).
        #expect(try Self.complete(["scenectl", "interrupt", "--", "slee"]).contains("sleep"))
        #expect(try Self.complete(["scenectl", "interrupt", "--reason", "x", "slee"]).contains("sleep"))
        #expect(try Self.complete(["scenectl", "interrupt", "-"]).contains("--reason"))
        let root = packageRoot()
        #expect(try Self.complete(["scenectl", "interrupt", "--", "ls", root + "/Packag"]) == [root + "/Package.swift"])
        #expect(try Self.complete(["scenectl", "interrupt", "ls", "--rea"]) == [], "the command's options are not scenectl's")
    }

    /// open offers the schemes ("notes:") and, after --activity, the activity types scened routes.
    @Test(.timeLimit(.minutes(1))) func schemesAndActivityTypesFromTheRoutes() throws {
        let daemon = try ScriptedDaemon { call, peer in
            guard call.method == "io.scened.Manager.ListRoutes" else {
                peer.fail(.methodNotFound(call.method))
                return true
            }
            peer.reply(["routes": [
                ["kind": "scheme", "name": "notes", "app": "org.example.notes", "file": "/etc/scened/apps.d/org.example.notes.conf"],
                ["kind": "scheme", "name": "maps", "app": "com.example.maps", "file": "/etc/scened/apps.d/com.example.maps.conf"],
                ["kind": "activityType", "name": "org.example.notes.edit", "app": "org.example.notes", "file": "/etc/scened/apps.d/org.example.notes.conf"],
            ]])
            return true
        }
        defer { daemon.stop() }
        let socket = ["SCENED_SOCKET": daemon.path]
        #expect(try Self.complete(["scenectl", "open", ""], environment: socket) == ["maps:", "notes:"])
        #expect(try Self.complete(["scenectl", "open", "no"], environment: socket) == ["notes:"])
        #expect(try Self.complete(["scenectl", "open", "--activity", ""], environment: socket) == ["org.example.notes.edit"])
        #expect(try Self.complete(["scenectl", "open", "notes:x", ""], environment: socket) == [], "one URL")
        #expect(try Self.complete(["scenectl", "desktop-entries", "--directory", "/nonexistent-dir/"]) == [])
    }

    @Test func zshScriptParses() throws {
        let zsh = try SystemTools.require("zsh", for: "checking the zsh completion")
        let parsed = try run([zsh, "-n", Self.zshScript], timeout: 30)
        #expect(parsed.status == 0 && parsed.stderr.isEmpty, "\(parsed.summary)")
        let text = readTextFile(Self.zshScript)
        for verb in Set(Verb.all.map { String($0.name.split(separator: " ")[0]) }) {
            #expect(text.contains("'\(verb):"), "zsh completion does not offer \(verb)")
        }
    }
}

/// The package's root, from this file's path (Tests/SceneControlTests/CompletionTests.swift).
func packageRoot(_ file: String = #filePath) -> String {
    var path = file
    for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
    return path
}
