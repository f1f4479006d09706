import Glibc
import SceneCore
import SystemdKit
import Varlink

/// The io.scened.Manager interface: decodes each call, runs it on the Manager, and writes the
/// reply into the connection's held replies (released after the commit).
final class ManagerVarlink {
    let manager: Manager
    unowned let listener: VarlinkListener
    let info: VarlinkServiceInfo
    let interface: VarlinkInterfaceDefinition
    let startedAt: UInt64
    let version: String
    let testHooks: Bool
    weak var daemon: Daemon?

    /// ListSessions without `more` answers at most this many sessions.
    static let maxUnstreamedSessions = 10_000
    static let sessionsPerBatch = 500
    static let eventsPerBatch = 256

    enum Method: String {
        case Launch, Terminate, Connect, Activate, Deactivate, Background, Disconnect, Discard
        case SaveState, SaveUserInfo, SetFootprint, SetProtected, SetAppFootprint
        case BeginBackgroundTask, EndBackgroundTask, MemoryWarning
        case ListSessions, GetSession, ListApps, GetApp, GetStatus, Monitor
        case GetPressure, SetPressure, ClearPressure, Reload
    }

    private let methods: [String: Method]

    init(manager: Manager, listener: VarlinkListener, version: String, startedAt: UInt64, testHooks: Bool = false) throws {
        self.manager = manager
        self.listener = listener
        self.version = version
        self.startedAt = startedAt
        self.testHooks = testHooks
        interface = try VarlinkInterfaceDefinition.parse(ManagerInterface.text)
        var interfaces = [VarlinkInterfaceText(name: ManagerInterface.name, text: ManagerInterface.text)]
        if testHooks { interfaces.append(VarlinkInterfaceText(name: TestingInterface.name, text: TestingInterface.text)) }
        info = VarlinkServiceInfo(vendor: "scened", product: "scened", version: version,
                                  url: "https://github.com/scened/scened", interfaces: interfaces)
        var table: [String: Method] = [:]
        for m in [Method.Launch, .Terminate, .Connect, .Activate, .Deactivate, .Background, .Disconnect, .Discard,
                  .SaveState, .SaveUserInfo, .SetFootprint, .SetProtected, .SetAppFootprint,
                  .BeginBackgroundTask, .EndBackgroundTask, .MemoryWarning,
                  .ListSessions, .GetSession, .ListApps, .GetApp, .GetStatus, .Monitor,
                  .GetPressure, .SetPressure, .ClearPressure, .Reload] {
            table[ManagerInterface.name + "." + m.rawValue] = m
        }
        methods = table
    }

    // MARK: - Dispatch

    func handle(_ call: VarlinkCall, on conn: ClientConnection) {
        if let answer = info.handleServiceCall(call) {
            switch answer {
            case .success(let parameters): replyObject(call, conn, parameters)
            case .failure(let error): fail(call, conn, error)
            }
            return
        }
        if testHooks && call.method == TestingInterface.name + ".Hang" {
            // Test hook: wedge the loop so that the watchdog must act.
            let seconds = call.parameters["seconds"]?.intValue ?? 0
            Diagnostics.warning("test hook: hanging the event loop for \(seconds) s")
            sleep(UInt32(max(0, min(seconds, 3600))))
            replyObject(call, conn, JSONObject())
            return
        }
        guard let method = methods[call.method] else {
            let interfaceName = call.method.split(separator: ".").dropLast().joined(separator: ".")
            fail(call, conn, interfaceName == ManagerInterface.name
                 ? .methodNotFound(call.method) : .interfaceNotFound(interfaceName))
            return
        }
        let shortName = method.rawValue
        if let bad = interface.validateParameters(method: shortName, call.parameters) {
            fail(call, conn, .invalidParameter(bad))
            return
        }
        do {
            try dispatch(method, call, CallParameters(object: call.parameters), conn)
        } catch {
            fail(call, conn, error)
        }
    }

