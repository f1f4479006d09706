import SceneCore
import SceneInterface
import Varlink

/// The method table of io.scened.App. Every method names its app; the caller must be that app's
/// owner or an administrator (the same rule as io.scened.Manager's life-cycle methods), and a
/// session, task or answer it names must be the app's own.
enum AppMethods {
    static let table: [String: ManagerMethod] = {
        var t: [String: ManagerMethod] = [:]
        for m in all { t[AppInterface.name + "." + m.name] = m }
        return t
    }()

    static let all: [ManagerMethod] = [
        ManagerMethod(name: "Attach", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.attach),
        ManagerMethod(name: "Acknowledge", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.acknowledge),
        ManagerMethod(name: "AnswerNotice", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.answerNotice),
        ManagerMethod(name: "Detach", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.detach),
        ManagerMethod(name: "RequestSceneSessionActivation", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.requestActivation),
        ManagerMethod(name: "Open", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.appOpen),
        ManagerMethod(name: "SetActivationConditions", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.setActivationConditions),
        ManagerMethod(name: "RequestSceneSessionDestruction", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.requestDestruction),
        ManagerMethod(name: "BeginBackgroundTask", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.appBeginTask),
        ManagerMethod(name: "EndBackgroundTask", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.appEndTask),
        ManagerMethod(name: "SaveState", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.appSaveState),
        ManagerMethod(name: "SaveUserInfo", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.appSaveUserInfo),
        ManagerMethod(name: "SetFootprint", access: .app(ManagerMethods.appParameter), handler: MethodDispatcher.appSetFootprint),
        ManagerMethod(name: "ScheduleBackgroundTask", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.scheduleBackgroundTask),
        ManagerMethod(name: "CancelBackgroundTask", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.cancelBackgroundTask),
        ManagerMethod(name: "CompleteBackgroundTask", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.completeBackgroundTask),
        ManagerMethod(name: "BeginBackgroundActivity", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.beginBackgroundActivity),
        ManagerMethod(name: "EndBackgroundActivity", access: .app(ManagerMethods.appParameter),
                      handler: MethodDispatcher.endBackgroundActivity),
    ]
}

/// The errors of io.scened.App.
extension MethodDispatcher {
    static func appError(_ name: String, _ app: AppID, _ message: String) -> VarlinkError {
        appError(name, app, [], message)
    }

    static func appError(_ name: String, _ app: AppID, _ fields: [(String, JSONValue)], _ message: String) -> VarlinkError {
        var p = JSONObject([("app", .string(app.rawValue))] + fields)
        p["message"] = .string(message)
        return VarlinkError(name: AppInterface.name + "." + name, parameters: p)
    }

    /// The session, if it is the app's own; NoSuchSession/SessionDiscarded or NotOwnSession.
    func ownSession(_ c: MethodCall, _ app: AppID, _ name: String = "session") throws(VarlinkError) -> SessionID? {
        guard let id = try c.p.optionalSession(name) else { return nil }
        guard let s = host.engine.sessions[id] else { throw Self.error(for: lookupFailure(id)) }
        guard s.app == app else {
            throw Self.appError("NotOwnSession", app, [("session", .string(id.description))], "session \(id) is not \(app)'s")
        }
        return id
    }

    /// Acknowledge and Detach come from the attached process itself (or an administrator).
    func attachedProcess(_ c: MethodCall, _ app: AppID) throws(VarlinkError) -> AttachmentTable.Attachment {
        guard let a = apps.attachments.attachment(of: app) else {
            throw Self.appError("NotAttached", app, "no process is attached as \(app)")
        }
        guard a.pid == c.caller.pid || policy.isAdministrator(c.caller) else {
            throw Self.appError("NotAttached", app, "\(app) is attached by pid \(a.pid), not by you (pid \(c.caller.pid))")
        }
        return a
    }
}
