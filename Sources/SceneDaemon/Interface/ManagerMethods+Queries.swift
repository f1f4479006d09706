import SceneCore
import Varlink

/// The handlers of the read-only methods, open to anyone: private data (userInfo, restoration
/// data) only for the app's owner and administrators.
extension MethodDispatcher {
    func getSession(_ c: MethodCall) throws(VarlinkError) {
        let id = try c.p.session()
        guard let s = host.engine.sessions[id] else { throw commandError(lookupFailure(id)) }
        let visible = policy.maySeePrivateData(c.caller, app: s.app)
        let payloads = visible ? try sessionPayloads(id) : nil
        reply(c) { w in
            if let s = self.host.engine.sessions[id] {
                w.key("session")
                w.session(s, payloads: payloads, marksWithheld: !visible)
            }
        }
    }

    func listApps(_ c: MethodCall) throws(VarlinkError) {
        let engine = host.engine
        reply(c) { w in
            w.key("apps")
            w.beginArray()
            for id in engine.apps.keys.sorted() {
                w.app(engine.apps[id]!, engine: engine, attachedPid: self.apps.attachments.attachment(of: id)?.pid,
                      started: self.apps.startedProcess(id), follows: self.followedUser(id),
                      declaredModes: self.apps.appSettings[id]?.backgroundModes ?? [],
                      routes: self.declaredRoutes(id))
            }
            w.endArray()
        }
    }

    func getApp(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        guard host.engine.apps[app] != nil else { throw Self.error(for: .noSuchApp(app)) }
        replyApp(app, c)
    }

    func getStatus(_ c: MethodCall) throws(VarlinkError) {
        reply(c) { w in self.writeStatus(&w) }
    }

    func getPressure(_ c: MethodCall) throws(VarlinkError) {
        reply(c) { w in self.writePressure(&w) }
    }

    func listSessions(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.optionalApp("app")
        let condition = try c.p.enumValue("condition", SessionCondition.init(name:))
        let state = try c.p.enumValue("state", SceneActivationState.init(name:))
        let engine = host.engine
        var ids: [SessionID]
        if let app {
            ids = Array(engine.apps[app]?.sessions ?? [])
        } else {
            ids = Array(engine.sessions.keys)
        }
        // Without a filter no session need be looked at: 100,000 lookups (and copies) cost
        // more than the rest of the call.
        if condition != nil || state != nil {
            ids.removeAll { id in
                let s = engine.sessions[id]!
                return (condition != nil && s.condition != condition) || (state != nil && s.sceneState != state)
            }
        }
        if c.call.more {
            // Put in order as it is read (SessionIDCursor): no sort before the first piece.
            c.conn.stream = .listing(SessionListing(ids: SessionIDCursor(ids), condition: condition, state: state))
            return
        }
        guard ids.count <= Self.maxUnstreamedSessions else { throw .expectedMore() }
        ids.sort()
        reply(c) { w in
            w.key("sessions")
            w.beginArray()
            for id in ids { w.listedSession(engine.sessions[id]!) }
            w.endArray()
        }
    }

    func monitor(_ c: MethodCall) throws(VarlinkError) {
        guard c.call.more else { throw .expectedMore() }
        let app = try c.p.optionalApp("app")
        let session = try c.p.optionalSession("session")
        if let session, session.rawValue >= host.engine.nextSessionNumber {
            // Never allocated, so a typo: ids are not handed out in advance to wait for.
            throw Self.error(for: .noSuchSession(session))
        }
        let next = host.committedNextSequence
        var stream = MonitorStream(app: app, session: session, backlogNext: nil, liveFrom: next)
        if c.p.has("since") {
            guard let since = try c.p.count("since") else { throw .invalidParameter("since") }
            if since < next {
                if let unavailable = host.checkAvailable(from: since) { throw Self.error(unavailable) }
                stream.backlogNext = since
            } else {
                stream.liveFrom = since
            }
        }
        // The first reply carries no event: it tells the client the subscription is in place.
        reply(c, continues: true) { _ in }
        c.conn.stream = .monitor(stream)
        c.conn.behindBytes = 0
    }
}
