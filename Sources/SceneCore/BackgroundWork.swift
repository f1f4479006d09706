/// What wakes a suspended app without a user (R34): scheduled background tasks
/// (BGTaskScheduler's refresh and processing requests), notifications handed to it, and the
/// background modes that keep it running while it declares the activity.

/// Why an app is woken: a scheduled task of one of BGTaskScheduler's two kinds, or a
/// notification.
public enum WakeKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// BGAppRefreshTaskRequest: short, the default budget (30 s).
    case refresh
    /// BGProcessingTaskRequest: longer, and only while memory pressure is normal.
    case processing
    /// A notification (Notify): the app handles it within its budget.
    case notification

    public var staticName: StaticString {
        switch self {
        case .refresh: "refresh"
        case .processing: "processing"
        case .notification: "notification"
        }
    }
    public var name: String { staticName.description }
    public var description: String { name }
    public init?(name: String) {
        guard let k = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = k
    }
}

/// A task an app submitted (BGTaskScheduler.submit): stored until it runs or is cancelled.
/// One per identifier and app; submitting the same identifier again replaces it.
public struct ScheduledTask: Sendable, Equatable {
    public let app: AppID
    public let identifier: String
    /// refresh or processing.
    public var kind: WakeKind
    /// Not run before this time (engine clock).
    public var earliestBegin: Timestamp
    public var submittedAt: Timestamp

    public init(app: AppID, identifier: String, kind: WakeKind, earliestBegin: Timestamp, submittedAt: Timestamp) {
        self.app = app
        self.identifier = identifier
        self.kind = kind
        self.earliestBegin = earliestBegin
        self.submittedAt = submittedAt
    }

    public var key: ScheduleKey { ScheduleKey(app: app, identifier: identifier) }
}

public struct ScheduleKey: Hashable, Sendable, Comparable {
    public let app: AppID
    public let identifier: String

    public init(app: AppID, identifier: String) {
        self.app = app
        self.identifier = identifier
    }

    public static func < (a: ScheduleKey, b: ScheduleKey) -> Bool {
        a.app.rawValue != b.app.rawValue ? a.app.rawValue < b.app.rawValue : a.identifier < b.identifier
    }
}

public struct NotificationID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public init?(parsing text: String) {
        guard let n = parseNumber(text, prefix: UInt8(ascii: "n")) else { return nil }
        rawValue = n
    }

    public static func < (a: NotificationID, b: NotificationID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "n\(rawValue)" }
}

public enum NotificationPriority: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Delivered when the app may be woken: not while memory pressure is warning or critical.
    case normal
    /// Delivered at once, under warning pressure too (never under critical pressure).
    case high

    public var name: String { self == .normal ? "normal" : "high" }
    public var description: String { name }
    public init?(name: String) {
        guard let p = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = p
    }
}

/// A notification waiting for its app (Notify): stored until it is delivered, so that an
/// accepted one reaches the app exactly once, across restarts.
public struct PendingNotification: Sendable, Equatable {
    public let id: NotificationID
    public let app: AppID
    /// A JSON object's text, checked by whoever accepted it.
    public let payload: String
    public let priority: NotificationPriority
    public let queuedAt: Timestamp

    public init(id: NotificationID, app: AppID, payload: String, priority: NotificationPriority, queuedAt: Timestamp) {
        self.id = id
        self.app = app
        self.payload = payload
        self.priority = priority
        self.queuedAt = queuedAt
    }
}

/// What a wake hands the app: one item per task or notification. An app is awake while any
/// item is open; the wake's event names the item, which the app answers to close it.
public struct WakeItem: Sendable, Equatable {
    public enum Subject: Sendable, Hashable {
        case task(String)
        case notification(NotificationID)
    }

    public let subject: Subject
    public let kind: WakeKind
    /// The sequence number of the event that handed it over (performBackgroundTask or
    /// didReceiveNotification); Acknowledge of that number closes a notification.
    public let seq: UInt64
    public let beganAt: Timestamp
    public let deadline: Timestamp
    /// A task's backgroundTaskWillExpire was sent: it is closed one grace period later.
    public internal(set) var expirationSentAt: Timestamp?

    public init(subject: Subject, kind: WakeKind, seq: UInt64, beganAt: Timestamp, deadline: Timestamp,
                expirationSentAt: Timestamp? = nil) {
        self.subject = subject
        self.kind = kind
        self.seq = seq
        self.beganAt = beganAt
        self.deadline = deadline
        self.expirationSentAt = expirationSentAt
    }
}

/// Wake `app` for these due tasks and pending notifications (R34). The app must be running or
/// suspended: a not-running app is launched first by whoever can start its process.
public struct WakeRequest: Sendable, Equatable {
    public var app: AppID
    public var tasks: [String]
    public var notifications: [NotificationID]

    public init(app: AppID, tasks: [String] = [], notifications: [NotificationID] = []) {
        self.app = app
        self.tasks = tasks
        self.notifications = notifications
    }
}

/// UIBackgroundModes that keep an app running while it declares the activity
/// (BeginBackgroundActivity): it is not suspended for being idle, but is still warned,
/// counted and reclaimed under pressure.
public struct BackgroundModes: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let audio = BackgroundModes(rawValue: 1)
    public static let location = BackgroundModes(rawValue: 2)
    public static let voip = BackgroundModes(rawValue: 4)
    public static let processing = BackgroundModes(rawValue: 8)

    public static let named: [(String, BackgroundModes)] = [
        ("audio", .audio), ("location", .location), ("voip", .voip), ("processing", .processing),
    ]

    public init?(name: String) {
        guard let m = Self.named.first(where: { $0.0 == name }) else { return nil }
        self = m.1
    }

    public var names: [String] { Self.named.filter { contains($0.1) }.map(\.0) }
    public var description: String { names.joined(separator: " ") }
}

/// The event detail of a wake: `performBackgroundTask`, `didReceiveNotification`, and the
/// `backgroundTaskWillExpire` of a scheduled task.
public struct WakeDetail: Sendable, Equatable {
    public var kind: WakeKind
    /// The task's identifier, or the notification's id ("n…").
    public var identifier: String
    /// didReceiveNotification: the payload (a JSON object's text).
    public var payload: String?
    /// When the item closes: answer (CompleteBackgroundTask, or Acknowledge of a
    /// notification) before it.
    public var deadline: Timestamp

    public init(kind: WakeKind, identifier: String, payload: String? = nil, deadline: Timestamp) {
        self.kind = kind
        self.identifier = identifier
        self.payload = payload
        self.deadline = deadline
    }
}
