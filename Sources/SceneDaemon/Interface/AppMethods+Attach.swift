import SceneCore
import Varlink

/// Attach, Acknowledge and Detach: an app's process taking its place, answering its bounded
/// callbacks, and leaving.
extension MethodDispatcher {
    func attach(_ c: MethodCall) throws(VarlinkError) {
        guard c.call.more else { throw .expectedMore() }
        let app = try c.p.app()
        // A death noticed earlier in this pass is carried out first: it belongs to the
        // previous process, not to this one.
        apps.superviseApps()
        if let existing = apps.attachments.attachment(of: app) {
            throw Self.appError("AlreadyAttached", app, [("pid", .int(Int64(existing.pid)))],
                                "\(app) already has a process attached (pid \(existing.pid))")
        }
        // An app's events go out once written (a Monitor's once durable): where they stand.
        let committed = host.writtenNextSequence
        var stream = MonitorStream(app: app, session: nil, backlogNext: nil, liveFrom: committed, attached: true)
        let resuming = c.p.has("since")
        if resuming {
            guard let since = try c.p.count("since") else { throw .invalidParameter("since") }
            if since < committed {
                if let unavailable = host.checkAvailable(from: since) { throw Self.error(unavailable) }
                stream.backlogNext = since
            } else {
                stream.liveFrom = since
            }
        } else if let record = host.engine.apps[app], record.process != .notRunning {
            // A new process: the one the app had without an attached process is over, with
            // no callbacks, as a crash would end it; this one starts with didFinishLaunching.
            _ = try run(.processDied(app, reason: .exited))
        }
        if !resuming { stream.liveFrom = max(stream.liveFrom, host.engine.nextSequence) }
        if host.engine.apps[app]?.process ?? .notRunning == .notRunning {
            // Started for its background work: launched without a scene, cause background (R34).
            _ = try run(.launch(app, cause: background.startedForWake(app) ? .background : .request))
        }
        _ = apps.attachments.attach(app, connection: c.conn.number, pid: c.caller.pid)
        if !apps.launches.isEmpty { apps.launchAttached(app) }
        let first = stream.backlogNext ?? stream.liveFrom
        let d = apps.attachments.deadlines
        let grace = host.engine.configuration.expirationGrace
        reply(c, continues: true) { w in
            w.key(static: "attached")
            w.beginObject()
            w.field("app", app)
            w.field("pid", Int64(c.caller.pid))
            w.field("nextSeq", first)
            w.key(static: "deadlines")
            w.beginObject()
            w.field("didEnterBackground", d.didEnterBackground.microseconds)
            w.field("willTerminate", d.willTerminate.microseconds)
            w.field("backgroundTaskExpiration", grace.microseconds)
            w.endObject()
            w.endObject()
        }
        c.conn.stream = .monitor(stream)
        apps.appLog(.info, app, "\(app) attached: pid \(c.caller.pid), uid \(c.caller.uid)\(resuming ? ", resuming from event \(first)" : "").")
    }

    func acknowledge(_ c: MethodCall) throws(VarlinkError) {
        // Due within seconds, not milliseconds: no reason to hold the bulk clients to rounds.
        c.conn.callIsPatient = true
        let app = try c.p.app()
        guard let seq = try c.p.count("seq") else { throw .invalidParameter("seq") }
        try answeringProcess(c, app, seq: seq)
        let restoration = try checkedRestoration(try c.p.restoration("restoration"))
        let restorations = try checkedTerminationRestorations(c, app, seq: seq)
        switch apps.attachments.acknowledge(app, seq: seq, now: host.clock.now()) {
        case .accepted(let awaited):
            if awaited.name == .didEnterBackground, c.p.has("restoration"), let id = awaited.session,
               host.engine.sessions[id] != nil {
                // What UIKit asks stateRestorationActivity(for:) for as the scene backgrounds.
                _ = try run(.saveState(id, restoration))
            }
            // Its scenes' state on the way down, in this batch: the reply says it is committed.
            for entry in restorations ?? [] { _ = try run(.saveState(entry.session, entry.data)) }
            if awaited.name == .willTerminate, !apps.launches.isEmpty { apps.launchFinished(app) }
            reply(c) { _ in }
        case .late:
            throw Self.appError("DeadlinePassed", app, [("seq", .int(Int64(seq)))],
                                "the answer to event \(seq) came after its deadline; \(app) is terminated as hung")
        case .notAwaiting:
            if try acknowledgeNotification(c, app, seq: seq) { return }
            throw Self.appError("NotAwaiting", app, [("seq", .int(Int64(seq)))],
                                "\(app) owes no answer to event \(seq)")
        }
    }

