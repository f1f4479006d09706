import ScenedTestSupport
import Testing
@testable import SceneDaemon

@Suite("scened --check-config and --dump-config")
struct BinaryConfigTests {
    @Test("--check-config: exit 0 and the files, in order; warnings on stderr")
    func checkValid() throws {
        let scened = try Binaries.require(Binaries.scened)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let main = try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=notice\nColour=blue\n")
        let dropIn = try dir.write("usr/lib/scened/scened.conf.d/10-x.conf", "[Store]\nDurability=normal\n")
        let r = try run([scened, "--config-root", dir.path, "--check-config"])
        #expect(r.status == 0, "stderr: \(r.stderr)")
        #expect(r.stdout == "configuration valid, with 1 warning (ignored settings) (\(main), \(dropIn))\n")
        #expect(r.stderr == "\(main):3: unknown key \"Colour\" in section [Daemon], ignoring\n", "stderr: \(r.stderr)")

        let empty = TemporaryDirectory()
        defer { empty.remove() }
        let none = try run([scened, "--config-root=\(empty.path)", "--check-config"])
        #expect(none.status == 0)
        #expect(none.stdout == "configuration valid (no configuration files; defaults apply)\n")
    }

    @Test("--check-config reports every problem in one pass, each with its file and line")
    func checkReportsEveryProblem() throws {
        let scened = try Binaries.require(Binaries.scened)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let main = try dir.write("etc/scened/scened.conf",
                                 "[Pressure]\nMemoryBudget=8Q\nLowWatermark=150%\n[Lifecycle]\nSuspendDelaySec=abc\n")
        let broken = try dir.write("etc/scened/scened.conf.d/50-broken.conf", "[Daemon]\nLogLevel info\n")
        let r = try run([scened, "--config-root", dir.path, "--check-config"])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "stderr: \(r.stderr)")
        #expect(lines.map { $0.prefix { $0 != " " } } == ["\(main):2:", "\(main):3:", "\(main):5:", "\(broken):2:"],
                "stderr: \(r.stderr)")
        #expect(lines[1].contains("at most 100%"), "stderr: \(r.stderr)")

        // Starting with it fails the same way: every problem on stderr, the first in STATUS=.
        let start = try run([scened, "--config-root", dir.path, "--socket", dir.path + "/sock", "--state-dir", dir.path + "/state"])
        #expect(start.status == 1)
        #expect(start.stderr.contains("\(broken):2:") && start.stderr.contains("(and 3 more problems)"), "stderr: \(start.stderr)")
    }

    @Test("--check-config: exit 1 with file:line on an error", arguments: [
        ("[Daemon]\nLogLevel=info\n[Limits]\nMaxConnections=lots\n", 4),
        ("[Daemon]\nLogLevel info\n", 2),
        ("LogLevel=info\n", 1),
    ])
    func checkInvalid(text: String, line: Int) throws {
        let scened = try Binaries.require(Binaries.scened)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=info\n")
        let bad = try dir.write("etc/scened/scened.conf.d/50-bad.conf", text)
        let r = try run([scened, "--config-root", dir.path, "--check-config"])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix("\(bad):\(line): "), "stderr: \(r.stderr)")

        // --config FILE: the same error, named by that file.
        let explicit = try dir.write("x/explicit.conf", text)
        let e = try run([scened, "--config", explicit, "--check-config"])
        #expect(e.status == 1)
        #expect(e.stderr.hasPrefix("\(explicit):\(line): "), "stderr: \(e.stderr)")
    }

    @Test("--dump-config prints the effective configuration, which reads back as the same settings")
    func dump() throws {
        let scened = try Binaries.require(Binaries.scened)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let main = try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=debug\n[Pressure]\nSources=psi\nMemoryBudget=512M\n")
        let dropIn = try dir.write("run/scened/scened.conf.d/10-x.conf", "[Reclaim]\nAgingSec=1h 30min\nSuspendEarly=no\n")
        let r = try run([scened, "--config-root", dir.path, "--dump-config"])
        #expect(r.status == 0, "stderr: \(r.stderr)")
        var lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first.map(String.init) == "# Files: \(main) \(dropIn)")
        lines.removeFirst()
        let dumped = lines.joined(separator: "\n")
        #expect(dumped.contains("\n[Reclaim]\nAgingSec=1h 30min\n"))
        #expect(dumped.contains("MemoryBudget=512M\n"))

        var expected = DaemonSettings()
        expected.logLevel = .debug
        expected.pressureSources = [.psi]
        expected.memoryBudget = 512 << 20
        expected.aging = 5_400_000_000
        expected.suspendEarly = false
        #expect(dumped == ConfigLoader.dump(expected))

        let copy = try dir.write("copy/dumped.conf", dumped)
        var loader = ConfigLoader()
        loader.explicitFile = copy
        let reread = try loader.load()
        #expect(reread.warnings.isEmpty)
        #expect(reread.settings == expected)
    }
}
