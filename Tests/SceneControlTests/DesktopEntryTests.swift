import Glibc
import ScenedTestSupport
import Testing
import Varlink
@testable import SceneControl

/// The freedesktop registration: the generator's text (pure), what it refuses, and the writer's
/// care with the directory (atomic files, mode 0644, removal of what went, nothing foreign).
@Suite struct DesktopEntryTests {
    static let exec = "/usr/bin/scenectl", socket = "/run/scened/io.scened.Manager"

    static func route(_ scheme: String, _ app: String) -> DesktopEntries.Route { .init(scheme: scheme, app: app) }

    @Test func generatedText() throws {
        let output = try DesktopEntries.generate([Self.route("notes", "org.example.notes"), Self.route("maps", "com.example.maps"),
                                                  Self.route("NOTE-2", "org.example.notes"), Self.route("notes", "org.example.notes")],
                                                 exec: Self.exec, socket: Self.socket)
        #expect(output.refused.isEmpty)
        #expect(Set(output.files.keys) == ["scened-org.example.notes.desktop", "scened-com.example.maps.desktop", "mimeinfo.cache"])
        #expect(output.files["scened-org.example.notes.desktop"] == """
            [Desktop Entry]
            Type=Application
            Version=1.4
            Name=org.example.notes (scened)
            Comment=Opens note-2: notes: URLs in org.example.notes through scened
            Exec=/usr/bin/scenectl --socket /run/scened/io.scened.Manager open -- %u
            NoDisplay=true
            Terminal=false
            MimeType=x-scheme-handler/note-2;x-scheme-handler/notes;
            X-Scened-App=org.example.notes

            """)
        #expect(output.files["mimeinfo.cache"] == """
            [MIME Cache]
            x-scheme-handler/maps=scened-com.example.maps.desktop;
            x-scheme-handler/note-2=scened-org.example.notes.desktop;
            x-scheme-handler/notes=scened-org.example.notes.desktop;

            """)
        // No schemes at all: an empty cache, so that the writer removes every entry.
        #expect(try DesktopEntries.generate([], exec: Self.exec, socket: Self.socket).files == ["mimeinfo.cache": "[MIME Cache]\n"])
    }

    /// Whatever the daemon sends, nothing that could end a key, add a line, name another file or
    /// reach a shell is written; the good routes still are.
    @Test func hostileNamesAreRefusedOthersWritten() throws {
        let bad = [Self.route("no tes", "org.example.a"), Self.route("x\nExec=rm -rf ~", "org.example.a"),
                   Self.route("a;b", "org.example.a"), Self.route("1abc", "org.example.a"), Self.route("", "org.example.a"),
                   Self.route("no:tes", "org.example.a"), Self.route("$(id)", "org.example.a"), Self.route("ok", "../../etc/evil"),
                   Self.route("ok", "org.example.b\nExec=x"), Self.route("ok", "a b.c")]
        let output = try DesktopEntries.generate(bad + [Self.route("notes", "org.example.notes")], exec: Self.exec, socket: Self.socket)
        #expect(output.refused.count == bad.count, "\(output.refused)")
        #expect(Set(output.files.keys) == ["scened-org.example.notes.desktop", "mimeinfo.cache"])
        #expect(output.refused[1] == "not writing a desktop entry for the scheme 'x\\x0aExec=rm -rf ~' of org.example.a: not an RFC 3986 scheme")
        #expect(output.refused[7] == "not writing a desktop entry for the app '../../etc/evil' (scheme ok): not an app id")
        for text in output.files.values { #expect(!text.contains("Exec=rm") && !text.contains("evil") && !text.contains("$(")) }

        // Exec= is split on spaces by xdg-open: paths that would need quoting are refused.
        for (exec, socket) in [("/opt/my apps/scenectl", Self.socket), (Self.exec, "/tmp/x\"y/sock"), ("scenectl", Self.socket),
                               (Self.exec, "/tmp/%u"), (Self.exec, "")] {
            #expect(throws: ControlError.self, "\(exec) \(socket)") {
                try DesktopEntries.generate([Self.route("notes", "org.example.notes")], exec: exec, socket: socket)
            }
        }
    }

    static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
    }

    @Test func writerReplacesRemovesAndKeepsOutOfOthersFiles() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let directory = scratch.path + "/share/applications"
        let both = try DesktopEntries.generate([Self.route("notes", "org.example.notes"), Self.route("maps", "com.example.maps")],
                                               exec: Self.exec, socket: Self.socket)
        let first = try DesktopDirectory.write(both.files, into: directory)
        #expect(first == .init(written: ["mimeinfo.cache", "scened-com.example.maps.desktop", "scened-org.example.notes.desktop"], removed: []))
        for name in first.written { #expect(Self.mode(directory + "/" + name) == 0o644, "\(name) is readable by everyone") }
        #expect(readTextFile(directory + "/mimeinfo.cache").hasPrefix(DesktopDirectory.marker + "\n[MIME Cache]\n"))
        try writeTextFile(directory + "/other.desktop", "[Desktop Entry]\n")

        // maps' schemes went: its entry goes, nothing else does.
        let one = try DesktopEntries.generate([Self.route("notes", "org.example.notes")], exec: Self.exec, socket: Self.socket)
        let second = try DesktopDirectory.write(one.files, into: directory)
        #expect(second.removed == ["scened-com.example.maps.desktop"])
        #expect(access(directory + "/scened-com.example.maps.desktop", F_OK) != 0)
        #expect(access(directory + "/other.desktop", F_OK) == 0)
        #expect(!readTextFile(directory + "/mimeinfo.cache").contains("maps"))
        #expect(try DesktopDirectory.entries(directory) == ["scened-org.example.notes.desktop"], "no temporary file left")

        // A directory with a mimeinfo.cache of someone else's: refused, nothing touched.
        let foreign = scratch.path + "/usr-local"
        try scratch.write("usr-local/mimeinfo.cache", "[MIME Cache]\ntext/plain=vim.desktop;\n")
        #expect(throws: ControlError.self) { try DesktopDirectory.write(one.files, into: foreign) }
        #expect(readTextFile(foreign + "/mimeinfo.cache") == "[MIME Cache]\ntext/plain=vim.desktop;\n")
        #expect(access(foreign + "/scened-org.example.notes.desktop", F_OK) != 0)
    }

    @Test func verbWritesFromTheRoutesAndReportsRefusals() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let directory = scratch.path + "/applications"
        let routes: JSONObject = ["routes": [
            ["kind": "scheme", "name": "notes", "app": "org.example.notes", "file": "/etc/scened/apps.d/org.example.notes.conf"],
            ["kind": "activityType", "name": "org.example.notes.edit", "app": "org.example.notes", "file": "/etc/scened/apps.d/org.example.notes.conf"],
            ["kind": "scheme", "name": "bad scheme", "app": "org.example.bad", "file": "/etc/scened/apps.d/org.example.bad.conf"],
        ]]
        let result = ctl(["--socket", "/run/scened/io.scened.Manager", "desktop-entries", "--directory", directory, "--exec", Self.exec],
                         replies: ["ListRoutes": [.success(routes)]])
        #expect(result.status == 1, "a refused route is a failure")
        #expect(result.err == "scenectl: not writing a desktop entry for the scheme 'bad scheme' of org.example.bad: not an RFC 3986 scheme\n")
        #expect(result.out == "\(directory): 1 entry\n")
        #expect(result.calls.map(\.method) == ["io.scened.Manager.ListRoutes"])
        let entry = readTextFile(directory + "/scened-org.example.notes.desktop")
        #expect(entry.contains("\nExec=/usr/bin/scenectl --socket /run/scened/io.scened.Manager open -- %u\n"))
        #expect(entry.contains("\nMimeType=x-scheme-handler/notes;\n"), "activity types have no desktop entry")

        let empty = ctl(["--socket", "/run/scened/io.scened.Manager", "desktop-entries", "--directory", directory, "--exec", Self.exec, "--json"],
                        replies: ["ListRoutes": [.success(["routes": []])]])
        #expect(empty.status == 0, "\(empty.err)")
        #expect(empty.out == #"{"directory":"\#(directory)","entries":[],"removed":["scened-org.example.notes.desktop"],"refused":[]}"# + "\n")
    }

    @Test func defaultDirectory() {
        func context(uid: uid_t, _ environment: [String: String]) -> Context {
            Context(out: CapturedOutput(), err: CapturedOutput(), environment: { environment[$0] }, uid: uid,
                    connect: { _, _ in throw ControlError(.failure, "no") })
        }
        #expect(Verb.defaultDesktopDirectory(context(uid: 0, ["HOME": "/root"])) == "/var/lib/scened-desktop/applications")
        #expect(Verb.defaultDesktopDirectory(context(uid: 1000, ["HOME": "/home/a"])) == "/home/a/.local/share/scened-desktop/applications")
        #expect(Verb.defaultDesktopDirectory(context(uid: 1000, ["HOME": "/home/a", "XDG_DATA_HOME": "/d"])) == "/d/scened-desktop/applications")
    }
}

/// The hostile side of desktop-entries: a daemon that goes away mid-call, two runs at once,
/// and many apps.
@Suite struct DesktopEntryHostileTests {
    static func route(_ i: Int) -> JSONObject {
        ["kind": "scheme", "name": .string("s\(i)"), "app": .string("org.example.app\(i)"), "file": "/etc/scened/apps.d/x.conf"]
    }

    @Test(.timeLimit(.minutes(1))) func aDaemonGoneMidCallLeavesTheEntriesAsTheyWere() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let directory = scratch.path + "/applications"
        let first = ctl(["--socket", "/run/s", "desktop-entries", "--directory", directory, "--exec", "/usr/bin/scenectl"],
                        replies: ["ListRoutes": [.success(["routes": [.object(Self.route(1))]])]])
        try #require(first.status == 0, "\(first.err)")
        let before = readTextFile(directory + "/mimeinfo.cache")
        let daemon = try ScriptedDaemon { _, _ in false }  // hangs up without a reply
        defer { daemon.stop() }
        let cut = try run([try Binaries.require(Binaries.scenectl), "--socket", daemon.path, "desktop-entries", "--directory", directory])
        #expect(cut.status == 3 && cut.stderr.hasPrefix("scenectl: "), "\(cut.summary)")
        #expect(readTextFile(directory + "/mimeinfo.cache") == before)
        #expect(try DesktopDirectory.entries(directory) == ["scened-org.example.app1.desktop"])
    }

    /// Many apps, written twice at once by two threads as a start and a reload might: every
    /// file whole, no temporary file left, within a bound (the time is printed).
    @Test(.timeLimit(.minutes(1))) func manyAppsAndTwoRunsAtOnce() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let directory = scratch.path + "/applications"
        let routes = (0..<1_000).map { DesktopEntries.Route(scheme: "s\($0)", app: "org.example.app\($0)") }
        let began = monotonicSeconds()
        let output = try DesktopEntries.generate(routes, exec: "/usr/bin/scenectl", socket: "/run/scened/io.scened.Manager")
        let generated = monotonicSeconds()
        let failures = Shared(0)
        let writers = (0..<2).map { _ in
            TestThread {
                do { _ = try DesktopDirectory.write(output.files, into: directory) } catch {
                    print("writer failed: \(error)")
                    failures.update { $0 += 1 }
                }
            }
        }
        for writer in writers { writer.join() }
        let wrote = monotonicSeconds()
        print("desktop-entries: 1,000 apps generated in \(Int((generated - began) * 1000)) ms, written twice at once in \(Int((wrote - generated) * 1000)) ms")
        #expect(failures.value == 0)
        #expect(try DesktopDirectory.entries(directory).count == 1_000)
        #expect(readTextFile(directory + "/scened-org.example.app999.desktop") == output.files["scened-org.example.app999.desktop"])
        #expect(readTextFile(directory + "/mimeinfo.cache") == DesktopDirectory.marker + "\n" + output.files["mimeinfo.cache"]!)
        let leftovers = try run(["/usr/bin/find", directory, "-name", ".*"])
        #expect(leftovers.stdout.isEmpty, "temporary files left: \(leftovers.stdout)")
        #expect(wrote - began < 30, "1,000 entries took \(wrote - began) s")
    }
}