    private func dispatch(_ method: Method, _ call: VarlinkCall, _ p: CallParameters,
                          _ conn: ClientConnection) throws(VarlinkError) {
        switch method {
        case .Launch:
            try runReplyingEvents(.launch(try p.app()), call, conn)
        case .Terminate:
            try runReplyingEvents(.terminate(try p.app(), cause: .request), call, conn)
        case .Connect:
            var request = ConnectRequest(app: try p.app())
            if let role = try p.enumValue("role", SessionRole.init(name:)) { request.role = role }
            if let name = p.string("configuration") { request.configurationName = name }
            if let info = try p.objectText("userInfo") { request.userInfo = UserInfo(json: info) }
            if let bytes = try p.count("footprint") { request.footprint = bytes }
            if let background = p.bool("background") { request.background = background }
            if let flag = p.bool("protected") { request.isProtected = flag }
            if let cost = try p.count32("restoreCostMs") { request.restoreCostMs = cost }
            let (result, events) = try run(.connect(request))
            guard case .session(let id) = result else { return }
            replySessionAndEvents(id, events, call, conn)
        case .Activate:
            try runOnSession(try p.session(), call, conn) { .activate($0) }
        case .Deactivate:
            try runOnSession(try p.session(), call, conn) { .deactivate($0) }
        case .Background:
            try runOnSession(try p.session(), call, conn) { .background($0) }
        case .Disconnect:
            try runOnSession(try p.session(), call, conn) { .disconnect($0, cause: .request) }
        case .Discard:
            try runReplyingEvents(.discard(try p.session(), cause: .request), call, conn)
        case .SaveState:
            let id = try p.session()
            _ = try run(.saveState(id, try p.restoration("restoration")))
            replySession(id, call, conn)
        case .SaveUserInfo:
            let id = try p.session()
            guard let text = try p.objectText("userInfo") else { throw .invalidParameter("userInfo") }
            _ = try run(.saveUserInfo(id, UserInfo(json: text)))
            replySession(id, call, conn)
        case .SetFootprint:
            let id = try p.session()
            guard let bytes = try p.count("footprint") else { throw .invalidParameter("footprint") }
            _ = try run(.setFootprint(id, bytes))
            replySession(id, call, conn)
        case .SetProtected:
            let id = try p.session()
            guard let flag = p.bool("protected") else { throw .invalidParameter("protected") }
            _ = try run(.setProtected(id, flag))
            replySession(id, call, conn)
        case .SetAppFootprint:
            let app = try p.app()
            guard let bytes = try p.count("footprint") else { throw .invalidParameter("footprint") }
            _ = try run(.setAppFootprint(app, bytes))
            replyApp(app, call, conn)
        case .BeginBackgroundTask:
            let request = BeginTaskRequest(app: try p.optionalApp("app"), session: try p.optionalSession("session"),
                                           name: p.string("name") ?? "")
            let (result, events) = try run(.beginTask(request))
            guard case .task(let token) = result else { return }
            reply(call, conn) { w in
                let engine = self.manager.engine
                if let t = engine.tasks[token] { w.key("task"); w.task(t, engine: engine) }
                w.events(self.manager.pending.events[events])
            }
        case .EndBackgroundTask:
            try runReplyingEvents(.endTask(try p.task()), call, conn)
        case .MemoryWarning:
            var apps: [AppID]?
            if case .array(let list)? = call.parameters["apps"] {
                var ids: [AppID] = []
                for item in list {
                    guard let text = item.stringValue, let id = AppID(text) else { throw .invalidParameter("apps") }
                    ids.append(id)
                }
                apps = ids
            }
            try runReplyingEvents(.memoryWarning(apps: apps, cause: .request), call, conn)
        case .ListSessions:
            try listSessions(call, p, conn)
        case .GetSession:
            let id = try p.session()
            guard manager.engine.sessions[id] != nil else { throw refusal(lookupFailure(id)) }
            replySession(id, call, conn)
        case .ListApps:
            let engine = manager.engine
            reply(call, conn) { w in
                w.key("apps")
                w.beginArray()
                for id in engine.apps.keys.sorted() { w.app(engine.apps[id]!, engine: engine) }
                w.endArray()
            }
        case .GetApp:
            let app = try p.app()
            guard manager.engine.apps[app] != nil else { throw Self.error(for: .noSuchApp(app)) }
            replyApp(app, call, conn)
        case .GetStatus:
            reply(call, conn) { w in self.writeStatus(&w) }
        case .Monitor:
            try startMonitor(call, p, conn)
        case .GetPressure:
            reply(call, conn) { w in self.writePressure(&w) }
        case .SetPressure:
            guard let level = try p.enumValue("level", PressureLevel.init(name:)) else { throw .invalidParameter("level") }
            var duration: Int64?
            if let d = try p.count("duration") {
                guard d > 0, d <= UInt64(Int64.max / 2) else { throw .invalidParameter("duration") }
                duration = Int64(d)
            }
            daemon?.setPressureOverride(level, duration: duration)
            reply(call, conn) { w in self.writePressure(&w) }
        case .ClearPressure:
            daemon?.setPressureOverride(nil, duration: nil)
            reply(call, conn) { w in self.writePressure(&w) }
        case .Reload:
            guard let daemon else { throw .methodNotImplemented(call.method) }
            switch daemon.reload() {
            case .success(let files):
                reply(call, conn) { w in
                    w.key("configFiles")
                    w.beginArray()
                    for f in files { w.string(f) }
                    w.endArray()
                }
            case .failure(let error):
                var e = JSONObject()
                e["file"] = .string(error.path)
                if let line = error.line { e["line"] = .int(Int64(line)) }
                e["message"] = .string(error.report)
                throw VarlinkError(name: ManagerInterface.name + ".ConfigurationError", parameters: e)
            }
        }
    }

