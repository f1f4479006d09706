import Foundation
import Glibc
import Testing

/// The shipped unit files, sysusers.d entry and catalog, checked with systemd's own tools on
/// what packaging/install lays out. systemd-analyze writes /run/systemd/systemd-units-load as a
/// side effect, so it runs in a private mount namespace with a tmpfs on /run.
@Suite struct UnitFileChecks {
    static let tools = ["/usr/bin/unshare", "/usr/bin/systemd-analyze", "/bin/systemd-sysusers", "/bin/journalctl"]

    /// packaging/install into a fresh root; calls `body` with it, then removes it.
    func withInstalledRoot(_ body: (String) throws -> Void) throws {
        if let problem = privilegeProblem(tools: Self.tools) {
            Issue.record("cannot run the unit checks: \(problem)")
            return
        }
        let binaries = try binariesUnderTest()
        let root = try ScratchDirectory(prefix: "scened-unitcheck")
        defer { root.remove() }
        let install = runCommand(["/bin/sh", packageRoot() + "/packaging/install", "--destdir", root.path,
                                  "--build-dir", binaries])
        try #require(install.succeeded, "packaging/install failed:\n\(install)")
        try body(root.path)
    }

    /// systemd-analyze in a private mount namespace (tmpfs on /run: nothing lands on the host).
    func analyze(_ arguments: [String]) -> CommandResult {
        runCommand(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                    "mount -t tmpfs -o mode=0755 tmpfs /run && exec /usr/bin/systemd-analyze \"$@\"", "sh"] + arguments)
    }

    @Test func installLayout() throws {
        try withInstalledRoot { root in
            for (path, mode) in [("usr/libexec/scened", 0o755), ("usr/bin/scenectl", 0o755),
                                 ("usr/lib/systemd/system/scened.service", 0o644),
                                 ("usr/lib/systemd/system/scened.socket", 0o644),
                                 ("usr/lib/systemd/user/scened.service", 0o644),
                                 ("usr/lib/systemd/user/scened.socket", 0o644),
                                 ("usr/lib/sysusers.d/scened.conf", 0o644),
                                 ("usr/lib/systemd/catalog/scened.catalog", 0o644),
                                 ("usr/share/doc/scened/scened.conf", 0o644)] {
                var st = stat()
                #expect(stat(root + "/" + path, &st) == 0 && Int(st.st_mode & 0o7777) == mode,
                        "\(path) missing or not mode \(String(mode, radix: 8))")
            }
            let service = readTextFile(root + "/usr/lib/systemd/system/scened.service") ?? ""
            #expect(service.contains("ExecStart=/usr/libexec/scened\n") && service.contains("ExecReload=/usr/bin/scenectl reload\n"))
        }
    }

    @Test func verifyIsClean() throws {
        try withInstalledRoot { root in
            let units = ["scened.socket", "scened.service"].map { "\(root)/usr/lib/systemd/system/\($0)" }
            let verify = analyze(["verify", "--man=no", "--recursive-errors=no", "--root=\(root)"] + units)
            #expect(verify.status == 0 && verify.stdout.isEmpty && verify.stderr.isEmpty,
                    "systemd-analyze verify is not clean:\n\(verify)")

            // Negative control: the check does look at the ExecStart= binary under --root.
            try FileManager.default.removeItem(atPath: root + "/usr/libexec/scened")
            let missing = analyze(["verify", "--man=no", "--recursive-errors=no", "--root=\(root)"] + units)
            #expect(missing.status != 0 && missing.stderr.contains("/usr/libexec/scened is not executable"),
                    "verify did not notice a missing ExecStart= binary:\n\(missing)")
        }
    }

    /// The user units, as a user manager loads them. `verify --user` takes no --root, so the tree
    /// is installed with its own prefix: the units then name binaries that exist.
    @Test func userUnitsVerifyClean() throws {
        if let problem = privilegeProblem(tools: Self.tools) {
            Issue.record("cannot run the unit checks: \(problem)")
            return
        }
        let binaries = try binariesUnderTest()
        let root = try ScratchDirectory(prefix: "scened-userunits")
        defer { root.remove() }
        let install = runCommand(["/bin/sh", packageRoot() + "/packaging/install", "--prefix", root.path + "/usr",
                                  "--build-dir", binaries])
        try #require(install.succeeded, "packaging/install --prefix failed:\n\(install)")
        let units = ["scened.socket", "scened.service"].map { "\(root.path)/usr/lib/systemd/user/\($0)" }
        func verify() -> CommandResult {
            // A runtime directory and home of its own on the private /run, as a session has them.
            runCommand(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                        "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p -m 0700 /run/user/0 /run/home && "
                            + "XDG_RUNTIME_DIR=/run/user/0 HOME=/run/home exec /usr/bin/systemd-analyze --user verify "
                            + "--man=no --recursive-errors=no \"$@\"", "sh"] + units)
        }
        let clean = verify()
        #expect(clean.status == 0 && clean.stdout.isEmpty && clean.stderr.isEmpty,
                "systemd-analyze --user verify of the user units is not clean:\n\(clean)")
        // Negative control: it does look at the ExecStart= binary.
        try FileManager.default.removeItem(atPath: root.path + "/usr/libexec/scened")
        let missing = verify()
        #expect(missing.status != 0 && missing.stderr.contains("/usr/libexec/scened is not executable"),
                "verify --user did not notice a missing ExecStart= binary:\n\(missing)")
    }

    /// The user socket unit's path is the one the daemon binds by default for that user, and the
    /// one scenectl finds without options: a daemon started with only $XDG_RUNTIME_DIR set
    /// (as %t is in the user manager) is reached by `scenectl status` at the unit's path.
    @Test func userSocketPathAgrees() throws {
        let unit = readTextFile(packageRoot() + "/systemd/user/scened.socket") ?? ""
        let listen = unit.split(separator: "\n").filter { $0.hasPrefix("ListenStream=") }
        try #require(listen.count == 1, "one ListenStream= expected in systemd/user/scened.socket: \(listen)")
        let template = String(listen[0].dropFirst("ListenStream=".count))
        #expect(template.hasPrefix("%t/"), "the user socket is not under %t: \(template)")
        let service = readTextFile(packageRoot() + "/systemd/user/scened.service") ?? ""
        #expect(service.contains("ExecReload=/usr/bin/scenectl --socket \(template) reload\n"),
                "the user service's ExecReload= does not name the socket unit's path")

        let binaries = try binariesUnderTest()
        let scratch = try ScratchDirectory(prefix: "scened-userpath")
        defer { scratch.remove() }
        for directory in ["run", "state"] {
            try FileManager.default.createDirectory(atPath: scratch.file(directory), withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
        }
        try writeTextFile(scratch.file("scened.conf"), "")
        let expected = template.replacingOccurrences(of: "%t", with: scratch.file("run"))
        // Only what a user manager sets: no socket, no RUNTIME_DIRECTORY, no SCENED_SOCKET.
        let environment = ["XDG_RUNTIME_DIR": scratch.file("run"), "XDG_STATE_HOME": scratch.file("state"),
                           "RUNTIME_DIRECTORY": "", "STATE_DIRECTORY": "", "SCENED_SOCKET": "", "NOTIFY_SOCKET": "",
                           "LISTEN_FDS": "", "LISTEN_PID": "", "WATCHDOG_USEC": ""]
        let spawned = spawn([binaries + "/scened", "--config", scratch.file("scened.conf")], environment: environment,
                            stdoutPath: scratch.file("out"), stderrPath: scratch.file("err"))
        guard case .success(let pid) = spawned else { throw HarnessError("cannot start scened: \(spawned)") }
        defer {
            kill(pid, SIGTERM)
            if waitForExit(pid, timeout: 10).1 { Issue.record("scened did not exit within 10 s of SIGTERM") }
        }
        let bound = waitUntil(seconds: 30, interval: 0.05) { fileExists(expected) }
        #expect(bound, "scened with XDG_RUNTIME_DIR=\(scratch.file("run")) did not bind \(expected):\n\(readTextFile(scratch.file("err")) ?? "")")
        let status = runCommand([binaries + "/scenectl", "status"], environment: environment, timeout: 30)
        #expect(status.succeeded && status.stdout.contains("Socket: \(expected)\n"),
                "scenectl status without options did not reach \(expected):\n\(status)")
    }

    @Test func securityScore() throws {
        try withInstalledRoot { root in
            let result = analyze(["security", "--offline=yes", "--threshold=10", "--no-pager",
                                  "\(root)/usr/lib/systemd/system/scened.service"])
            #expect(result.status == 0, "systemd-analyze security --threshold=10 failed:\n\(result)")
            // "→ Overall exposure level for scened.service: 0.2 SAFE 😀"
            let line = result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level for scened.service:") }
            let score = line.flatMap { line -> Double? in
                let tail = line[line.range(of: "scened.service:")!.upperBound...].trimmingCharacters(in: .whitespaces)
                return Double(tail.prefix { $0.isNumber || $0 == "." })
            }
            #expect(score != nil && score! <= 1.0, "exposure score above 1.0 (or not found):\n\(result)")
            report("systemd-analyze security --offline=yes: \(line.map { $0.trimmingCharacters(in: .whitespaces) } ?? "(no score)")")
        }
    }

    @Test func sysusersCreatesUserAndGroup() throws {
        try withInstalledRoot { root in
            // No file argument: systemd-sysusers reads <root>/usr/lib/sysusers.d/*.conf, i.e. the
            // installed scened.conf.
            try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
            let result = runCommand(["/bin/systemd-sysusers", "--root=\(root)"])
            #expect(result.succeeded, "systemd-sysusers --root failed:\n\(result)")
            let passwd = (readTextFile(root + "/etc/passwd") ?? "").split(separator: "\n").map { $0.split(separator: ":", omittingEmptySubsequences: false) }
            let group = (readTextFile(root + "/etc/group") ?? "").split(separator: "\n").map { $0.split(separator: ":", omittingEmptySubsequences: false) }
            let user = passwd.first { $0.first == "scened" }
            let userGroup = group.first { $0.first == "scened" }
            let socketGroup = group.first { $0.first == "scenectl" }
            try #require(user != nil && user!.count == 7, "no scened user in \(passwd)")
            #expect(userGroup != nil && user![3] == userGroup![2], "the scened user's primary group: \(String(describing: user)) \(String(describing: userGroup))")
            #expect(socketGroup != nil, "no scenectl group (socket access) in \(group)")
            let uid = Int(user![2]) ?? -1
            #expect(uid > 0 && uid < 1000, "scened should be a system user: uid \(uid)")
            #expect(user![5] == "/var/lib/scened" && user![6].hasSuffix("nologin"), "home/shell: \(user!)")
        }
    }

    /// The catalog compiles (journalctl --update-catalog --root), and it explains exactly the
    /// MESSAGE_IDs the daemon's MessageID enum defines.
    @Test func catalogCoversEveryMessageID() throws {
        try withInstalledRoot { root in
            let update = runCommand(["/bin/journalctl", "--root=\(root)", "--update-catalog"])
            #expect(update.succeeded && update.stderr.isEmpty, "journalctl --update-catalog:\n\(update)")
            let listed = runCommand(["/bin/journalctl", "--root=\(root)", "--list-catalog", "--no-pager"])
            let catalogIDs = Set(listed.stdout.split(separator: "\n").compactMap { line -> String? in
                let id = line.prefix(32)
                return id.count == 32 && id.allSatisfy(\.isHexDigit) ? String(id) : nil
            })
            let source = readTextFile(packageRoot() + "/Sources/SceneDaemon/JournalEntries.swift") ?? ""
            let regex = try NSRegularExpression(pattern: #"static let \w+ = "([0-9a-f]{32})""#)
            let codeIDs = Set(regex.matches(in: source, range: NSRange(source.startIndex..., in: source)).compactMap {
                Range($0.range(at: 1), in: source).map { String(source[$0]) }
            })
            #expect(!codeIDs.isEmpty, "no MessageID values found in Sources/SceneDaemon/JournalEntries.swift")
            #expect(codeIDs.isSubset(of: catalogIDs), "MESSAGE_IDs without a catalog entry: \(codeIDs.subtracting(catalogIDs).sorted())")
            let fileIDs = (readTextFile(root + "/usr/lib/systemd/catalog/scened.catalog") ?? "")
                .split(separator: "\n").filter { $0.hasPrefix("-- ") }.map { String($0.dropFirst(3)) }
            #expect(Set(fileIDs) == codeIDs && fileIDs.count == codeIDs.count,
                    "catalog entries vs MessageID: extra \(Set(fileIDs).subtracting(codeIDs).sorted()), duplicates \(fileIDs.count - Set(fileIDs).count)")
        }
    }
}
