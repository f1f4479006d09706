import SceneCore
import Varlink

/// Streams: listings produced as the client reads, monitors fed with committed events.
extension ManagerVarlink {
    /// Tops up a stream while its client keeps reading.
    func produce(_ conn: ClientConnection) {
        switch conn.stream {
        case .listing(var listing):
            let engine = manager.engine
            var end = listing.next
            // Held like any reply: the engine may show changes not yet committed. Bounded in
            // sessions and bytes, so no piece can come near a client's output limit.
            conn.hold(batch: manager.gathering) { w in
                let start = w.bytes.count
                w.beginObject()
                w.key(static: "parameters")
                w.beginObject()
                w.key(static: "sessions")
                w.beginArray()
                while end < listing.ids.count, end - listing.next < Self.sessionsPerBatch,
                      w.bytes.count - start < Self.listingPieceBytes {
                    let id = listing.ids[end]
                    end += 1
                    // Filters are re-applied: a session may have changed since the listing began.
                    guard let s = engine.sessions[id] else { continue }
                    if let c = listing.condition, s.condition != c { continue }
                    if let st = listing.state, s.sceneState != st { continue }
                    w.session(s, privateData: false)
                }
                w.endArray()
                w.endObject()
                if end < listing.ids.count { w.key(static: "continues"); w.bool(true) }
                w.endObject()
            }
            listing.next = end
            if end == listing.ids.count {
                server.streamEnded(conn)
            } else {
                conn.stream = .listing(listing)
            }
        case .monitor(var monitor):
            guard let from = monitor.backlogNext, !monitor.awaitingRead else { return }
            switch manager.committedEvents(from: from, limit: Self.eventsPerBatch, token: UInt64(conn.number)) {
            case .events(let events):
                deliverBacklog(events, to: conn, monitor: &monitor)
            case .pending:
                // The commit thread reads it; until then the stream has nothing to produce.
                monitor.awaitingRead = true
            case .unavailable:
                monitor.backlogNext = nil
                monitor.liveFrom = manager.committedNextSequence
            }
            if !conn.isClosed, conn.stream != nil { conn.stream = .monitor(monitor) }
        case .export(let export):
            produceTrace(conn, export)
        case nil:
            return
        }
    }

    /// Sends a piece of a monitor's backlog and moves it on (or to live once caught up).
    private func deliverBacklog(_ events: [LifecycleEvent], to conn: ClientConnection, monitor: inout MonitorStream) {
        for e in events where monitor.matches(e) {
            if monitor.attached { sendAppEvent(e, to: conn) } else { sendEvent(e, to: conn) }
        }
        if let last = events.last, last.seq + 1 < manager.committedNextSequence {
            monitor.backlogNext = last.seq + 1
        } else {
            monitor.backlogNext = nil
            monitor.liveFrom = manager.committedNextSequence
        }
    }

    /// The commit thread answered backlog reads: each goes to its monitor, which asks for the
    /// next piece when its client has read this one.
    func readsFinished() {
        for (token, result) in manager.finishedReads() {
            if let conn = server.connections[Int(truncatingIfNeeded: token)], case .export(let export)? = conn.stream,
               export.awaitingRead {
                traceRead(conn, export, result)
                continue
            }
            guard let conn = server.connections[Int(truncatingIfNeeded: token)], case .monitor(var monitor)? = conn.stream,
                  monitor.awaitingRead else { continue }
            monitor.awaitingRead = false
            switch result {
            case .success(let events):
                deliverBacklog(events, to: conn, monitor: &monitor)
            case .failure(let error):
                Diagnostics.error("reading the event log: \(error)")
                monitor.backlogNext = nil
                monitor.liveFrom = manager.committedNextSequence
            }
            if !conn.isClosed, conn.stream != nil {
                conn.stream = .monitor(monitor)
                server.streamChanged(conn)
            }
        }
    }

    /// Live fan-out of committed events to monitors that have caught up. Each event is encoded
    /// at most twice (with and without restoration data), however many monitors see it, and a
    /// monitor's events are queued in pieces of up to `fanOutPiece` bytes rather than one by one:
    /// with 100 monitors, encoding and queueing per monitor per event made every commit cost
    /// everyone else a hundred times its events.
    func publish(_ events: [LifecycleEvent]) {
        guard !events.isEmpty else { return }
        var encoded: [[UInt8]?] = []
        publishToAttached(events)
        server.forEachMonitor { conn, monitor in
            guard monitor.backlogNext == nil, !monitor.attached else { return }
            if encoded.isEmpty { encoded = Array(repeating: nil, count: events.count * 2) }
            var piece: [UInt8] = []
            for (i, e) in events.enumerated() where e.seq >= monitor.liveFrom && monitor.matches(e) {
                let withhold = !policy.maySeePrivateData(conn.peer.identity, app: e.app)
                let k = 2 * i + (withhold ? 1 : 0)
                if encoded[k] == nil { encoded[k] = Self.encodedEvent(e, withholdRestoration: withhold) }
                piece += encoded[k]!
                if piece.count >= Self.fanOutPiece {
                    server.appendOutput(conn, piece)
                    piece = []
                    if conn.isClosed || conn.stream == nil { return }
                }
            }
            if !piece.isEmpty { server.appendOutput(conn, piece) }
        }
    }

    /// The most a monitor's queued output grows by in one step of fan-out: the global output
    /// cap is checked after each, so it is overrun by at most this much.
    static let fanOutPiece = 64 << 10

    static func encodedEvent(_ e: LifecycleEvent, withholdRestoration: Bool) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("parameters")
        w.beginObject()
        w.key("event")
        w.event(e, withholdRestoration: withholdRestoration)
        w.endObject()
        w.key("continues")
        w.bool(true)
        w.endObject()
        w.bytes.append(0)
        return w.bytes
    }

    private func sendEvent(_ e: LifecycleEvent, to conn: ClientConnection) {
        let withhold = !policy.maySeePrivateData(conn.peer.identity, app: e.app)
        server.appendOutput(conn, Self.encodedEvent(e, withholdRestoration: withhold))
    }

}