    // MARK: - Running commands

    private func run(_ command: Command) throws(VarlinkError) -> (CommandResult, Range<Int>) {
        do {
            return try manager.execute(command)
        } catch {
            throw refusal(error)
        }
    }

    private func lookupFailure(_ id: SessionID) -> LifecycleError {
        manager.engine.wasDiscarded(id) ? .sessionDiscarded(id) : .noSuchSession(id)
    }

    /// A scene change on one session: the reply carries the session as it now is.
    private func runOnSession(_ id: SessionID, _ call: VarlinkCall, _ conn: ClientConnection,
                              _ command: (SessionID) -> Command) throws(VarlinkError) {
        let (_, events) = try run(command(id))
        replySessionAndEvents(id, events, call, conn)
    }

    private func runReplyingEvents(_ command: Command, _ call: VarlinkCall, _ conn: ClientConnection) throws(VarlinkError) {
        let (_, events) = try run(command)
        reply(call, conn) { w in w.events(self.manager.pending.events[events]) }
    }

    // MARK: - Replies

    private func reply(_ call: VarlinkCall, _ conn: ClientConnection, continues: Bool = false,
                       _ body: (inout JSONWriter) -> Void) {
        guard !call.oneway else { return }
        conn.hold(batch: manager.gathering) { w in
            w.beginObject()
            w.key("parameters")
            w.beginObject()
            body(&w)
            w.endObject()
            if continues { w.key("continues"); w.bool(true) }
            w.endObject()
        }
    }

    private func replyObject(_ call: VarlinkCall, _ conn: ClientConnection, _ parameters: JSONObject) {
        guard !call.oneway else { return }
        conn.hold(batch: manager.gathering) { w in
            w.beginObject()
            w.key("parameters")
            w.value(.object(parameters))
            w.endObject()
        }
    }

    private func fail(_ call: VarlinkCall, _ conn: ClientConnection, _ error: VarlinkError) {
        guard !call.oneway else { return }
        conn.holdError(batch: manager.gathering, error)
    }

    private func replySession(_ id: SessionID, _ call: VarlinkCall, _ conn: ClientConnection) {
        reply(call, conn) { w in
            if let s = self.manager.engine.sessions[id] { w.key("session"); w.session(s) }
        }
    }

    private func replySessionAndEvents(_ id: SessionID, _ events: Range<Int>, _ call: VarlinkCall,
                                       _ conn: ClientConnection) {
        reply(call, conn) { w in
            if let s = self.manager.engine.sessions[id] { w.key("session"); w.session(s) }
            w.events(self.manager.pending.events[events])
        }
    }

    private func replyApp(_ app: AppID, _ call: VarlinkCall, _ conn: ClientConnection) {
        reply(call, conn) { w in
            let engine = self.manager.engine
            if let a = engine.apps[app] { w.key("app"); w.app(a, engine: engine) }
        }
    }

