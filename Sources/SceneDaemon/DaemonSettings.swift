import SceneCore
import SceneStore

/// Everything configurable, with its default. `config/scened.conf` documents each key; a test
/// keeps the two in step.
struct DaemonSettings: Equatable, Sendable {
    // [Daemon]
    var socketPath: String?
    var logLevel: LogLevel = .info
    var statusInterval: Int64 = 1_000_000
    var maxConnections = 4096
    // [Lifecycle]
    var suspendDelay: Int64 = 5_000_000
    var backgroundTaskBudget: Int64 = 30_000_000
    var expirationGrace: Int64 = 2_000_000
    // [Store]
    var durability: Durability = .full
    var eventLogSize = 100_000

    var engineConfiguration: EngineConfiguration {
        EngineConfiguration(suspendDelay: TimeSpan(microseconds: suspendDelay),
                            backgroundTaskBudget: TimeSpan(microseconds: backgroundTaskBudget),
                            expirationGrace: TimeSpan(microseconds: expirationGrace))
    }
}

/// syslog priorities, as journald and systemd's LogLevel= name them.
enum LogLevel: Int, CaseIterable, Comparable, Sendable {
    case emerg = 0, alert, crit, err, warning, notice, info, debug

    var name: String { "\(self)" }
    init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = level
    }
    static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// One configuration key: how to apply a value and how to print the current one.
struct SettingKey: Sendable {
    let section: String
    let key: String
    /// Returns an error message for an unacceptable value.
    let apply: @Sendable (inout DaemonSettings, String) -> String?
    let show: @Sendable (DaemonSettings) -> String

    var qualifiedName: String { "[\(section)] \(key)" }

    static let all: [SettingKey] = [
        SettingKey(section: "Daemon", key: "Socket", apply: { s, v in
            guard v.hasPrefix("/") else { return "Socket= must be an absolute path" }
            guard v.utf8.count <= 107 else { return "Socket= path is longer than 107 bytes" }
            s.socketPath = v
            return nil
        }, show: { $0.socketPath ?? "" }),
        SettingKey(section: "Daemon", key: "LogLevel", apply: { s, v in
            guard let level = LogLevel(name: v) else {
                return "LogLevel= must be one of \(LogLevel.allCases.map(\.name).joined(separator: ", "))"
            }
            s.logLevel = level
            return nil
        }, show: { $0.logLevel.name }),
        timeKey("Daemon", "StatusUpdateSec", \.statusInterval, minimum: 0),
        SettingKey(section: "Daemon", key: "MaxConnections", apply: { s, v in
            guard let n = Int(v), n >= 1, n <= 1_000_000 else { return "MaxConnections= must be 1 to 1000000" }
            s.maxConnections = n
            return nil
        }, show: { "\($0.maxConnections)" }),
        timeKey("Lifecycle", "SuspendDelaySec", \.suspendDelay, minimum: 0),
        timeKey("Lifecycle", "BackgroundTaskBudgetSec", \.backgroundTaskBudget, minimum: 1_000),
        timeKey("Lifecycle", "ExpirationGraceSec", \.expirationGrace, minimum: 0),
        SettingKey(section: "Store", key: "Durability", apply: { s, v in
            guard let d = Durability(rawValue: v) else { return "Durability= must be full, normal or off" }
            s.durability = d
            return nil
        }, show: { $0.durability.rawValue }),
        SettingKey(section: "Store", key: "EventLogSize", apply: { s, v in
            guard let n = Int(v), n >= 100, n <= 100_000_000 else { return "EventLogSize= must be 100 to 100000000" }
            s.eventLogSize = n
            return nil
        }, show: { "\($0.eventLogSize)" }),
    ]

    static func timeKey(_ section: String, _ key: String, _ path: WritableKeyPath<DaemonSettings, Int64> & Sendable,
                        minimum: Int64) -> SettingKey {
        SettingKey(section: section, key: key, apply: { s, v in
            guard let usec = ConfigValues.timeSpan(v) else { return "\(key)= is not a time span (e.g. 5s, 500ms, 2min)" }
            guard usec >= minimum else { return "\(key)= must be at least \(ConfigValues.formatTimeSpan(minimum))" }
            s[keyPath: path] = usec
            return nil
        }, show: { ConfigValues.formatTimeSpan($0[keyPath: path]) })
    }

    static func find(section: String, key: String) -> SettingKey? {
        all.first { $0.section == section && $0.key == key }
    }
}
