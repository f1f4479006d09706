import Foundation
import Varlink

/// BGTaskScheduler's two kinds of task (io.scened.App's BackgroundTaskKind).
public enum BackgroundTaskKind: String, Sendable, Hashable, CaseIterable {
    /// BGAppRefreshTask: short (scened's RefreshBudgetSec=, 30 s by default).
    case refresh
    /// BGProcessingTask: longer (ProcessingBudgetSec=), and run only while memory pressure is normal.
    case processing
}

/// BGTaskRequest: what `BackgroundTaskScheduler.submit` hands to scened.
public protocol BackgroundTaskRequest: Sendable {
    /// The identifier a launch handler was registered for.
    var identifier: String { get }
    var kind: BackgroundTaskKind { get }
    /// Not run before this time; nil: as soon as scened can wake the app.
    var earliestBeginDate: Date? { get }
}

/// BGAppRefreshTaskRequest.
public struct AppRefreshTaskRequest: BackgroundTaskRequest, Equatable {
    public let identifier: String
    public var earliestBeginDate: Date?
    public var kind: BackgroundTaskKind { .refresh }

    public init(identifier: String, earliestBeginDate: Date? = nil) {
        self.identifier = identifier
        self.earliestBeginDate = earliestBeginDate
    }
}

/// BGProcessingTaskRequest.
public struct ProcessingTaskRequest: BackgroundTaskRequest, Equatable {
    public let identifier: String
    public var earliestBeginDate: Date?
    public var kind: BackgroundTaskKind { .processing }

    public init(identifier: String, earliestBeginDate: Date? = nil) {
        self.identifier = identifier
        self.earliestBeginDate = earliestBeginDate
    }
}

/// BGTask: one run of a scheduled task, handed to its launch handler (performBackgroundTask).
/// The app is awake for it until `setTaskCompleted(success:)` or, at `deadline`, the
/// expiration handler and a grace period after which scened suspends the app anyway (R34).
@MainActor
public final class BackgroundTask {
    public let identifier: String
    public let kind: BackgroundTaskKind
    /// When the task's budget ends (CompleteBackgroundTask is due), if scened said.
    public let deadline: Date?
    /// The sequence number of the performBackgroundTask event.
    public let seq: UInt64
    /// Called once, on the main actor, when the budget runs out (backgroundTaskWillExpire):
    /// stop the work and call setTaskCompleted(success: false). Without a handler SceneClient
    /// completes the task with success false itself.
    public var expirationHandler: (@MainActor () -> Void)?
    public private(set) var isCompleted = false
    private let complete: @MainActor (BackgroundTask, Bool) -> Void

    init(identifier: String, kind: BackgroundTaskKind, deadline: Date?, seq: UInt64,
         complete: @escaping @MainActor (BackgroundTask, Bool) -> Void) {
        self.identifier = identifier
        self.kind = kind
        self.deadline = deadline
        self.seq = seq
        self.complete = complete
    }

    /// BGTask.setTaskCompleted(success:): tells scened the work is done
    /// (CompleteBackgroundTask). The call is queued at once, in order with the app's other
    /// requests; a second call does nothing.
    public func setTaskCompleted(success: Bool) {
        guard !isCompleted else { return }
        isCompleted = true
        expirationHandler = nil
        complete(self, success)
    }

    /// Runs the expiration handler once; false if there was none to run.
    func expire() -> Bool {
        guard !isCompleted, let handler = expirationHandler else { return false }
        expirationHandler = nil
        handler()
        return true
    }
}

/// BGTaskScheduler for a scened app (`SceneApplication.taskScheduler`). As with Apple's, every
/// launch handler is registered before launching finishes: before `run`, or at the latest in
/// application(_:didFinishLaunchingWithOptions:). A process scened starts for background work
/// is launched with cause `background` and gets its performBackgroundTask right after
/// didFinishLaunching, so a handler registered later would miss it.
@MainActor
public final class BackgroundTaskScheduler {
    /// io.scened.App's limit on an identifier's length, in bytes.
    public static let maxIdentifierBytes = 255

    public typealias LaunchHandler = @MainActor (BackgroundTask) async -> Void

    private var handlers: [String: LaunchHandler] = [:]
    /// Set once didFinishLaunching's handler has returned: registration is closed.
    var launchFinished = false
    /// The tasks handed over and not completed, by identifier.
    var running: [String: BackgroundTask] = [:]
    private let send: @MainActor (String, JSONObject) async throws -> Void

    init(send: @escaping @MainActor (String, JSONObject) async throws -> Void) {
        self.send = send
    }

    /// BGTaskScheduler.register(forTaskWithIdentifier:using:launchHandler:): `launchHandler`
    /// runs for each performBackgroundTask of `identifier`, on the main actor, in order with the
    /// other callbacks (the events behind it, its own expiration among them, wait until it
    /// returns: start long work in a Task and return). false if the identifier is invalid
    /// (empty, over 255 bytes), already registered, or launching has finished.
    @discardableResult
    public func register(forTaskWithIdentifier identifier: String, using launchHandler: @escaping LaunchHandler) -> Bool {
        guard !launchFinished, Self.isValid(identifier), handlers[identifier] == nil else { return false }
        handlers[identifier] = launchHandler
        return true
    }

    public var registeredIdentifiers: [String] { handlers.keys.sorted() }

    /// BGTaskScheduler.submit: scened stores the request (ScheduleBackgroundTask) and wakes the
    /// app for it at or after its earliest begin date. Submitting an identifier again replaces
    /// the request. Throws `SceneClientError.invalidTaskRequest` for an identifier no handler is
    /// registered for, and the daemon's errors (LimitExceeded at MaxScheduledTasks=).
    public func submit(_ request: any BackgroundTaskRequest) async throws {
        guard Self.isValid(request.identifier) else {
            throw SceneClientError.invalidTaskRequest("identifier must be 1 to \(Self.maxIdentifierBytes) bytes")
        }
        guard handlers[request.identifier] != nil else {
            throw SceneClientError.invalidTaskRequest("no launch handler is registered for \(request.identifier)")
        }
        var p: JSONObject = ["identifier": .string(request.identifier), "kind": .string(request.kind.rawValue)]
        if let date = request.earliestBeginDate {
            p["earliestBegin"] = .int(Int64((date.timeIntervalSince1970 * 1_000_000).rounded()))
        }
        try await send("ScheduleBackgroundTask", p)
    }

    /// BGTaskScheduler.cancel(taskRequestWithIdentifier:): the waiting request is removed
    /// (io.scened.Manager.NoSuchBackgroundTask if none waits).
    public func cancel(taskRequestWithIdentifier identifier: String) async throws {
        try await send("CancelBackgroundTask", ["identifier": .string(identifier)])
    }

    func handler(for identifier: String) -> LaunchHandler? { handlers[identifier] }

    static func isValid(_ identifier: String) -> Bool {
        !identifier.isEmpty && identifier.utf8.count <= maxIdentifierBytes
    }
}
