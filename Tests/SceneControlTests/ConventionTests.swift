import Testing
import Varlink
@testable import SceneControl

/// systemd's command-line conventions: --json=MODE and -j, --legend=BOOL, -q, --no-pager and
/// the choice of pager, with the terminal and the environment injected.
@Suite struct ConventionTests {
    static let reply: JSONObject = ["status": ["version": "0.1.0", "sessions": ["live": 1], "files": ["a", "b"], "none": []]]

    @Test func jsonModes() {
        let compact = JSONValue.object(Self.reply).serializedString() + "\n"
        let pretty = """
            {
            \t"status" : {
            \t\t"version" : "0.1.0",
            \t\t"sessions" : {
            \t\t\t"live" : 1
            \t\t},
            \t\t"files" : [
            \t\t\t"a",
            \t\t\t"b"
            \t\t],
            \t\t"none" : []
            \t}
            }

            """
        let replies = ["GetStatus": [Result<JSONObject, VarlinkError>.success(Self.reply)]]
        #expect(ctl(["status", "--json"], replies: replies).out == compact, "bare --json stays short for old scripts")
        #expect(ctl(["status", "--json=short"], replies: replies).out == compact)
        #expect(ctl(["status", "--json=pretty"], replies: replies).out == pretty)
        #expect(ctl(["-j", "status"], replies: replies).out == compact, "-j off a terminal is short")
        #expect(ctl(["-j", "status"], replies: replies, terminal: true).out == pretty, "-j on a terminal is pretty")
        #expect(ctl(["status", "--json=pretty", "--json=off"], replies: replies).out.hasPrefix("● scened"), "the last one wins")
        #expect(ctl(["status", "-jv"], replies: replies).out == compact, "-j bundles with other flags")
    }

    @Test func legendForms() throws {
        #expect(try ArgumentParser.parse(["list", "--legend=no"]).global.noLegend)
        #expect(try ArgumentParser.parse(["list", "--legend", "false"]).global.noLegend)
        #expect(try !ArgumentParser.parse(["list", "--no-legend", "--legend=yes"]).global.noLegend)
        #expect(try !ArgumentParser.parse(["list"]).global.noLegend)
        let apps = ["ListApps": [Result<JSONObject, VarlinkError>.success(Fixtures.apps)]]
        #expect(ctl(["apps", "--legend=no"], replies: apps).out == ctl(["apps", "--no-legend"], replies: apps).out)
        #expect(!ctl(["apps", "--legend=no"], replies: apps).out.contains("APP"))
    }

    @Test func quietChanges() {
        let session: JSONObject = ["session": ["id": "s77", "app": "com.example.mail"], "events": [
            ["seq": 1, "time": 0, "event": "didFinishLaunching", "app": "com.example.mail", "state": "running"],
        ]]
        let replies = ["Connect": [Result<JSONObject, VarlinkError>.success(session)]]
        let quiet = ctl(["-q", "connect", "com.example.mail", "-v"], replies: replies)
        #expect(quiet.status == 0 && quiet.out.isEmpty && quiet.calls.count == 1)
        #expect(ctl(["connect", "com.example.mail", "--quiet", "--json"], replies: replies).out.isEmpty)
        // Failures are still reported, with the same exit status.
        let refused = ctl(["-q", "activate", "s1"], replies: ["Activate": [.failure(VarlinkError(
            name: "org.varlink.service.PermissionDenied", parameters: ["message": "Activate is for administrators"]))]])
        #expect(refused.status == 5 && refused.err == "scenectl: Activate is for administrators\n")
        // Queries print what they were asked for.
        #expect(!ctl(["-q", "status"], replies: ["GetStatus": [.success(Fixtures.status)]]).out.isEmpty)
    }

    // MARK: Pager

    func choose(enabled: Bool = true, terminal: Bool = true, _ environment: [String: String],
                installed: Set<String> = ["/usr/bin/less", "/bin/more"]) -> PagerChoice? {
        PagerChoice.choose(enabled: enabled, stdoutIsTerminal: terminal, variable: { environment[$0] },
                           executable: { installed.contains($0) })
    }

    @Test func pagerChoice() {
        let less = ["LESS": "FRSXMK", "LESSCHARSET": "utf-8"]
        #expect(choose([:]) == PagerChoice(command: "less", environment: less))
        #expect(choose(terminal: false, ["PAGER": "most"]) == nil, "never into a pipe or a file")
        #expect(choose(enabled: false, ["PAGER": "most"]) == nil, "--no-pager")
        #expect(choose(["PAGER": "most -s"])?.command == "most -s")
        #expect(choose(["PAGER": "most", "SCENECTL_PAGER": "pg"])?.command == "pg", "SCENECTL_PAGER first")
        #expect(choose(["PAGER": "most", "SCENECTL_PAGER": ""]) == nil, "an empty SCENECTL_PAGER turns it off")
        #expect(choose(["SCENECTL_PAGER": " cat "]) == nil, "cat is no pager")
        #expect(choose(["PAGER": ""]) == nil)
        #expect(choose([:], installed: ["/bin/more"])?.command == "more")
        #expect(choose([:], installed: []) == nil, "none installed: straight to the terminal")
        #expect(choose(["PATH": "/opt/bin"], installed: ["/usr/bin/less"]) == nil, "fallbacks are looked up in PATH")
        #expect(choose(["SCENECTL_LESS": "R", "LESSCHARSET": "latin1"])?.environment == ["LESS": "R", "LESSCHARSET": "latin1"])
    }

    @Test func whatIsPaged() {
        let list = ["ListSessions": [Result<JSONObject, VarlinkError>.success(["sessions": []])]]
        #expect(ctl(["list"], replies: list, environment: ["PAGER": "most"], terminal: true).pagers.map(\.command) == ["most"])
        #expect(ctl(["--help"], environment: ["PAGER": "most"], terminal: true).pagers.count == 1)
        #expect(ctl(["list"], replies: list, terminal: false).pagers.isEmpty)
        #expect(ctl(["list", "--no-pager"], replies: list, terminal: true).pagers.isEmpty)
        #expect(ctl(["monitor"], terminal: true).pagers.isEmpty, "a stream is never paged")
        #expect(ctl(["logs", "-f", "--journal-directory", "/nonexistent"], terminal: true).pagers.isEmpty)
        #expect(ctl(["--version"], terminal: true).pagers.isEmpty)
        #expect(ctl(["list", "--bogus"], terminal: true).pagers.isEmpty, "a usage error is printed before any pager")
    }
}
