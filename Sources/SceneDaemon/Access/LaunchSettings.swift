import SceneCore

/// How scened starts an app itself: the `[Launch]` section of `apps.d/APP.conf`. An app with
/// no `ExecStart=` is never started by scened: its process attaches on its own, as before.
struct LaunchSettings: Equatable, Sendable {
    /// argv, the first word an absolute path.
    var command: [String] = []
    var workingDirectory: String?
    /// "K=V", in order; later assignments of a name win.
    var environment: [String] = []
    /// From spawn to Attach: longer and the launch has failed.
    var attachTimeout = TimeSpan.seconds(30)
    /// From SIGTERM to killing what is left.
    var stopTimeout = TimeSpan.seconds(5)
    /// Where a started app's memory figure comes from.
    var memory: MemorySource = .measured
    /// StartLimitIntervalSec=, StartLimitBurst=.
    var startLimit = LaunchTable.StartLimit()

    enum MemorySource: String, Sendable {
        /// The cgroup's memory.current, else the sum of its processes' Pss.
        case measured
        /// What the app declares with SetFootprint, as for apps scened does not start.
        case declared
    }

    var starts: Bool { !command.isEmpty }
}

extension LaunchSettings {
    /// Splits a command line the way systemd's ExecStart= does for the common cases: words
    /// separated by spaces, double or single quotes group, a backslash escapes the next
    /// character. nil, with the reason, when it cannot be run.
    static func parseCommand(_ text: String) -> Result<[String], CommandError> {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for ch in text {
            if escaped {
                word.append(ch)
                escaped = false
                inWord = true
            } else if ch == "\\" {
                escaped = true
            } else if let q = quote {
                if ch == q { quote = nil } else { word.append(ch) }
            } else if ch == "\"" || ch == "'" {
                quote = ch
                inWord = true
            } else if ch == " " || ch == "\t" {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(ch)
                inWord = true
            }
        }
        if quote != nil { return .failure(CommandError(message: "unterminated quote")) }
        if escaped { return .failure(CommandError(message: "trailing backslash")) }
        if inWord { words.append(word) }
        guard let first = words.first else { return .failure(CommandError(message: "empty command")) }
        guard first.hasPrefix("/") else {
            return .failure(CommandError(message: "\(first): the program must be an absolute path"))
        }
        return .success(words)
    }

    struct CommandError: Error, Equatable { let message: String }

    /// The environment a started app gets: nothing of scened's own but what it needs to find
    /// scened (its socket and its app id) and a PATH, then the file's `Environment=`.
    func environment(app: AppID, socket: String, home: String?, user: String?) -> [String] {
        var env = ["PATH=/usr/local/bin:/usr/bin:/bin", "SCENED_APP=\(app.rawValue)", "SCENED_SOCKET=\(socket)"]
        if let home { env.append("HOME=\(home)") }
        if let user { env += ["USER=\(user)", "LOGNAME=\(user)"] }
        for assignment in environment {
            let name = assignment.prefix { $0 != "=" }
            env.removeAll { $0.prefix { $0 != "=" } == name }
            env.append(assignment)
        }
        return env
    }
}

/// The `[Launch]` keys of an app's file.
extension AppSettingKey {
    static let launchKeys: [AppSettingKey] = [
        AppSettingKey(section: "Launch", key: "ExecStart", apply: { s, v in
            guard !v.isEmpty else { s.launch.command = []; return nil }
            switch LaunchSettings.parseCommand(v) {
            case .success(let words): s.launch.command = words; return nil
            case .failure(let e): return "ExecStart=\(v): \(e.message)"
            }
        }, show: { $0.launch.command.joined(separator: " ") }),
        AppSettingKey(section: "Launch", key: "WorkingDirectory", apply: { s, v in
            guard !v.isEmpty else { s.launch.workingDirectory = nil; return nil }
            guard v.hasPrefix("/") else { return "WorkingDirectory=\(v): must be an absolute path" }
            s.launch.workingDirectory = v
            return nil
        }, show: { $0.launch.workingDirectory ?? "" }),
        AppSettingKey(section: "Launch", key: "Environment", apply: { s, v in
            // As in systemd: an empty assignment resets the list, others add to it.
            guard !v.isEmpty else { s.launch.environment = []; return nil }
            switch LaunchSettings.parseCommand("/ " + v) {
            case .failure(let e): return "Environment=\(v): \(e.message)"
            case .success(let words):
                for w in words.dropFirst() {
                    guard let eq = w.firstIndex(of: "="), eq != w.startIndex else {
                        return "Environment=\(v): \"\(w)\" is not NAME=VALUE"
                    }
                    s.launch.environment.append(w)
                }
                return nil
            }
        }, show: { $0.launch.environment.joined(separator: " ") }),
        AppSettingKey(section: "Launch", key: "AttachTimeoutSec", apply: { s, v in
            guard let us = ConfigValues.timeSpan(v), us > 0 else { return "AttachTimeoutSec=\(v): not a positive time span" }
            s.launch.attachTimeout = TimeSpan(microseconds: us)
            return nil
        }, show: { $0.launch.attachTimeout.formatted }),
        AppSettingKey(section: "Launch", key: "TimeoutStopSec", apply: { s, v in
            guard let us = ConfigValues.timeSpan(v), us > 0 else { return "TimeoutStopSec=\(v): not a positive time span" }
            s.launch.stopTimeout = TimeSpan(microseconds: us)
            return nil
        }, show: { $0.launch.stopTimeout.formatted }),
        AppSettingKey(section: "Launch", key: "StartLimitIntervalSec", apply: { s, v in
            guard let us = ConfigValues.timeSpan(v), us >= 0 else { return "StartLimitIntervalSec=\(v): not a time span" }
            s.launch.startLimit.interval = TimeSpan(microseconds: us)
            return nil
        }, show: { $0.launch.startLimit.interval.formatted }),
        AppSettingKey(section: "Launch", key: "StartLimitBurst", apply: { s, v in
            guard let n = Int(v), n >= 1, n <= 10_000 else { return "StartLimitBurst=\(v): not a number from 1 to 10000" }
            s.launch.startLimit.burst = n
            return nil
        }, show: { String($0.launch.startLimit.burst) }),
        AppSettingKey(section: "Launch", key: "MemorySource", apply: { s, v in
            guard let source = LaunchSettings.MemorySource(rawValue: v) else {
                return "MemorySource=\(v): expected \"measured\" or \"declared\""
            }
            s.launch.memory = source
            return nil
        }, show: { $0.launch.memory.rawValue }),
    ]
}
