import Glibc
import Testing

/// The units that write the desktop entries (scenectl desktop-entries), checked as the other
/// units are: systemd-analyze verify on what packaging/install lays out, system and user; and
/// the directory they write is the one the profile snippet and the generator add.
@Suite struct DesktopUnitChecks {
    static let tools = UnitFileChecks.tools

    @Test func systemUnitVerifiesAndWritesWhereTheProfileLooks() throws {
        try UnitFileChecks().withInstalledRoot { root in
            let units = ["scened.socket", "scened.service", "scened-desktop-entries.service"].map { "\(root)/usr/lib/systemd/system/\($0)" }
            let verify = UnitFileChecks().analyze(["verify", "--man=no", "--recursive-errors=no", "--root=\(root)"] + units)
            #expect(verify.status == 0 && verify.stdout.isEmpty && verify.stderr.isEmpty, "systemd-analyze verify is not clean:\n\(verify)")
            let unit = readTextFile(root + "/usr/lib/systemd/system/scened-desktop-entries.service") ?? ""
            #expect(unit.contains("ExecStart=/usr/bin/scenectl --socket /run/scened/io.scened.Manager desktop-entries --directory /var/lib/scened-desktop/applications\n"))
            #expect(unit.contains("\nStateDirectory=scened-desktop\n") && unit.contains("\nStateDirectoryMode=0755\n"))
            #expect((readTextFile(root + "/etc/profile.d/scened-desktop.sh") ?? "").contains(":/var/lib/scened-desktop\""))
        }
    }

    @Test func userUnitVerifies() throws {
        if let problem = privilegeProblem(tools: Self.tools) {
            Issue.record("cannot run the unit checks: \(problem)")
            return
        }
        let binaries = try binariesUnderTest()
        let root = try ScratchDirectory(prefix: "scened-desktopunits")
        defer { root.remove() }
        let install = runCommand(["/bin/sh", packageRoot() + "/packaging/install", "--prefix", root.path + "/usr", "--build-dir", binaries])
        try #require(install.succeeded, "packaging/install --prefix failed:\n\(install)")
        #expect(access(root.path + "/usr/etc/profile.d/scened-desktop.sh", R_OK) == 0, "another prefix keeps its own etc")
        let units = ["scened.socket", "scened.service", "scened-desktop-entries.service"].map { "\(root.path)/usr/lib/systemd/user/\($0)" }
        let verify = runCommand(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                 "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p -m 0700 /run/user/0 /run/home && "
                                     + "XDG_RUNTIME_DIR=/run/user/0 HOME=/run/home exec /usr/bin/systemd-analyze --user verify "
                                     + "--man=no --recursive-errors=no \"$@\"", "sh"] + units)
        #expect(verify.status == 0 && verify.stdout.isEmpty && verify.stderr.isEmpty, "systemd-analyze --user verify is not clean:\n\(verify)")
    }
}
