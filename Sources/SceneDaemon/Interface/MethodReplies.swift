import SceneCore
import Varlink

/// Running commands on the EngineHost and holding their replies until their batch commits.
extension MethodDispatcher {
    func run(_ command: Command) throws(VarlinkError) -> (CommandResult, Range<Int>) {
        do {
            return try host.execute(command)
        } catch {
            throw commandError(error)
        }
    }

    func lookupFailure(_ id: SessionID) -> LifecycleError {
        host.engine.wasDiscarded(id) ? .sessionDiscarded(id) : .noSuchSession(id)
    }

    func runReplyingEvents(_ command: Command, _ c: MethodCall) throws(VarlinkError) {
        let (_, events) = try run(command)
        reply(c) { w in w.events(self.host.pending.events[events]) }
    }

    // MARK: - Limits

    var limits: ConnectionLimits { server.limits }

    func checkedUserInfo(_ text: String) throws(VarlinkError) -> String {
        let size = text.utf8.count
        guard size <= limits.maxUserInfoSize else {
            throw limits.error("MaxUserInfoSize", "userInfo is \(size) bytes, the most a session may keep is \(limits.maxUserInfoSize) (MaxUserInfoSize)")
        }
        return text
    }

    /// `session` names the payload in the error when one answer carries several.
    func checkedRestoration(_ data: RestorationData?, of session: SessionID? = nil) throws(VarlinkError) -> RestorationData? {
        guard let data, data.byteCount > limits.maxRestorationSize else { return data }
        let whose = session.map { " of \($0)" } ?? ""
        throw limits.error("MaxRestorationSize", "the state-restoration data\(whose) is \(data.byteCount) bytes, the most a session may keep is \(limits.maxRestorationSize) (MaxRestorationSize)")
    }

    func checkSessionQuota(_ app: AppID) throws(VarlinkError) {
        guard let record = host.engine.apps[app], record.sessions.count >= limits.maxSessionsPerApp else { return }
        throw limits.error("MaxSessionsPerApp", "\(app) has \(record.sessions.count) sessions, the most one app may have (MaxSessionsPerApp=\(limits.maxSessionsPerApp)); discard some first")
    }

    // MARK: - Replies

    func reply(_ c: MethodCall, continues: Bool = false, _ body: (inout JSONWriter) -> Void) {
        guard !c.call.oneway else { return }
        c.conn.hold(batch: host.gathering) { w in w.reply(continues: continues, body) }
    }

    func replyObject(_ call: VarlinkCall, _ conn: ClientConnection, _ parameters: JSONObject) {
        guard !call.oneway else { return }
        conn.hold(batch: host.gathering) { w in
            w.beginObject()
            w.key("parameters")
            w.value(.object(parameters))
            w.endObject()
        }
    }

    func fail(_ call: VarlinkCall, _ conn: ClientConnection, _ error: VarlinkError) {
        guard !call.oneway else { return }
        conn.holdError(batch: host.gathering, error)
    }

    /// The session as the reply shows it, with its payloads (read from the store if the engine
    /// left them there); a damaged stored payload fails the reply, not the daemon.
    func replySession(_ id: SessionID, _ c: MethodCall) throws(VarlinkError) {
        let payloads = try sessionPayloads(id)
        reply(c) { w in
            if let s = self.host.engine.sessions[id] { w.key("session"); w.session(s, payloads: payloads) }
        }
    }

    func replySessionAndEvents(_ id: SessionID, _ events: Range<Int>, _ c: MethodCall) throws(VarlinkError) {
        let payloads = try sessionPayloads(id)
        reply(c) { w in
            if let s = self.host.engine.sessions[id] { w.key("session"); w.session(s, payloads: payloads) }
            w.events(self.host.pending.events[events])
        }
    }

    /// nil when there is no such session (the reply then has none).
    func sessionPayloads(_ id: SessionID) throws(VarlinkError) -> (userInfo: UserInfo, restoration: RestorationData?)? {
        guard let s = host.engine.sessions[id] else { return nil }
        do {
            return try host.savedPayloads(of: s)
        } catch {
            throw commandError(error)
        }
    }

    func replyApp(_ app: AppID, _ c: MethodCall) {
        reply(c) { w in
            let engine = self.host.engine
            if let a = engine.apps[app] {
                w.key("app")
                w.app(a, engine: engine, attachedPid: self.apps.attachments.attachment(of: app)?.pid,
                      started: self.apps.startedProcess(app), follows: self.followedUser(app),
                      declaredModes: self.apps.appSettings[app]?.backgroundModes ?? [],
                      routes: self.declaredRoutes(app))
            }
        }
    }
}
