import SceneCore
import Varlink

/// Writes the model as the interface's types (see ManagerInterface), straight into a reply
/// buffer: no intermediate JSON tree, and keys and enum names copied as static bytes, because
/// every Activate or Background reply carries a session and its events.
extension JSONWriter {
    mutating func field(_ name: StaticString, _ value: String) { key(static: name); string(value) }
    mutating func field(_ name: StaticString, _ value: Int64) { key(static: name); int(value) }
    mutating func field(_ name: StaticString, _ value: UInt64) { key(static: name); uint(value) }
    mutating func field(_ name: StaticString, _ value: Bool) { key(static: name); bool(value) }
    mutating func field(_ name: StaticString, _ value: Timestamp) { key(static: name); int(value.microseconds) }
    mutating func field(_ name: StaticString, static value: StaticString) { key(static: name); string(static: value) }
    mutating func field(_ name: StaticString, _ id: SessionID) { key(static: name); sessionID(id) }
    mutating func field(_ name: StaticString, _ app: AppID) { key(static: name); string(unescaped: app.rawValue) }

    /// `"s42"`.
    mutating func sessionID(_ id: SessionID) { string(prefix: UInt8(ascii: "s"), decimal: id.rawValue) }

    mutating func restoration(_ data: RestorationData) {
        beginObject()
        switch data {
        case .json(let text):
            key(static: "json")
            raw(text)
        case .bytes(let bytes):
            field("base64", Base64.encode(bytes))
        }
        endObject()
    }

    /// `payloads`: the session's userInfo and restoration data (`EngineHost.savedPayloads`, which
    /// reads them from the store when the engine left them there); nil leaves them out
    /// (listings, callers who may not see them): their sizes say what there is.
    /// `marksWithheld` says they were left out because the caller may not see them.
    mutating func session(_ s: SceneSession, payloads: (userInfo: UserInfo, restoration: RestorationData?)?,
                          marksWithheld: Bool = false) {
        beginObject()
        field("id", s.id)
        field("app", s.app)
        field("role", static: s.role.staticName)
        field("configuration", s.configurationName)
        field("condition", static: s.condition.staticName)
        field("state", static: s.sceneState.staticName)
        if let payloads {
            key(static: "userInfo")
            raw(payloads.userInfo.json)
            if let r = payloads.restoration {
                key(static: "restoration")
                restoration(r)
            }
        }
        if marksWithheld { field("withheld", true) }
        field("userInfoSize", UInt64(s.savedUserInfo.byteCount))
        field("restorationSize", UInt64(s.savedRestoration.byteCount))
        field("footprint", s.footprint)
        field("protected", s.isProtected)
        field("restoreCostMs", UInt64(s.restoreCostMs))
        field("sceneInstance", UInt64(s.sceneInstance))
        field("createdAt", s.createdAt)
        field("lastActiveAt", s.lastActiveAt)
        field("backgroundSince", s.backgroundSince)
        field("activations", UInt64(s.activations))
        field("restores", UInt64(s.restores))
        endObject()
    }

    mutating func task(_ t: BackgroundTask, engine: LifecycleEngine) {
        beginObject()
        key(static: "token")
        string(prefix: UInt8(ascii: "t"), decimal: t.token.rawValue)
        field("app", t.app)
        if let s = t.session { field("session", s) }
        field("name", t.name)
        field("beganAt", t.beganAt)
        if let expires = engine.expiry(of: t) { field("expiresAt", expires) }
        if let sent = t.expirationSentAt { field("expirationSentAt", sent) }
        endObject()
    }

    /// `attachedPid`: the process attached as the app through io.scened.App, if any.
    mutating func app(_ a: AppRecord, engine: LifecycleEngine, attachedPid: Int32? = nil,
                      started: (pid: Int32, frozen: Bool)? = nil, follows: String, declaredModes: BackgroundModes = [],
                      routes: (schemes: [String], types: [String]) = ([], [])) {
        beginObject()
        field("id", a.id)
        field("process", static: a.process.staticName)
        field("state", static: a.applicationState.staticName)
        field("sessions", UInt64(a.sessions.count))
        field("liveSessions", Int64(a.connectedScenes))
        field("foregroundActiveScenes", Int64(a.activeScenes))
        field("foregroundInactiveScenes", Int64(a.inactiveScenes))
        field("backgroundScenes", Int64(a.backgroundScenes))
        key(static: "pendingDiscards")
        beginArray()
        for id in a.pendingDiscards { sessionID(id) }
        endArray()
        key(static: "tasks")
        beginArray()
        for token in a.tasks { if let t = engine.tasks[token] { task(t, engine: engine) } }
        endArray()
        field("launches", UInt64(a.launches))
        if let at = a.launchedAt { field("launchedAt", at) }
        if let at = engine.suspensionTime(of: a) { field("suspendsAt", at) }
        field("baseFootprint", a.baseFootprint)
        field("sceneFootprint", engine.sceneFootprint(of: a))
        if let pid = attachedPid { field("attachedPid", Int64(pid)) }
        if let started {
            field("startedPid", Int64(started.pid))
            field("frozen", started.frozen)
        }
        field("follows", follows)
        let hold = engine.holds.hold(for: a.id)
        field("hold", hold.level.description)
        if hold.level != .none { field("holdCause", static: hold.cause.staticName) }
        appBackground(a, declared: declaredModes)
        stringList("urlSchemes", routes.schemes)
        stringList("activityTypes", routes.types)
        field("pendingOpens", UInt64(a.pendingOpens.count))
        endObject()
    }

