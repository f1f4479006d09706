import Foundation
import Glibc
import Testing

/// What packaging/install lays out for operators: man pages that render without a warning and
/// fit 80 columns, completions, and every reference operators follow (Documentation=, the
/// catalog's Support:, --help, the README, the man pages' own SEE ALSO) naming something that
/// is installed. Needs no root: it installs into a scratch directory.
@Suite struct DocumentationChecks {
    static let pages = ["man1/scenectl.1", "man8/scened.8", "man5/scened.conf.5", "man5/scened.app.conf.5"]

    func withInstalledTree(_ body: (String) throws -> Void) throws {
        let binaries = try binariesUnderTest()
        let root = try ScratchDirectory(prefix: "scened-doccheck")
        defer { root.remove() }
        let install = runCommand(["/bin/sh", packageRoot() + "/packaging/install", "--destdir", root.path, "--build-dir", binaries])
        try #require(install.succeeded, "packaging/install failed:\n\(install)")
        try body(root.path)
    }

    @Test func manPagesRenderWithoutWarnings() throws {
        let man = "/usr/bin/man"
        try #require(access(man, X_OK) == 0, "man (man-db) is not installed: packaging/dev-deps installs it")
        try withInstalledTree { root in
            for page in Self.pages {
                let path = "\(root)/usr/share/man/\(page)"
                #expect(access(path, R_OK) == 0, "\(page) is not installed")
                let shown = runCommand([man, "--warnings", "-l", path], environment: ["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"])
                #expect(shown.succeeded && shown.stderr.isEmpty && shown.stdout.contains("NAME"),
                        "man --warnings -l \(page) is not clean:\n\(shown)")
                let wide = shown.stdout.split(separator: "\n").filter { $0.count > 80 }
                #expect(wide.isEmpty, "\(page) has lines wider than 80 columns: \(wide)")
            }
        }
    }

    @Test func installedLayout() throws {
        try withInstalledTree { root in
            for path in ["usr/share/bash-completion/completions/scenectl", "usr/share/zsh/vendor-completions/_scenectl",
                         "usr/lib/tmpfiles.d/scened.conf", "usr/share/doc/scened/examples/a-mix-seed1.jsonl",
                         "usr/share/varlink/io.scened.Manager.varlink", "usr/lib/systemd/system/scened-desktop-entries.service",
                         "usr/lib/systemd/user/scened-desktop-entries.service", "etc/profile.d/scened-desktop.sh"]
                + Self.pages.map({ "usr/share/man/" + $0 }) {
                var st = stat()
                #expect(stat(root + "/" + path, &st) == 0 && Int(st.st_mode & 0o7777) == 0o644, "\(path) missing or not mode 0644")
            }
            // The user environment generator is run by the user manager: executable.
            var st = stat()
            let generator = "usr/lib/systemd/user-environment-generators/60-scened-desktop"
            #expect(stat(root + "/" + generator, &st) == 0 && Int(st.st_mode & 0o7777) == 0o755, "\(generator) missing or not mode 0755")
        }
    }

    /// NAME(SECTION) of our own pages (scene...), in `text`.
    static func pageReferences(_ text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: #"\b(scene[a-z.]*)\(([158])\)"#)
        return Set(regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            guard let name = Range(match.range(at: 1), in: text), let section = Range(match.range(at: 2), in: text) else { return nil }
            return "man\(text[section])/\(text[name]).\(text[section])"
        })
    }

    /// /usr/share/doc/scened/... paths in `text`.
    static func docReferences(_ text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: #"/usr/share/doc/scened/[A-Za-z0-9./-]*[A-Za-z0-9/]"#)
        return Set(regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range, in: text).map { String(text[$0]) }
        })
    }

    @Test func everyReferenceResolvesToSomethingInstalled() throws {
        try withInstalledTree { root in
            let binaries = try binariesUnderTest()
            var sources: [(String, String)] = [
                ("scened.service", readTextFile("\(root)/usr/lib/systemd/system/scened.service") ?? ""),
                ("scened.socket", readTextFile("\(root)/usr/lib/systemd/system/scened.socket") ?? ""),
                ("scened.catalog", readTextFile("\(root)/usr/lib/systemd/catalog/scened.catalog") ?? ""),
                ("README.md", readTextFile(packageRoot() + "/README.md") ?? ""),
                ("scenectl --help", runCommand(["\(binaries)/scenectl", "--help"]).stdout),
                ("scened --help", runCommand(["\(binaries)/scened", "--help"]).stdout),
                ("scenectl simulate --help", runCommand(["\(binaries)/scenectl", "simulate", "--help"]).stdout),
            ]
            // The pages' own text (roff escapes would get in the way of the patterns), after
            // checking that what is installed is what the source makes.
            for page in Self.pages {
                let name = String(page.split(separator: "/").last!)
                sources.append((page, readTextFile(packageRoot() + "/man/\(name).scd") ?? ""))
            }
            // The units and the catalog name their documentation with man: URLs only.
            for (name, text) in sources.prefix(3) {
                let urls = text.split(separator: "\n").filter { $0.hasPrefix("Documentation=") || $0.hasPrefix("Support:") }
                #expect(!urls.isEmpty, "\(name) names no documentation")
                for line in urls {
                    #expect(line.split(separator: " ").dropFirst(line.hasPrefix("Support:") ? 1 : 0).allSatisfy {
                        $0.replacingOccurrences(of: "Documentation=", with: "").hasPrefix("man:")
                    }, "\(name): \(line) is not a man: reference")
                }
            }
            for (name, text) in sources {
                #expect(!text.isEmpty, "\(name) is empty")
                for page in Self.pageReferences(text) {
                    #expect(access("\(root)/usr/share/man/\(page)", R_OK) == 0, "\(name) refers to \(page), which is not installed")
                }
                for path in Self.docReferences(text) {
                    #expect(access(root + path, R_OK) == 0, "\(name) refers to \(path), which is not installed")
                }
            }
            // The units point at all three pages; --help at scenectl(1).
            #expect(Self.pageReferences(sources[0].1) == ["man8/scened.8", "man5/scened.conf.5", "man1/scenectl.1"])
            #expect(Self.pageReferences(sources[4].1).contains("man1/scenectl.1"))
            #expect(Self.pageReferences(sources[5].1).contains("man8/scened.8"))
        }
    }
}
