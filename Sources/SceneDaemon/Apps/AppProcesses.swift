import SceneCore
import SystemdKit
import Varlink

/// The shell around `AttachmentTable`: feeds each attached process its app's committed events,
/// notices processes that went away, and carries out what missed deadlines require. Nothing
/// here decides: the table says who is owed what and what is overdue.
extension AppSupervisor {
    /// Live events of attached apps, in commit order, each app's in one piece.
    func publishToAttached(_ events: [LifecycleEvent]) {
        guard attachments.count > 0 else { return }
        let now = host.clock.now()
        // Each event straight to its connection, in order: an app has an event or two per
        // batch, and gathering them per connection first cost a dictionary and a copy each.
        for e in events {
            guard let a = attachments.attachment(of: e.app), let conn = server.connections[a.connection],
                  case .monitor(let m)? = conn.stream, m.attached, m.backlogNext == nil, e.seq >= m.liveFrom
            else { continue }
            let deadline = attachments.delivered(e, now: now)
            server.appendOutput(conn, encodedAppEvent(e, deadline: deadline))
        }
    }

    /// Reclaim notices, each to its app's attached process at once (they wait for no commit:
    /// the scene they name is as committed as anything the app has seen).
    func sendNotices(_ notices: [ReclaimGrace.Notice]) {
        for n in notices {
            guard let a = attachments.attachment(of: n.app), let conn = server.connections[a.connection] else { continue }
            var w = JSONWriter()
            w.reply(continues: true) { w in
                w.key(static: "notice")
                w.beginObject()
                w.field("id", n.id)
                w.field("action", static: "disconnect")
                w.field("session", n.session)
                w.field("level", n.step.note.level)
                w.field("deadline", n.deadline)
                w.field("reason", n.step.note.reason)
                w.endObject()
            }
            w.bytes.append(0)
            server.appendOutput(conn, w.bytes)
        }
    }

    /// A backlog event to an attached process (it attached again with since).
    func sendAppEvent(_ e: LifecycleEvent, to conn: ClientConnection) {
        let deadline = attachments.delivered(e, now: host.clock.now())
        server.appendOutput(conn, encodedAppEvent(e, deadline: deadline))
    }

    /// io.scened.App's Event: io.scened.Manager's, the session's role, configuration and userInfo
    /// where a scene is made from them, and the deadline of a bounded callback.
    func encodedAppEvent(_ e: LifecycleEvent, deadline: Timestamp?) -> [UInt8] {
        var w = JSONWriter()
        w.reply(continues: true) { w in writeAppEvent(e, deadline: deadline, into: &w) }
        w.bytes.append(0)
        return w.bytes
    }

    private func writeAppEvent(_ e: LifecycleEvent, deadline: Timestamp?, into w: inout JSONWriter) {
        w.key(static: "event")
        w.beginObject()
        w.eventFields(e)
        // Read in place: a copy of the engine costs a retain of each of its tables, per event.
        if e.name == .willConnectTo || e.name == .configurationForConnecting, let id = e.session,
           let s = host.engine.sessions[id] {
            w.field("role", static: s.role.staticName)
            w.field("configuration", s.configurationName)
            w.key(static: "userInfo")
            // Held while the batch's events go out; a backlog event may have to read it back.
            switch s.savedUserInfo {
            case .held(let info):
                w.raw(info.json)
            case .stored:
                do {
                    w.raw(try host.savedPayloads(of: s).userInfo.json)
                } catch {
                    appLog(.err, s.app, "\(s.app)'s \(e.name) for \(id) went out without its userInfo: \(error)")
                    w.raw(UserInfo.empty.json)
                }
            }
        }
        if let deadline {
            w.field("deadline", deadline)
        } else if e.name == .backgroundTaskWillExpire, case .task = e.detail {
            // A scheduled task's expiry has its wake's deadline already: a second key would
            // make the object unreadable to a strict parser.
            w.field("deadline", e.time + host.engine.configuration.expirationGrace)
        }
        w.endObject()
    }

    /// The server closed a connection. If a process was attached on it, the process is
    /// taken for dead; carried out by `superviseApps`, not inside the server's close.
    func connectionClosed(_ conn: ClientConnection) {
        guard let app = attachments.connectionClosed(conn.number) else { return }
        pendingDeaths.append((app, conn.peer.pid))
    }

    /// Once per pass (and before an Attach): deaths noticed, deadlines passed.
    func superviseApps() {
        for conn in server.takeClosed() { connectionClosed(conn) }
        if !pendingDeaths.isEmpty {
            let deaths = pendingDeaths
            pendingDeaths = []
            for (app, pid) in deaths where attachments.attachment(of: app) == nil {
                guard let record = host.engine.apps[app], record.process != .notRunning else { continue }
                // A crash (§4.3): the scenes go with no callback, the sessions stay archived
                // with the state they saved last.
                _ = try? host.execute(.processDied(app, reason: .exited))
                appLog(.notice, app, "\(app)'s process (pid \(pid)) went away without detaching: terminated as exited, its sessions archived.")
            }
        }
        guard attachments.hasDeadlines else { return }
        for overdue in attachments.expire(now: host.clock.now()) {
            switch overdue {
            case .hung(let app, let awaited):
                let bound = attachments.deadlines.didEnterBackground
                if let record = host.engine.apps[app], record.process != .notRunning {
                    _ = try? host.execute(.processDied(app, reason: .hung))
                }
                if let a = attachments.detach(app), let conn = server.connections[a.connection],
                   case .monitor(let m)? = conn.stream, m.attached {
                    conn.holdError(batch: host.gathering, MethodDispatcher.appError(
                        "Terminated", app, [("reason", .string("hung"))],
                        "\(app) did not answer \(awaited.name) (event \(awaited.seq)) within \(bound.formatted): terminated as hung; the process must exit"))
                    server.streamEnded(conn)
                }
                appLog(.warning, app, "\(app) did not answer \(awaited.name) (event \(awaited.seq)) within \(bound.formatted): terminated as hung, without willTerminate (R23).",
                       id: MessageID.appDeadlineMissed, [("SCENED_SEQ", String(awaited.seq)), ("SCENED_EVENT", awaited.name.name)])
            case .overran(let app, let awaited):
                appLog(.notice, app, "\(app) did not answer \(awaited.name) (event \(awaited.seq)) within \(attachments.deadlines.willTerminate.formatted).",
                       id: MessageID.appDeadlineMissed, [("SCENED_SEQ", String(awaited.seq)), ("SCENED_EVENT", awaited.name.name)])
            }
        }
    }

    /// Journal entries about app processes, rate-limited: attaching and closing in a loop must
    /// not flood the journal.
    func appLog(_ priority: LogLevel, _ app: AppID, _ message: String, id: String = MessageID.appAttachment,
                _ fields: [(String, String)] = []) {
        let verdict = appEntryLog.allow(now: server.now())
        guard verdict.allowed else { return }
        let suppressed = verdict.suppressed > 0 ? " (\(verdict.suppressed) similar entries not logged)" : ""
        logger.daemon(priority, id, message + suppressed, [("SCENED_APP", app.rawValue)] + fields)
    }
}