    mutating func stringList(_ name: StaticString, _ list: [String]) {
        key(static: name)
        beginArray()
        for item in list { string(item) }
        endArray()
    }

    /// `withholdRestoration`: for a caller who may not see the app's private data, the
    /// restoration data of willConnectTo is left out and the event marked withheld.
    mutating func event(_ e: LifecycleEvent, withholdRestoration: Bool = false) {
        beginObject()
        eventFields(e, withholdRestoration: withholdRestoration)
        endObject()
    }

    /// The fields of an Event, for an object the caller opens and closes (io.scened.App's
    /// event adds its own).
    mutating func eventFields(_ e: LifecycleEvent, withholdRestoration: Bool = false) {
        field("seq", e.seq)
        field("time", e.time)
        field("event", static: e.name.staticName)
        field("app", e.app)
        if let s = e.session {
            field("session", s)
            if e.sceneInstance > 0 { field("scene", UInt64(e.sceneInstance)) }
        }
        field("state", static: e.state.staticName)
        field("appState", static: e.appState.staticName)
        field("cause", static: e.cause.staticName)
        switch e.detail {
        case .none:
            break
        case .connect(let restoration, let reconnect, let open):
            if let open { openFields(open, withhold: withholdRestoration) }
            if let restoration {
                if withholdRestoration {
                    field("withheld", true)
                } else {
                    key(static: "restoration")
                    self.restoration(restoration)
                }
            }
            field("reconnect", reconnect)
        case .discarded(let ids):
            sessionList(ids)
        case .task(let token, let name):
            key(static: "task")
            string(prefix: UInt8(ascii: "t"), decimal: token.rawValue)
            field("taskName", name)
        case .terminated(let reason, let archived):
            field("reason", static: reason.staticName)
            sessionList(archived)
        case .wake(let wake):
            wakeFields(wake, withholdPayload: withholdRestoration)
        case .open(let payload):
            openFields(payload, withhold: withholdRestoration)
        }
        if case .reclaim(let note) = e.cause {
            key(static: "reclaim")
            beginObject()
            field("level", note.level)
            field("usageBefore", note.usageBefore)
            field("usageAfter", note.usageAfter)
            field("budget", note.budget)
            if let score = note.score { key(static: "score"); double(score) }
            field("reason", note.reason)
            endObject()
        }
    }

    /// What a scene is opened with: urlContexts and userActivities, or (for a reader who may
    /// not read the app's data) only that something was withheld.
    private mutating func openFields(_ p: OpenPayload, withhold: Bool) {
        if withhold {
            field("withheld", true)
            return
        }
        if !p.urlContexts.isEmpty {
            key(static: "urlContexts")
            beginArray()
            for c in p.urlContexts {
                beginObject()
                field("url", c.url)
                if let source = c.sourceApplication { field("sourceApplication", source) }
                endObject()
            }
            endArray()
        }
        if !p.userActivities.isEmpty {
            key(static: "userActivities")
            beginArray()
            for a in p.userActivities { userActivity(a) }
            endArray()
        }
    }

    mutating func userActivity(_ a: UserActivity) {
        beginObject()
        field("activityType", a.activityType)
        if let title = a.title { field("title", title) }
        if let info = a.userInfo { key(static: "userInfo"); raw(info) }
        if let id = a.targetContentIdentifier { field("targetContentIdentifier", id) }
        if let url = a.webpageURL { field("webpageURL", url) }
        endObject()
    }

    /// A wake's item: the task (identifier, kind) or the notification (id, payload), and when
    /// it closes.
    private mutating func wakeFields(_ wake: WakeDetail, withholdPayload: Bool) {
        field("kind", static: wake.kind.staticName)
        if wake.kind == .notification {
            field("notification", wake.identifier)
            if let payload = wake.payload {
                if withholdPayload {
                    field("withheld", true)
                } else {
                    key(static: "payload")
                    raw(payload)
                }
            }
        } else {
            field("identifier", wake.identifier)
        }
        field("deadline", wake.deadline)
    }

    private mutating func sessionList(_ ids: [SessionID]) {
        key(static: "sessions")
        beginArray()
        for id in ids { sessionID(id) }
        endArray()
    }

    mutating func events(_ list: ArraySlice<LifecycleEvent>) {
        key(static: "events")
        beginArray()
        for i in list.indices { event(list[i]) }
        endArray()
    }
}
