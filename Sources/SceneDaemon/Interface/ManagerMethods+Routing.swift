import SceneCore
import SceneInterface
import Varlink

/// Open and ListRoutes: handing a URL or an activity to the app that handles it (issue 37).
/// The daemon chooses the app (`RouteTable`), the engine the scene; an Open for an app that
/// is not running is stored and the app started by the pass (`OpenLaunches`).
extension MethodDispatcher {
    /// io.scened.Manager.Open: for administrators and the target app's owner.
    func open(_ c: MethodCall) throws(VarlinkError) {
        let input = try OpenInput.parse(c.p, source: nil, settings.routing)
        let app = try routedApp(input.route)
        guard policy.mayActAs(c.caller, app: app) else {
            throw refusal(c.caller, c.call.method, "Open to \(app) is for its owner and administrators", app: app)
        }
        var request = OpenRequest(app: app, payload: input.payload, activate: c.p.bool("activate") ?? true)
        request.session = try targetSession(c, app)
        let (result, events) = try deliverOpen(request, input.route)
        reply(c) { w in
            w.field("app", app)
            Self.openResult(result, &w)
            w.events(self.host.pending.events[events])
        }
    }

    func listRoutes(_ c: MethodCall) throws(VarlinkError) {
        let routes = settings.routes.routes
        reply(c) { w in
            w.key(static: "routes")
            w.beginArray()
            for r in routes {
                w.beginObject()
                w.field("kind", r.kind.rawValue)
                w.field("name", r.name)
                w.field("app", r.app)
                w.field("file", r.origin.path)
                w.endObject()
            }
            w.endArray()
        }
    }

    /// The app whose apps.d file lists the scheme or type; NoHandler naming it otherwise.
    func routedApp(_ route: OpenInput.Route) throws(VarlinkError) -> AppID {
        let found: AppID?
        var p = JSONObject()
        switch route {
        case .scheme(let scheme):
            found = settings.routes.app(forScheme: scheme)
            p["scheme"] = .string(scheme)
            p["message"] = .string("no app handles the URL scheme \"\(scheme):\" ([App] URLSchemes= in apps.d)")
        case .activityType(let type):
            found = settings.routes.app(forActivityType: type)
            p["activityType"] = .string(type)
            p["message"] = .string("no app handles the activity type \"\(type)\" ([App] ActivityTypes= in apps.d)")
        }
        guard let found else { throw VarlinkError(name: ManagerInterface.name + ".NoHandler", parameters: p) }
        return found
    }

    /// Manager.Open's `session`: it must exist and be the target app's (NotOwnSession).
    private func targetSession(_ c: MethodCall, _ app: AppID) throws(VarlinkError) -> SessionID? {
        guard let id = try c.p.optionalSession("session") else { return nil }
        guard let s = host.engine.sessions[id] else { throw commandError(lookupFailure(id)) }
        guard s.app == app else {
            var p = JSONObject([("app", .string(app.rawValue)), ("session", .string(id.description))])
            p["message"] = .string("session \(id) is \(s.app)'s, not \(app)'s, which handles what is opened")
            throw VarlinkError(name: ManagerInterface.name + ".NotOwnSession", parameters: p)
        }
        return id
    }

    /// Runs the Open; a suspended app the engine resumed for it is thawed now, so that the
    /// kernel's thaw overlaps the commit (as for a wake). Logged once the batch commits.
    func deliverOpen(_ request: OpenRequest, _ route: OpenInput.Route) throws(VarlinkError) -> (CommandResult, Range<Int>) {
        let (result, events) = try run(.open(request))
        if host.pending.events[events].first?.name == .resumed { apps.thawForWake(request.app) }
        if logger.wants(.info) {
            let entry = OpenJournal.entry(request, route, result, withURL: logger.wants(.debug))
            logger.daemon(batch: host.gathering, position: events.lowerBound, entry.priority, entry.messageID,
                          entry.message, entry.fields)
        }
        return (result, events)
    }

    /// The App JSON's urlSchemes and activityTypes: what its apps.d file declares.
    func declaredRoutes(_ app: AppID) -> (schemes: [String], types: [String]) {
        guard let s = apps.appSettings[app] else { return ([], []) }
        return (s.urlSchemes, s.activityTypes)
    }

    static func openResult(_ result: CommandResult, _ w: inout JSONWriter) {
        switch result {
        case .session(let id): w.field("session", id)
        case .open(let id): w.field("open", id.description)
        default: break
        }
    }
}
