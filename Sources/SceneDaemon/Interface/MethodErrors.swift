import SceneInterface
import SystemdKit
import SceneCore
import Varlink

/// The typed errors of the interface, and the refusals of the access policy.
extension MethodDispatcher {
    /// The interface's typed error for a refused command: its name, its identifying
    /// parameters, and always a `message` for people.
    static func error(for error: LifecycleError) -> VarlinkError {
        let (name, fields): (String, [(String, JSONValue)])
        switch error {
        case .noSuchApp(let app):
            (name, fields) = ("NoSuchApp", [("app", .string(app.rawValue))])
        case .noSuchSession(let id):
            (name, fields) = ("NoSuchSession", [("session", .string(id.description))])
        case .sessionDiscarded(let id):
            (name, fields) = ("SessionDiscarded", [("session", .string(id.description))])
        case .noSuchTask(let token):
            (name, fields) = ("NoSuchTask", [("token", .string(token.description))])
        case .invalidTransition(let t):
            var f: [(String, JSONValue)] = [("command", .string(t.command)), ("app", .string(t.app.rawValue))]
            if let s = t.session { f.append(("session", .string(s.description))) }
            f += [("state", .string(t.state)), ("reason", .string(t.reason))]
            (name, fields) = ("InvalidTransition", f)
        case .invalidArgument(let parameter, let reason):
            (name, fields) = ("InvalidArgument", [("parameter", .string(parameter)), ("reason", .string(reason))])
        case .savedDataUnavailable(let id, let reason):
            (name, fields) = ("SavedDataUnavailable", [("session", .string(id.description)), ("reason", .string(reason))])
        case .noSuchScheduledTask(let app, let identifier):
            (name, fields) = ("NoSuchBackgroundTask", [("app", .string(app.rawValue)), ("identifier", .string(identifier))])
        case .notAwaitingWake(let app, let item):
            (name, fields) = ("NoSuchBackgroundTask", [("app", .string(app.rawValue)), ("identifier", .string(item))])
        case .limitExceeded(let limit, let maximum, _):
            (name, fields) = ("LimitExceeded", [("limit", .string(limit)), ("maximum", .int(Int64(maximum)))])
        }
        var parameters = JSONObject(fields)
        parameters["message"] = .string(error.description)
        return VarlinkError(name: ManagerInterface.name + "." + name, parameters: parameters)
    }

    static func error(_ unavailable: EventsUnavailable) -> VarlinkError {
        var p = JSONObject()
        p["since"] = .int(Int64(unavailable.requested))
        p["oldest"] = .int(Int64(unavailable.oldest))
        p["message"] = .string("events before \(unavailable.oldest) are no longer kept")
        return VarlinkError(name: ManagerInterface.name + ".EventsUnavailable", parameters: p)
    }

    /// org.varlink.service.PermissionDenied, naming what was refused, and a journal entry
    /// (rate-limited: a caller must not be able to flood the journal by being refused).
    func refusal(_ caller: CallerIdentity, _ method: String, _ what: String, app: AppID? = nil) -> VarlinkError {
        let message = "permission denied: \(what); you are \(UserDatabase.userName(caller.uid)) (uid \(caller.uid))"
        let verdict = refusalLog.allow(now: server.now())
        if verdict.allowed {
            let suppressed = verdict.suppressed > 0 ? " (\(verdict.suppressed) similar refusals not logged)" : ""
            var fields: [(String, String)] = [
                ("SCENED_METHOD", method), ("SCENED_CLIENT_UID", String(caller.uid)),
                ("SCENED_CLIENT_GID", String(caller.gid)), ("SCENED_CLIENT_PID", String(caller.pid)),
            ]
            if let app { fields.append(("SCENED_APP", app.rawValue)) }
            logger.daemon(.notice, MessageID.permissionDenied,
                          "Refused \(method) to uid \(caller.uid) (gid \(caller.gid), pid \(caller.pid)): \(what).\(suppressed)",
                          fields)
        }
        return VarlinkError(name: "org.varlink.service.PermissionDenied", parameters: ["message": .string(message)])
    }

    /// The typed error for a refused command; one that names a quarantined session says so.
    func commandError(_ error: LifecycleError) -> VarlinkError {
        switch error {
        case .noSuchSession(let id), .sessionDiscarded(let id):
            if let quarantined = host.quarantine.refusal(for: id) { return quarantined }
        default:
            break
        }
        return Self.error(for: error)
    }
}
