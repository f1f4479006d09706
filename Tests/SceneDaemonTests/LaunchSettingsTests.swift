import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore

/// The [Launch] section of apps.d/APP.conf: how scened starts an app itself.
@Suite struct LaunchSettingsTests {
    @Test func commandLinesSplitAsSystemdDoes() throws {
        #expect(try LaunchSettings.parseCommand("/usr/bin/app --name \"two words\" 'a b' c\\ d").get()
                == ["/usr/bin/app", "--name", "two words", "a b", "c d"])
        #expect(try LaunchSettings.parseCommand("  /bin/true  ").get() == ["/bin/true"])
        #expect(try LaunchSettings.parseCommand("/bin/x \"\"").get() == ["/bin/x", ""])
        #expect(throws: LaunchSettings.CommandError.self) { try LaunchSettings.parseCommand("app --x").get() }
        #expect(throws: LaunchSettings.CommandError.self) { try LaunchSettings.parseCommand("/bin/x \"open").get() }
        #expect(throws: LaunchSettings.CommandError.self) { try LaunchSettings.parseCommand("").get() }
    }

    @Test func theEnvironmentIsCleanAndTheFileWins() {
        var s = LaunchSettings()
        s.environment = ["FOO=1", "PATH=/opt/bin", "FOO=2"]
        let env = s.environment(app: AppID("com.example.mail")!, socket: "/run/s", home: "/home/u", user: "u")
        #expect(env.contains("SCENED_APP=com.example.mail"))
        #expect(env.contains("SCENED_SOCKET=/run/s"))
        #expect(env.contains("HOME=/home/u") && env.contains("USER=u"))
        #expect(env.filter { $0.hasPrefix("FOO=") } == ["FOO=2"])
        #expect(env.filter { $0.hasPrefix("PATH=") } == ["PATH=/opt/bin"])
    }

    @Test func aLaunchSectionLoadsAndItsErrorsNameFileAndLine() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/apps.d/com.example.mail.conf", """
            [Launch]
            ExecStart=/usr/bin/mail-app --scene
            WorkingDirectory=/srv/mail
            Environment=A=1 "B=two words"
            AttachTimeoutSec=3s
            TimeoutStopSec=500ms
            MemorySource=declared
            """)
        var l = ConfigLoader()
        l.root = dir.path
        let result = try l.load()
        let launch = try #require(result.settings.apps[AppID("com.example.mail")!]).launch
        #expect(launch.command == ["/usr/bin/mail-app", "--scene"])
        #expect(launch.workingDirectory == "/srv/mail")
        #expect(launch.environment == ["A=1", "B=two words"])
        #expect(launch.attachTimeout == .seconds(3))
        #expect(launch.stopTimeout == .milliseconds(500))
        #expect(launch.memory == .declared)

        try dir.write("etc/scened/apps.d/com.example.mail.conf", "[Launch]\n\nExecStart=mail-app\n")
        do {
            _ = try l.load()
            Issue.record("a relative ExecStart= was accepted")
        } catch {
            #expect(error.path.hasSuffix("apps.d/com.example.mail.conf"))
            #expect(error.line == 3)
            #expect(error.message.contains("absolute path"), "\(error.message)")
        }
    }
}

/// A user's instance reads its user's configuration directory first, apps.d included.
@Suite struct UserConfigDirectoryTests {
    @Test func onlyAUsersInstanceHasOne() {
        let env: [String: String] = ["XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/u"]
        #expect(ConfigLoader.userDirectory(euid: 1000, environment: { env[$0] }) == "/home/u/.config/scened")
        let xdg = env.merging(["XDG_CONFIG_HOME": "/cfg"]) { $1 }
        #expect(ConfigLoader.userDirectory(euid: 1000, environment: { xdg[$0] }) == "/cfg/scened")
        #expect(ConfigLoader.userDirectory(euid: 0, environment: { env[$0] }) == nil, "root reads /etc")
        #expect(ConfigLoader.userDirectory(euid: 1000, environment: { ["HOME": "/home/u"][$0] }) == nil,
                "a system service (no runtime directory) has none")
    }

    @Test func theUsersFilesComeFirst() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try dir.write("etc/scened/scened.conf", "[Daemon]\nLogLevel=err\n")
        try dir.write("etc/scened/apps.d/com.example.mail.conf", "[Launch]\nExecStart=/usr/bin/system-mail\n")
        try dir.write("user/scened.conf", "[Daemon]\nLogLevel=debug\n")
        try dir.write("user/apps.d/com.example.mail.conf", "[Launch]\nExecStart=/home/u/bin/mail\n")
        try dir.write("user/apps.d/com.example.notes.conf", "[Launch]\nExecStart=/home/u/bin/notes\n")
        var l = ConfigLoader()
        l.root = dir.path
        l.userDirectory = dir.path + "/user"
        let result = try l.load()
        #expect(result.settings.logLevel == .debug, "the user's main file wins")
        #expect(result.settings.apps[AppID("com.example.mail")!]?.launch.command == ["/home/u/bin/mail"])
        #expect(result.settings.apps[AppID("com.example.notes")!]?.launch.command == ["/home/u/bin/notes"])
    }
}
