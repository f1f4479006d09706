import SystemdKit
import Glibc
import SceneCore
import SceneStore

/// Everything configurable, with its default. `config/scened.conf` documents each key; a test
/// keeps the two in step.
struct DaemonSettings: Equatable, Sendable {
    // [Daemon]
    var socketPath: String?
    var logLevel: LogLevel = .info
    var statusInterval: Int64 = 1_000_000
    // [Limits]
    var limits = ConnectionLimits()
    // [Access]
    var administratorGroup = "scenectl"
    // apps.d/*.conf
    var apps: [AppID: AppSettings] = [:]
    // [Lifecycle]
    var suspendDelay: Int64 = 5_000_000
    var backgroundTaskBudget: Int64 = 30_000_000
    var expirationGrace: Int64 = 2_000_000
    // How long an attached app has to answer (io.scened.App.Acknowledge).
    var didEnterBackgroundTimeout: Int64 = 5_000_000
    var willTerminateTimeout: Int64 = 5_000_000
    // [Lifecycle] how long a stop may take: the background chain, willTerminate, the exits (R32).
    var stopTimeout: Int64 = 20_000_000
    // [System] follow logind's sessions, sleep and shutdown; when a lock sends the scenes to
    // the background; whether idle sessions count as locked.
    var followLogin = true
    var lockedBackground: Int64 = 0
    var followIdle = false
    // [Background] background work: wakes, budgets, queues (R34).
    var background = BackgroundSettings()
    // [Routing] Open's bounds; apps.d's URLSchemes= and ActivityTypes=, gathered.
    var routing = RoutingSettings()
    var routes = RouteTable()
    // [Lifecycle] started apps in cgroups of their own (else process groups and SIGSTOP).
    var appCgroups = true
    // [Reclaim] the grace an attached app gets to save before a reclaim disconnect (§3.5).
    var graceWarning: Int64 = 2_000_000
    var graceCritical: Int64 = 250_000
    // [Reclaim] how often the memory of the apps scened starts is read.
    var measureInterval: Int64 = 1_000_000
    // [Store]
    var durability: Durability = .full
    var eventLogSize = 100_000
    // [Pressure]
    var pressureSources: [PressureSourceKind] = [.simulated]
    var memoryBudget: UInt64 = 8 << 30
    var watermarks = Watermarks()
    var pressureHold: Int64 = 4_000_000
    var psiPath = "/proc/pressure/memory"
    var psiWarningStall: Int64 = 100_000
    var psiCriticalStall: Int64 = 100_000
    var psiWindow: Int64 = 1_000_000
    // [Reclaim]
    var aging: Int64 = 10_000_000
    var settle: Int64 = 1_000_000
    var maxVictimsPerBatch = 32
    var defaultRestoreCost: Int64 = 500_000
    var regretWindow: Int64 = 60_000_000
    var suspendEarly = true
    var terminateSuspendedAtCritical = true
    var maxSessions = 0
    var archivedMaxAge: Int64 = 0

    var reclaimConfiguration: ReclaimConfiguration {
        ReclaimConfiguration(budget: memoryBudget, watermarks: watermarks, aging: TimeSpan(microseconds: aging),
                             settle: TimeSpan(microseconds: settle), maxVictimsPerBatch: maxVictimsPerBatch,
                             defaultRestoreCostMs: UInt32(min(defaultRestoreCost / 1000, Int64(UInt32.max))),
                             regretWindow: TimeSpan(microseconds: regretWindow), suspendEarly: suspendEarly,
                             terminateSuspendedAtCritical: terminateSuspendedAtCritical, maxSessions: maxSessions,
                             archivedMaxAge: TimeSpan(microseconds: archivedMaxAge))
    }

    var psiSettings: PSISource.Settings {
        PSISource.Settings(path: psiPath, warningStallUSec: UInt64(psiWarningStall),
                           criticalStallUSec: UInt64(psiCriticalStall), windowUSec: UInt64(psiWindow))
    }

    /// Names resolved to ids now: the default group may not exist (no group administrators).
    var accessPolicy: AccessPolicy {
        AccessPolicy(administratorUIDs: [0, geteuid()],
                     administratorGroup: administratorGroup.isEmpty ? nil : UserDatabase.gid(administratorGroup),
                     owners: apps.compactMapValues { $0.uid == nil && $0.gid == nil ? nil : $0.owner },
                     notifiers: apps.compactMapValues(\.notifyGID))
    }