    private func writeStatus(_ w: inout JSONWriter) {
        let engine = manager.engine
        var running = 0, suspended = 0, tasks = 0
        for app in engine.apps.values {
            if app.process == .running { running += 1 }
            if app.process == .suspended { suspended += 1 }
            tasks += app.tasks.count
        }
        let live = engine.liveSessionCount
        w.key("status")
        w.beginObject()
        w.field("version", version)
        w.field("pid", Int64(getpid()))
        w.field("uptime", Clock.monotonic.now() - startedAt)
        w.field("socket", listener.path)
        w.field("apps", UInt64(engine.apps.count))
        w.field("runningApps", UInt64(running))
        w.field("suspendedApps", UInt64(suspended))
        w.key("sessions")
        w.beginObject()
        w.field("live", UInt64(live))
        w.field("archived", UInt64(engine.sessions.count - live))
        w.field("total", UInt64(engine.sessions.count))
        w.endObject()
        w.field("foregroundActiveScenes", UInt64(engine.foregroundActiveSceneCount))
        w.field("backgroundTasks", UInt64(tasks))
        w.field("nextSeq", engine.nextSequence)
        w.field("connections", UInt64(listener.connectionCount))
        w.field("quarantined", UInt64(manager.quarantine.count))
        if let daemon {
            w.field("pressure", daemon.reclaim.level.name)
            w.field("usage", daemon.monitor.usage)
            w.field("budget", daemon.monitor.budget)
            if let last = daemon.reclaim.policy.lastEpisode { w.key("lastEpisode"); writeEpisode(&w, last) }
            w.key("configFiles")
            w.beginArray()
            for f in daemon.configFiles { w.string(f) }
            w.endArray()
        }
        w.endObject()
    }

    private func writePressure(_ w: inout JSONWriter) {
        guard let daemon else { return }
        let monitor = daemon.monitor
        let policy = daemon.reclaim.policy
        w.key("pressure")
        w.beginObject()
        w.field("level", monitor.level.name)
        w.key("sources")
        w.beginArray()
        for source in monitor.sources(now: self.manager.clock.now()) {
            w.beginObject()
            w.field("name", source.name)
            w.field("level", source.level.name)
            w.field("detail", source.detail)
            w.endObject()
        }
        w.endArray()
        w.field("usage", monitor.usage)
        w.field("budget", monitor.budget)
        let budget = Double(monitor.budget)
        w.field("lowWatermark", UInt64(budget * monitor.gauge.watermarks.low))
        w.field("highWatermark", UInt64(budget * monitor.gauge.watermarks.high))
        w.field("criticalWatermark", UInt64(budget * monitor.gauge.watermarks.critical))
        if let o = monitor.override {
            w.field("override", o.level.name)
            if let until = o.until { w.field("overrideUntil", until) }
        }
        if let e = policy.episode { w.key("episode"); writeEpisode(&w, e) }
        if let e = policy.lastEpisode { w.key("lastEpisode"); writeEpisode(&w, e) }
        w.endObject()
    }

    private func writeEpisode(_ w: inout JSONWriter, _ e: ReclaimEpisode) {
        w.beginObject()
        w.field("number", UInt64(e.number))
        w.field("startedAt", e.startedAt)
        if let t = e.endedAt { w.field("endedAt", t) }
        w.field("peakLevel", e.peakLevel.name)
        w.field("usageAtStart", e.usageAtStart)
        if let t = e.relievedAt { w.field("relievedAt", t) }
        w.field("unrelievable", e.unrelievable)
        w.field("disconnects", UInt64(e.disconnects))
        w.field("terminations", UInt64(e.terminations))
        w.field("suspensions", UInt64(e.suspensions))
        w.field("bytesFreed", e.bytesFreed)
        w.endObject()
    }

    // MARK: - Streams

    private func listSessions(_ call: VarlinkCall, _ p: CallParameters, _ conn: ClientConnection) throws(VarlinkError) {
        let app = try p.optionalApp("app")
        let condition = try p.enumValue("condition", SessionCondition.init(name:))
        let state = try p.enumValue("state", SceneActivationState.init(name:))
        let engine = manager.engine
        var ids: [SessionID]
        if let app {
            ids = Array(engine.apps[app]?.sessions ?? [])
        } else {
            ids = Array(engine.sessions.keys)
        }
        ids.removeAll { id in
            let s = engine.sessions[id]!
            return (condition != nil && s.condition != condition) || (state != nil && s.sceneState != state)
        }
        ids.sort()
        if call.more {
            conn.stream = .listing(SessionListing(ids: ids, next: 0, condition: condition, state: state))
            return
        }
        guard ids.count <= Self.maxUnstreamedSessions else { throw .expectedMore() }
        reply(call, conn) { w in
            w.key("sessions")
            w.beginArray()
            for id in ids { w.session(engine.sessions[id]!) }
            w.endArray()
        }
    }