    /// The attached process; or, for a willTerminate answer, the process that owed it and whose
    /// attach closed first (it answers and exits, its connections closing in either order).
    func answeringProcess(_ c: MethodCall, _ app: AppID, seq: UInt64) throws(VarlinkError) {
        if apps.attachments.attachment(of: app)?.awaiting[seq] == nil,
           let gone = apps.attachments.departedProcess(of: app, owing: seq),
           gone.pid == c.caller.pid || policy.isAdministrator(c.caller) {
            return
        }
        _ = try attachedProcess(c, app)
    }

    /// A willTerminate answer's `restorations`, all checked before anything is settled or saved,
    /// so that a refused answer loses nothing and may be sent again, corrected, before the
    /// deadline. Each entry is the app's own session within MaxRestorationSize; the message
    /// limit (MaxMessageSize) bounds the whole answer, and since keys are unique and each names
    /// a session of the app, there are never more entries than the app has sessions.
    func checkedTerminationRestorations(_ c: MethodCall, _ app: AppID,
                                        seq: UInt64) throws(VarlinkError) -> [(session: SessionID, data: RestorationData)]? {
        guard let awaited = apps.attachments.awaited(app, seq: seq) else { return nil }
        guard let entries = try c.p.restorations("restorations") else { return nil }
        // Only willTerminate asks for every scene's state; other answers carry their scene's.
        guard awaited.name == .willTerminate else { throw .invalidParameter("restorations") }
        for entry in entries {
            guard let s = host.engine.sessions[entry.session] else { throw Self.error(for: lookupFailure(entry.session)) }
            guard s.app == app else {
                throw Self.appError("NotOwnSession", app, [("session", .string(entry.session.description))],
                                    "session \(entry.session) is not \(app)'s")
            }
            _ = try checkedRestoration(entry.data, of: entry.session)
        }
        return entries
    }

    func answerNotice(_ c: MethodCall) throws(VarlinkError) {
        c.conn.callIsPatient = true
        let app = try c.p.app()
        _ = try attachedProcess(c, app)
        guard let id = try c.p.count("notice") else { throw .invalidParameter("notice") }
        let deferring = c.p.bool("defer") == true
        let restoration = try checkedRestoration(try c.p.restoration("restoration"))
        guard let notice = reclaim.controller.grace.pending[id], notice.app == app else {
            throw Self.appError("NotAwaiting", app, [("seq", .int(Int64(id)))], "\(app) has no reclaim notice \(id) to answer")
        }
        if c.p.has("restoration"), host.engine.sessions[notice.session] != nil {
            // Saved first: the disconnect that follows archives the session with it.
            _ = try run(.saveState(notice.session, restoration))
        }
        let (resolution, outcome) = reclaim.answer(id, deferring ? .deferral : .ack, app: app)
        request(.reclaim(outcome))
        var disconnected = false
        if case .disconnect = resolution { disconnected = host.engine.sessions[notice.session]?.condition == .archived }
        reply(c) { w in w.field("disconnected", disconnected) }
    }

    func detach(_ c: MethodCall) throws(VarlinkError) {
        let app = try c.p.app()
        let attachment = try attachedProcess(c, app)
        if let record = host.engine.apps[app], record.process != .notRunning {
            // Quitting: the process ends by itself, so nothing is delivered to it.
            _ = try run(.processDied(app, reason: .exited))
        }
        apps.attachments.detach(app)
        if !apps.launches.isEmpty { apps.launchFinished(app) }
        reply(c) { _ in }
        if let conn = server.connections[attachment.connection], case .monitor(let m)? = conn.stream, m.attached {
            // The Attach call ends once everything before the Detach is out.
            conn.hold(batch: host.gathering) { w in w.reply { _ in } }
            server.streamEnded(conn)
        }
        apps.appLog(.info, app, "\(app) detached: pid \(attachment.pid).")
    }
}
