import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore

/// A loader over a temporary `--config-root` tree.
private func loader(_ dir: TemporaryDirectory) -> ConfigLoader {
    var l = ConfigLoader()
    l.root = dir.path
    return l
}

private func loadError(_ l: ConfigLoader) -> ConfigError? {
    do {
        _ = try l.load()
        return nil
    } catch {
        return error
    }
}

@Suite("Configuration files: precedence, drop-ins, validation")
struct ConfigLoaderTests {
    @Test("no files: the defaults")
    func noFiles() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let result = try loader(dir).load()
        #expect(result.files.isEmpty)
        #expect(result.warnings.isEmpty)
        #expect(result.settings == DaemonSettings())
    }

    @Test("the main file comes from /etc, else /run, else /usr/local/lib, else /usr/lib")
    func mainFilePrecedence() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let levels = [("usr/lib", "debug"), ("usr/local/lib", "notice"), ("run", "warning"), ("etc", "err")]
        for (n, (prefix, level)) in levels.enumerated() {
            try dir.write("\(prefix)/scened/scened.conf", "[Daemon]\nLogLevel=\(level)\n[Limits]\nMaxConnections=\(n + 1)\n")
            let result = try loader(dir).load()
            // Only the one main file is read: the others do not contribute at all.
            #expect(result.files == [dir.path + "/\(prefix)/scened/scened.conf"])
            #expect(result.settings.logLevel == LogLevel(name: level))
            #expect(result.settings.limits.maxConnections == n + 1)
        }
    }

    @Test("drop-ins from every scened.conf.d, in lexical order of name, /etc masking /run masking /usr/lib")
    func dropIns() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("usr/lib/scened/scened.conf", "[Daemon]\nLogLevel=debug\n[Limits]\nMaxConnections=10\n")
        try dir.write("usr/lib/scened/scened.conf.d/10-base.conf", "[Limits]\nMaxConnections=20\n[Store]\nEventLogSize=200\n")
        try dir.write("usr/lib/scened/scened.conf.d/50-shared.conf", "[Store]\nEventLogSize=5000\n")
        try dir.write("usr/local/lib/scened/scened.conf.d/50-shared.conf", "[Store]\nEventLogSize=5100\n")
        try dir.write("usr/local/lib/scened/scened.conf.d/60-local.conf", "[Lifecycle]\nSuspendDelaySec=6s\n")
        try dir.write("run/scened/scened.conf.d/50-shared.conf", "[Store]\nEventLogSize=5200\n[Limits]\nMaxConnections=52\n")
        try dir.write("run/scened/scened.conf.d/05-early.conf", "[Limits]\nMaxConnections=5\n[Daemon]\nStatusUpdateSec=5s\n")
        try dir.write("etc/scened/scened.conf.d/50-shared.conf", "[Store]\nEventLogSize=5300\n")
        try dir.write("etc/scened/scened.conf.d/90-last.conf", "[Daemon]\nLogLevel=notice\n")
        // Not drop-ins: wrong suffix, hidden, a directory.
        try dir.write("etc/scened/scened.conf.d/99-ignored.conf.bak", "[Daemon]\nLogLevel=emerg\n")
        try dir.write("etc/scened/scened.conf.d/.hidden.conf", "[Daemon]\nLogLevel=emerg\n")
        try makeDirectories(dir.file("etc/scened/scened.conf.d/98-dir.conf"))

        let result = try loader(dir).load()
        #expect(result.files == [
            dir.path + "/usr/lib/scened/scened.conf",
            dir.path + "/run/scened/scened.conf.d/05-early.conf",
            dir.path + "/usr/lib/scened/scened.conf.d/10-base.conf",
            dir.path + "/etc/scened/scened.conf.d/50-shared.conf",
            dir.path + "/usr/local/lib/scened/scened.conf.d/60-local.conf",
            dir.path + "/etc/scened/scened.conf.d/90-last.conf",
        ])
        let s = result.settings
        #expect(s.logLevel == .notice)
        // 05-early set 5, 10-base (later by name) set 20; the masked /run 50-shared's 52 is not read.
        #expect(s.limits.maxConnections == 20)
        #expect(s.statusInterval == 5_000_000)
        #expect(s.eventLogSize == 5300)
        #expect(s.suspendDelay == 6_000_000)
    }

    @Test("a drop-in linked to /dev/null masks the same name further down")
    func maskedDropIn() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("usr/lib/scened/scened.conf.d/50-vendor.conf", "[Daemon]\nLogLevel=debug\n")
        try dir.write("usr/lib/scened/scened.conf.d/60-other.conf", "[Limits]\nMaxConnections=60\n")
        try dir.symlink("/dev/null", at: "etc/scened/scened.conf.d/50-vendor.conf")
        let result = try loader(dir).load()
        #expect(result.files == [dir.path + "/usr/lib/scened/scened.conf.d/60-other.conf"])
        #expect(result.settings.logLevel == .info)
        #expect(result.settings.limits.maxConnections == 60)

        // A masked main file: none from further down the search path either.
        try dir.write("usr/lib/scened/scened.conf", "[Daemon]\nLogLevel=err\n")
        #expect(try loader(dir).load().files.first == dir.path + "/usr/lib/scened/scened.conf")
        try dir.symlink("/dev/null", at: "run/scened/scened.conf")
        let masked = try loader(dir).load()
        #expect(masked.files == [dir.path + "/usr/lib/scened/scened.conf.d/60-other.conf"])
        #expect(masked.settings.logLevel == .info)

        // --config /dev/null: no main file, and no error.
        var l = loader(dir)
        l.explicitFile = "/dev/null"
        #expect(try l.load().settings == DaemonSettings())
    }

    @Test("--config FILE replaces the search; drop-ins come from FILE.d/")
    func explicitFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=err\n")
        try dir.write("etc/scened/scened.conf.d/10-x.conf", "[Limits]\nMaxConnections=7\n")
        let file = try dir.write("elsewhere/my.conf", "[Daemon]\nLogLevel=debug\n[Limits]\nMaxConnections=3\n")
        try dir.write("elsewhere/my.conf.d/20-b.conf", "[Limits]\nMaxConnections=9\n")
        try dir.write("elsewhere/my.conf.d/10-a.conf", "[Limits]\nMaxConnections=8\n[Daemon]\nStatusUpdateSec=3s\n")
        var l = loader(dir)
        l.explicitFile = file
        let result = try l.load()
        #expect(result.files == [file, file + ".d/10-a.conf", file + ".d/20-b.conf"])
        #expect(result.settings.logLevel == .debug)
        #expect(result.settings.limits.maxConnections == 9)
        #expect(result.settings.statusInterval == 3_000_000)

        l.explicitFile = dir.path + "/elsewhere/missing.conf"
        let error = loadError(l)
        #expect(error?.description == dir.path + "/elsewhere/missing.conf: no such file")
    }

    @Test("a bad value names the file and line, for each kind of key", arguments: [
        ("Daemon", "LogLevel", "loud"), ("Daemon", "LogLevel", ""), ("Daemon", "Socket", "relative/path"),
        ("Daemon", "Socket", "/" + String(repeating: "s", count: 120)),
        ("Daemon", "StatusUpdateSec", "soon"), ("Limits", "MaxConnections", "0"), ("Limits", "MaxConnections", "many"),
        ("Lifecycle", "SuspendDelaySec", "5 parsecs"), ("Lifecycle", "BackgroundTaskBudgetSec", "0"),
        ("Store", "Durability", "sometimes"), ("Store", "EventLogSize", "99"),
        ("Pressure", "Sources", "simulated magic"), ("Pressure", "MemoryBudget", "8X"), ("Pressure", "MemoryBudget", "0"),
        ("Pressure", "HighWatermark", "90"), ("Pressure", "LowWatermark", "0%"), ("Pressure", "CriticalWatermark", "101%"),
        ("Pressure", "PSIPath", "proc/pressure/memory"), ("Pressure", "PSIWindowSec", "0"),
        ("Reclaim", "MaxVictimsPerBatch", "-1"), ("Reclaim", "SuspendEarly", "perhaps"),
        ("Reclaim", "TerminateSuspendedAtCritical", "2"), ("Reclaim", "MaxSessions", "-3"),
        ("Reclaim", "DefaultRestoreCostSec", "1us"), ("Reclaim", "ArchivedMaxAgeSec", "forever"),
    ])
    func badValues(section: String, key: String, value: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=info\n")
        let path = try dir.write("run/scened/scened.conf.d/20-bad.conf", "# line 1\n[\(section)]\n\n\(key)=\(value)\n")
        let error = loadError(loader(dir))
        #expect(error?.path == path)
        #expect(error?.line == 4)
        #expect(error?.message.hasPrefix("\(key)=") == true, "\(error?.message ?? "no error")")
        #expect(error?.description.hasPrefix("\(path):4: \(key)=") == true)
    }

    @Test("syntax errors in a drop-in name that drop-in")
    func syntaxErrorInDropIn() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=info\n")
        let path = try dir.write("usr/lib/scened/scened.conf.d/10-x.conf", "[Daemon]\nLogLevel=info\nLogLevel debug\n")
        #expect(loadError(loader(dir))?.description == "\(path):3: expected Key=value, found \"LogLevel debug\"")
    }

    @Test("unknown keys and sections are warnings with file and line, not errors")
    func unknownKeys() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.write("etc/scened/scened.conf", """
        [Daemon]
        LogLevel=notice
        Colour=blue
        [Future]
        Feature=on
        Other=1
        [Pressure]
        loglevel=info
        """)
        let result = try loader(dir).load()
        #expect(result.settings.logLevel == .notice)
        #expect(result.warnings == [
            "\(path):3: unknown key \"Colour\" in section [Daemon], ignoring",
            "\(path):5: unknown section [Future], ignoring",
            "\(path):6: unknown section [Future], ignoring",
            "\(path):8: unknown key \"loglevel\" in section [Pressure], ignoring",
        ])
    }

    @Test("watermarks in the wrong order: the error is where the last of them was set")
    func watermarkOrder() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        // Applied in this order: the /usr/lib main file, then /etc's drop-in. By path name
        // "/etc/..." sorts first, but it was applied last: it is the one to blame.
        try dir.write("usr/lib/scened/scened.conf", "[Pressure]\nLowWatermark=70%\nHighWatermark=85%\n")
        let dropIn = try dir.write("etc/scened/scened.conf.d/50-low.conf", "[Daemon]\nLogLevel=info\n[Pressure]\nLowWatermark=95%\n")
        let error = loadError(loader(dir))
        #expect(error?.path == dropIn)
        #expect(error?.line == 4)
        #expect(error?.message == "watermarks must satisfy LowWatermark < HighWatermark <= CriticalWatermark")

        // Within one file the later line is blamed.
        let other = TemporaryDirectory()
        defer { other.remove() }
        let main = try other.write("etc/scened/scened.conf", "[Pressure]\nCriticalWatermark=85%\nMemoryBudget=1G\nHighWatermark=90%\n")
        #expect(loadError(loader(other))?.description
            == "\(main):4: watermarks must satisfy LowWatermark < HighWatermark <= CriticalWatermark")

        // Valid orders pass, equal high and critical included.
        try other.write("etc/scened/scened.conf", "[Pressure]\nLowWatermark=50%\nHighWatermark=85%\nCriticalWatermark=85%\n")
        let settings = try loader(other).load().settings
        #expect(settings.watermarks == Watermarks(low: 0.5, high: 0.85, critical: 0.85))
    }

    @Test("PSI stall thresholds longer than the window are refused where they were set")
    func psiStallLongerThanWindow() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.write("etc/scened/scened.conf", "[Pressure]\nPSIWindowSec=2s\nPSIWarningStallSec=3s\n")
        #expect(loadError(loader(dir))?.description
            == "\(path):3: PSIWarningStallSec= and PSICriticalStallSec= must not exceed PSIWindowSec=")
        try dir.write("etc/scened/scened.conf", "[Pressure]\nPSIWindowSec=2s\nPSIWarningStallSec=2s\nPSICriticalStallSec=150ms\n")
        #expect(try loader(dir).load().settings.psiSettings.windowUSec == 2_000_000)
    }

    @Test("Socket= empty means the default socket, as documented")
    func emptySocket() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/scened.conf", "[Daemon]\nSocket=/run/x.sock\n")
        try dir.write("etc/scened/scened.conf.d/10.conf", "[Daemon]\nSocket=\n")
        #expect(try loader(dir).load().settings.socketPath == nil)
    }

    @Test("dump, parse, same settings", arguments: [false, true])
    func dumpRoundTrip(changed: Bool) throws {
        var settings = DaemonSettings()
        if changed {
            settings.socketPath = "/run/scened/custom.sock"
            settings.logLevel = .debug
            settings.statusInterval = 1_500_000
            settings.limits.maxConnections = 17
            settings.suspendDelay = 5_400_000_000
            settings.backgroundTaskBudget = 1_000
            settings.expirationGrace = 0
            settings.durability = .off
            settings.eventLogSize = 123_456
            settings.pressureSources = [.psi, .simulated]
            settings.memoryBudget = (3 << 30) + 7
            // As a file gives them (percent → fraction), since that is what a dump must carry back.
            settings.watermarks = Watermarks(low: ConfigValues.percent("33.33%")!, high: ConfigValues.percent("92.55%")!,
                                             critical: ConfigValues.percent("100%")!)
            settings.pressureHold = 250_000
            settings.psiPath = "/sys/fs/cgroup/scened.service/memory.pressure"
            settings.psiWarningStall = 150_000
            settings.psiCriticalStall = 333
            settings.psiWindow = 2_000_000
            settings.aging = 86_400_000_001
            settings.settle = 0
            settings.maxVictimsPerBatch = 1
            settings.defaultRestoreCost = 1_234_567
            settings.regretWindow = 3_600_000_000
            settings.suspendEarly = false
            settings.terminateSuspendedAtCritical = false
            settings.maxSessions = 1000
            settings.archivedMaxAge = 7 * 86_400_000_000
        }
        let text = ConfigLoader.dump(settings)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.write("etc/scened/scened.conf", text)
        let result = try loader(dir).load()
        #expect(result.warnings.isEmpty)
        #expect(result.files == [path])
        #expect(result.settings == settings, "dump:\n\(text)")
        // Every key once, in its section.
        let assignments = try ConfigFile.parse(path: path, text: text).assignments
        #expect(assignments.map { "[\($0.section)] \($0.key)" } == SettingKey.all.map(\.qualifiedName))
    }

    @Test("texts apply in order without files; a file that could not be read is one more problem")
    func applyTexts() throws {
        let first = "[Daemon]\nLogLevel=debug\n[Limits]\nMaxConnections=7\n"
        let second = "[Daemon]\nLogLevel=notice\n[Nope]\nx=1\n"
        let applied = try ConfigLoader.apply([("a.conf", .success(first)), ("b.conf", .success(second))])
        #expect(applied.settings.logLevel == .notice && applied.settings.limits.maxConnections == 7)
        #expect(applied.warnings == ["b.conf:4: unknown section [Nope], ignoring"])

        do {
            _ = try ConfigLoader.apply([("a.conf", .failure(ConfigLoader.ReadFailure("not valid UTF-8"))),
                                        ("b.conf", .success("[Limits]\nMaxConnections=0\n"))])
            Issue.record("a read failure and a bad value were accepted")
        } catch {
            #expect(error.report == "a.conf: not valid UTF-8\nb.conf:2: MaxConnections= must be 1 to 1000000 (found \"0\")")
        }
    }
}
