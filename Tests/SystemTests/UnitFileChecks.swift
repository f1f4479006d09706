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
