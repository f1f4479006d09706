import SceneCore
import Varlink

/// Writes the model as the interface's types (see ManagerInterface), straight into a reply
/// buffer: no intermediate JSON tree on the hot path.
extension JSONWriter {
    mutating func field(_ name: String, _ value: String) { key(name); string(value) }
    mutating func field(_ name: String, _ value: Int64) { key(name); int(value) }
    mutating func field(_ name: String, _ value: UInt64) { key(name); uint(value) }
    mutating func field(_ name: String, _ value: Bool) { key(name); bool(value) }
    mutating func field(_ name: String, _ value: Timestamp) { key(name); int(value.microseconds) }

    mutating func restoration(_ data: RestorationData) {
        beginObject()
        switch data {
        case .json(let text):
            key("json")
            raw(text)
        case .bytes(let bytes):
            field("base64", Base64.encode(bytes))
        }
        endObject()
    }

    mutating func session(_ s: SceneSession) {
        beginObject()
        field("id", s.id.description)
        field("app", s.app.rawValue)
        field("role", s.role.name)
        field("configuration", s.configurationName)
        field("condition", s.condition.name)
        field("state", s.sceneState.name)
        key("userInfo")
        raw(s.userInfo.json)
        if let r = s.restoration {
            key("restoration")
            restoration(r)
        }
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
        field("token", t.token.description)
        field("app", t.app.rawValue)
        if let s = t.session { field("session", s.description) }
        field("name", t.name)
        field("beganAt", t.beganAt)
        if let expires = engine.expiry(of: t) { field("expiresAt", expires) }
        if let sent = t.expirationSentAt { field("expirationSentAt", sent) }
        endObject()
    }

    mutating func app(_ a: AppRecord, engine: LifecycleEngine) {
        beginObject()
        field("id", a.id.rawValue)
        field("process", a.process.name)
        field("state", a.applicationState.name)
        field("sessions", UInt64(a.sessions.count))
        field("liveSessions", Int64(a.connectedScenes))
        field("foregroundActiveScenes", Int64(a.activeScenes))
        field("foregroundInactiveScenes", Int64(a.inactiveScenes))
        field("backgroundScenes", Int64(a.backgroundScenes))
        key("pendingDiscards")
        beginArray()
        for id in a.pendingDiscards { string(id.description) }
        endArray()
        key("tasks")
        beginArray()
        for token in a.tasks { if let t = engine.tasks[token] { task(t, engine: engine) } }
        endArray()
        field("launches", UInt64(a.launches))
        if let at = a.launchedAt { field("launchedAt", at) }
        if let at = engine.suspensionTime(of: a) { field("suspendsAt", at) }
        field("baseFootprint", a.baseFootprint)
        field("sceneFootprint", engine.sceneFootprint(of: a))
        endObject()
    }

    mutating func event(_ e: LifecycleEvent) {
        beginObject()
        field("seq", e.seq)
        field("time", e.time)
        field("event", e.name.name)
        field("app", e.app.rawValue)
        if let s = e.session {
            field("session", s.description)
            if e.sceneInstance > 0 { field("scene", UInt64(e.sceneInstance)) }
        }
        field("state", e.state.name)
        field("appState", e.appState.name)
        field("cause", e.cause.name)
        switch e.detail {
        case .none:
            break
        case .connect(let restoration, let reconnect):
            if let restoration {
                key("restoration")
                self.restoration(restoration)
            }
            field("reconnect", reconnect)
        case .discarded(let ids):
            sessionList(ids)
        case .task(let token, let name):
            field("task", token.description)
            field("taskName", name)
        case .terminated(let reason, let archived):
            field("reason", reason.name)
            sessionList(archived)
        }
        if case .reclaim(let note) = e.cause {
            key("reclaim")
            beginObject()
            field("level", note.level)
            field("usageBefore", note.usageBefore)
            field("usageAfter", note.usageAfter)
            field("budget", note.budget)
            if let score = note.score { key("score"); double(score) }
            field("reason", note.reason)
            endObject()
        }
        endObject()
    }

    private mutating func sessionList(_ ids: [SessionID]) {
        key("sessions")
        beginArray()
        for id in ids { string(id.description) }
        endArray()
    }

    mutating func events(_ list: ArraySlice<LifecycleEvent>) {
        key("events")
        beginArray()
        for e in list { event(e) }
        endArray()
    }
}