    private func startMonitor(_ call: VarlinkCall, _ p: CallParameters, _ conn: ClientConnection) throws(VarlinkError) {
        guard call.more else { throw .expectedMore() }
        let app = try p.optionalApp("app")
        let session = try p.optionalSession("session")
        if let session, session.rawValue >= manager.engine.nextSessionNumber {
            // Never allocated, so a typo: ids are not handed out in advance to wait for.
            throw Self.error(for: .noSuchSession(session))
        }
        let next = manager.committedNextSequence
        var stream = MonitorStream(app: app, session: session, backlogNext: nil, liveFrom: next)
        if p.has("since") {
            guard let since = try p.count("since") else { throw .invalidParameter("since") }
            if since < next {
                if case .failure(let unavailable) = manager.committedEvents(from: since, limit: 1) {
                    throw Self.error(unavailable)
                }
                stream.backlogNext = since
            } else {
                stream.liveFrom = since
            }
        }
        // The first reply carries no event: it tells the client the subscription is in place.
        reply(call, conn, continues: true) { _ in }
        conn.stream = .monitor(stream)
    }

    /// Tops up a stream while its client keeps reading.
    func produce(_ conn: ClientConnection) {
        switch conn.stream {
        case .listing(var listing):
            let engine = manager.engine
            let end = min(listing.next + Self.sessionsPerBatch, listing.ids.count)
            let last = end == listing.ids.count
            // Held like any reply: the engine may show changes not yet committed.
            conn.hold(batch: manager.gathering) { w in
                w.beginObject()
                w.key(static: "parameters")
                w.beginObject()
                w.key(static: "sessions")
                w.beginArray()
                for id in listing.ids[listing.next..<end] {
                    // Filters are re-applied: a session may have changed since the listing began.
                    guard let s = engine.sessions[id] else { continue }
                    if let c = listing.condition, s.condition != c { continue }
                    if let st = listing.state, s.sceneState != st { continue }
                    w.session(s)
                }
                w.endArray()
                w.endObject()
                if !last { w.key(static: "continues"); w.bool(true) }
                w.endObject()
            }
            listener.touched(conn)
            listing.next = end
            if last {
                conn.stream = nil
                listener.processCalls(conn)
            } else {
                conn.stream = .listing(listing)
            }
        case .monitor(var monitor):
            guard let from = monitor.backlogNext else { return }
            switch manager.committedEvents(from: from, limit: Self.eventsPerBatch) {
            case .success(let events):
                for e in events where monitor.matches(e) { sendEvent(e, to: conn) }
                if let last = events.last, last.seq + 1 < manager.committedNextSequence {
                    monitor.backlogNext = last.seq + 1
                } else {
                    monitor.backlogNext = nil
                    monitor.liveFrom = manager.committedNextSequence
                }
            case .failure:
                monitor.backlogNext = nil
                monitor.liveFrom = manager.committedNextSequence
            }
            conn.stream = .monitor(monitor)
        case nil:
            return
        }
    }

    /// Live fan-out of committed events to monitors that have caught up.
    func publish(_ events: [LifecycleEvent]) {
        guard !events.isEmpty else { return }
        listener.forEachMonitor { conn, monitor in
            guard monitor.backlogNext == nil else { return }
            var sent = false
            for e in events where e.seq >= monitor.liveFrom && monitor.matches(e) {
                sendEvent(e, to: conn)
                sent = true
            }
            if sent { listener.sendNow(conn) }
        }
    }

    private func sendEvent(_ e: LifecycleEvent, to conn: ClientConnection) {
        send(conn, continues: true) { w in
            w.key("event")
            w.event(e)
        }
    }

    /// A streamed message goes straight to the output: what it describes is committed.
    private func send(_ conn: ClientConnection, continues: Bool, _ body: (inout JSONWriter) -> Void) {
        var w = JSONWriter()
        w.beginObject()
        w.key("parameters")
        w.beginObject()
        body(&w)
        w.endObject()
        if continues { w.key("continues"); w.bool(true) }
        w.endObject()
        w.bytes.append(0)
        conn.wire.enqueue(w.bytes)
    }

    // MARK: - Errors

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
}
