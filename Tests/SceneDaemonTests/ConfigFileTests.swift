import Testing
@testable import SceneDaemon

/// Parses `text` as a file, throwing its ConfigError.
private func parse(_ text: String, path: String = "/x/test.conf") throws(ConfigError) -> [ConfigFile.Assignment] {
    try ConfigFile.parse(path: path, text: text).assignments
}

private func triples(_ a: [ConfigFile.Assignment]) -> [String] {
    a.map { "\($0.line) [\($0.section)] \($0.key)=\($0.value)" }
}

/// The error a text gives, as "file:line: message".
private func parseError(_ text: String, path: String = "/x/bad.conf") -> ConfigError? {
    do {
        _ = try ConfigFile.parse(path: path, text: text)
        return nil
    } catch {
        return error
    }
}

@Suite("INI parsing")
struct ConfigFileTests {
    @Test("sections, assignments, comments, blank lines and whitespace")
    func basics() throws {
        let text = """
        # a comment
        ; another comment
           # an indented comment

        [Daemon]
        LogLevel=debug
          MaxConnections = 12\t
        \tStatusUpdateSec=\t2s

        [Pressure]
        Sources=simulated psi
        Empty=
        Equals=a=b
        """
        #expect(triples(try parse(text)) == [
            "6 [Daemon] LogLevel=debug",
            "7 [Daemon] MaxConnections=12",
            "8 [Daemon] StatusUpdateSec=2s",
            "11 [Pressure] Sources=simulated psi",
            "12 [Pressure] Empty=",
            "13 [Pressure] Equals=a=b",
        ])
    }

    @Test("a trailing backslash continues the value; comment lines inside it are ignored")
    func continuation() throws {
        let text = """
        [Pressure]
        Sources=simulated\\
           psi
        PSIPath=/proc/\\
        # not part of the value
        ; nor this
        pressure/memory
        Last=a \\
        """
        let a = try parse(text)
        #expect(triples(a) == [
            "2 [Pressure] Sources=simulated psi",
            "4 [Pressure] PSIPath=/proc/ pressure/memory",
            "8 [Pressure] Last=a",
        ])
    }

    @Test("CRLF line ends are accepted, with the right line numbers")
    func crlf() throws {
        let text = "# comment\r\n[Daemon]\r\nLogLevel=notice\r\n\r\n[Store]\r\nDurability = normal \r\nEventLogSize=1000\\\r\n\r\n"
        #expect(triples(try parse(text)) == [
            "3 [Daemon] LogLevel=notice",
            "6 [Store] Durability=normal",
            "7 [Store] EventLogSize=1000",
        ])
        let error = parseError("[Daemon]\r\nLogLevel=info\r\nno equals sign\r\n")
        #expect(error?.description == "/x/bad.conf:3: expected Key=value, found \"no equals sign\"")
    }

    @Test("errors name the file and the line", arguments: [
        ("LogLevel=info\n", 1, "assignment outside of any [Section]"),
        ("# header first\n\nLogLevel=info\n", 3, "assignment outside of any [Section]"),
        ("[Daemon]\n[Store\nDurability=full\n", 2, "malformed section header \"[Store\""),
        ("[Daemon]\nLogLevel=info\n[]\n", 3, "malformed section header \"[]\""),
        ("[Daemon] x\n", 1, "malformed section header \"[Daemon] x\""),
        ("[Daemon]\n\nLogLevel info\n", 3, "expected Key=value, found \"LogLevel info\""),
        ("[Daemon]\nLogLevel=info\n  =info\n", 3, "empty key"),
    ])
    func errors(text: String, line: Int, message: String) {
        let error = parseError(text)
        #expect(error?.path == "/x/bad.conf")
        #expect(error?.line == line)
        #expect(error?.message == message)
        #expect(error?.description == "/x/bad.conf:\(line): \(message)")
    }
}