    var engineConfiguration: EngineConfiguration {
        EngineConfiguration(suspendDelay: TimeSpan(microseconds: suspendDelay),
                            backgroundTaskBudget: TimeSpan(microseconds: backgroundTaskBudget),
                            expirationGrace: TimeSpan(microseconds: expirationGrace),
                            refreshBudget: TimeSpan(microseconds: background.refreshBudget),
                            processingBudget: TimeSpan(microseconds: background.processingBudget),
                            notificationBudget: TimeSpan(microseconds: background.notificationBudget),
                            maxScheduledTasks: background.maxScheduledTasks,
                            maxPendingNotifications: background.maxPendingNotifications,
                            maxPendingOpens: routing.maxPendingOpens)
    }

    var reclaimGrace: ReclaimGrace.Configuration {
        ReclaimGrace.Configuration(warning: TimeSpan(microseconds: graceWarning), critical: TimeSpan(microseconds: graceCritical))
    }

    var appDeadlines: AttachmentTable.Deadlines {
        AttachmentTable.Deadlines(didEnterBackground: TimeSpan(microseconds: didEnterBackgroundTimeout),
                                  willTerminate: TimeSpan(microseconds: willTerminateTimeout))
    }
}

enum PressureSourceKind: String, CaseIterable, Sendable {
    case simulated
    case psi
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
            // Empty: the default socket, as documented (and as --dump-config prints it).
            if v.isEmpty {
                s.socketPath = nil
                return nil
            }
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
        timeKey("Lifecycle", "SuspendDelaySec", \.suspendDelay, minimum: 0),
        timeKey("Lifecycle", "BackgroundTaskBudgetSec", \.backgroundTaskBudget, minimum: 1_000),
        timeKey("Lifecycle", "ExpirationGraceSec", \.expirationGrace, minimum: 0),
        timeKey("Reclaim", "GraceWarningSec", \.graceWarning, minimum: 10_000),
        timeKey("Reclaim", "GraceCriticalSec", \.graceCritical, minimum: 10_000),
        timeKey("Reclaim", "MeasureIntervalSec", \.measureInterval, minimum: 100_000),
        timeKey("Lifecycle", "DidEnterBackgroundTimeoutSec", \.didEnterBackgroundTimeout, minimum: 10_000),
        timeKey("Lifecycle", "WillTerminateTimeoutSec", \.willTerminateTimeout, minimum: 10_000),
        timeKey("Lifecycle", "StopTimeoutSec", \.stopTimeout, minimum: 100_000),
        boolKey("System", "FollowLogin", \.followLogin),
        timeKey("System", "LockedBackgroundSec", \.lockedBackground, minimum: 0),
        boolKey("System", "FollowIdle", \.followIdle),
    ] + BackgroundSettings.keys + RoutingSettings.keys + [
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
        SettingKey(section: "Pressure", key: "Sources", apply: { s, v in
            var kinds: [PressureSourceKind] = []
            for word in v.split(separator: " ") where !word.isEmpty {
                guard let kind = PressureSourceKind(rawValue: String(word)) else {
                    return "Sources= takes a space-separated list of simulated and psi"
                }
                if !kinds.contains(kind) { kinds.append(kind) }
            }
            s.pressureSources = kinds
            return nil
        }, show: { $0.pressureSources.map(\.rawValue).joined(separator: " ") }),
        SettingKey(section: "Pressure", key: "MemoryBudget", apply: { s, v in
            guard let bytes = ConfigValues.bytes(v), bytes > 0 else { return "MemoryBudget= must be a positive size such as 8G" }
            s.memoryBudget = bytes
            return nil
        }, show: { ConfigValues.formatBytes($0.memoryBudget) }),
        percentKey("LowWatermark", \.watermarks.low),
        percentKey("HighWatermark", \.watermarks.high),
        percentKey("CriticalWatermark", \.watermarks.critical),
        timeKey("Pressure", "HoldSec", \.pressureHold, minimum: 0),
        SettingKey(section: "Pressure", key: "PSIPath", apply: { s, v in
            guard v.hasPrefix("/") else { return "PSIPath= must be an absolute path" }
            s.psiPath = v
            return nil
        }, show: { $0.psiPath }),
        timeKey("Pressure", "PSIWarningStallSec", \.psiWarningStall, minimum: 1),
        timeKey("Pressure", "PSICriticalStallSec", \.psiCriticalStall, minimum: 1),
        timeKey("Pressure", "PSIWindowSec", \.psiWindow, minimum: 1),
        timeKey("Reclaim", "AgingSec", \.aging, minimum: 0),
        timeKey("Reclaim", "SettleSec", \.settle, minimum: 0),
        SettingKey(section: "Reclaim", key: "MaxVictimsPerBatch", apply: { s, v in
            guard let n = Int(v), n >= 1, n <= 100_000 else { return "MaxVictimsPerBatch= must be 1 to 100000" }
            s.maxVictimsPerBatch = n
            return nil
        }, show: { "\($0.maxVictimsPerBatch)" }),
        timeKey("Reclaim", "DefaultRestoreCostSec", \.defaultRestoreCost, minimum: 1_000),
        timeKey("Reclaim", "RegretWindowSec", \.regretWindow, minimum: 0),
        boolKey("Lifecycle", "AppCgroups", \.appCgroups),
        boolKey("Reclaim", "SuspendEarly", \.suspendEarly),
        boolKey("Reclaim", "TerminateSuspendedAtCritical", \.terminateSuspendedAtCritical),
        SettingKey(section: "Reclaim", key: "MaxSessions", apply: { s, v in
            guard let n = Int(v), n >= 0 else { return "MaxSessions= must be 0 (off) or a positive number" }
            s.maxSessions = n
            return nil
        }, show: { "\($0.maxSessions)" }),
        timeKey("Reclaim", "ArchivedMaxAgeSec", \.archivedMaxAge, minimum: 0),
        SettingKey(section: "Access", key: "AdministratorGroup", apply: { s, v in
            // Empty: no group of administrators (root and the daemon's own user remain). A
            // group that does not exist (yet) gives nobody rights: the default, scenectl, exists
            // only where the package created it.
            guard !v.contains(" "), !v.contains(":") else { return "AdministratorGroup= must be a group name or number" }
            s.administratorGroup = v
            return nil
        }, show: { $0.administratorGroup }),
        countKey("MaxConnections", \.limits.maxConnections, 1...1_000_000),
        countKey("MaxConnectionsPerUser", \.limits.maxConnectionsPerUser, 1...1_000_000),
        sizeKey("MaxMessageSize", \.limits.maxMessageSize, 4 << 10...(256 << 20)),
        sizeKey("MaxOutputPerConnection", \.limits.maxOutputPerConnection, 64 << 10...(16 << 30)),
        sizeKey("MaxBufferedOutput", \.limits.maxBufferedOutput, 64 << 10...(1 << 40)),
        sizeKey("MaxBufferedInput", \.limits.maxBufferedInput, 64 << 10...(1 << 40)),
        timeKey("Limits", "IdleTimeoutSec", \.limits.idleTimeout, minimum: 100_000),
        countKey("MaxSessionsPerApp", \.limits.maxSessionsPerApp, 1...100_000_000),
        sizeKey("MaxUserInfoSize", \.limits.maxUserInfoSize, 2...(16 << 20)),
        sizeKey("MaxRestorationSize", \.limits.maxRestorationSize, 0...(16 << 20)),
    ]

    /// Keys that moved to another section; an old file setting them is still applied.
    static let moved: [String: String] = ["[Daemon] MaxConnections": "Limits"]

    static func countKey(_ key: String, _ path: WritableKeyPath<DaemonSettings, Int> & Sendable,
                         _ range: ClosedRange<Int>) -> SettingKey {
        SettingKey(section: "Limits", key: key, apply: { s, v in
            guard let n = Int(v.trimmingSpaces), range.contains(n) else {
                return "\(key)= must be \(range.lowerBound) to \(range.upperBound)"
            }
            s[keyPath: path] = n
            return nil
        }, show: { "\($0[keyPath: path])" })
    }

    static func sizeKey(_ key: String, _ path: WritableKeyPath<DaemonSettings, Int> & Sendable,
                        _ range: ClosedRange<Int>) -> SettingKey {
        SettingKey(section: "Limits", key: key, apply: { s, v in
            let text = { (n: Int) in ConfigValues.formatBytes(UInt64(n)) }
            guard let bytes = ConfigValues.bytes(v), bytes <= UInt64(Int.max), range.contains(Int(bytes)) else {
                return "\(key)= must be a size from \(text(range.lowerBound)) to \(text(range.upperBound)), such as \(text(range.upperBound / 4))"
            }
            s[keyPath: path] = Int(bytes)
            return nil
        }, show: { ConfigValues.formatBytes(UInt64($0[keyPath: path])) })
    }

    static func percentKey(_ key: String, _ path: WritableKeyPath<DaemonSettings, Double> & Sendable) -> SettingKey {
        SettingKey(section: "Pressure", key: key, apply: { s, v in
            guard let fraction = ConfigValues.percent(v), fraction > 0 else { return "\(key)= must be a percentage above 0% and at most 100%, such as 90%" }
            s[keyPath: path] = fraction
            return nil
        }, show: { ConfigValues.formatPercent($0[keyPath: path]) })
    }

    static func boolKey(_ section: String, _ key: String, _ path: WritableKeyPath<DaemonSettings, Bool> & Sendable) -> SettingKey {
        SettingKey(section: section, key: key, apply: { s, v in
            guard let b = ConfigValues.bool(v) else { return "\(key)= must be yes or no" }
            s[keyPath: path] = b
            return nil
        }, show: { $0[keyPath: path] ? "yes" : "no" })
    }

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
