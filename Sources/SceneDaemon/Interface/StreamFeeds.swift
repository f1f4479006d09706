import SceneCore
import Varlink

/// The open `more` calls that are not apps' attach streams: listings produced as the client
/// reads, monitors fed with committed events (live, or from the event log when behind), and
/// exported traces. The handlers open them (`conn.stream`); this class keeps them going.
final class StreamFeeds {
    let host: EngineHost
    let server: VarlinkServer
    /// An attached app's backlog is encoded for its process.
    let apps: AppSupervisor
    /// Who may see restoration data; replaced on reload.
    var policy: AccessPolicy

    static let sessionsPerBatch = 500
    /// A listing piece stops growing at this size (a piece holds at least one session).
    static let listingPieceBytes = 256 << 10
    /// What a piece may pass `listingPieceBytes` by: its last session and the closing bytes.
    static let listingPieceSlack = 16 << 10
    static let eventsPerBatch = 256

    init(host: EngineHost, server: VarlinkServer, apps: AppSupervisor, policy: AccessPolicy) {
        self.host = host
        self.server = server
        self.apps = apps
        self.policy = policy
    }

    /// Tops up a stream while its client keeps reading.
    func produce(_ conn: ClientConnection) {
        switch conn.stream {
        case .listing(var listing):
            let engine = host.engine
            var taken = 0
            // Held like any reply: the engine may show changes not yet committed. Bounded in
            // sessions and bytes, so no piece can come near a client's output limit. Room for a
            // whole piece at once: one that outgrows its buffer is copied into a fresh one.
            conn.hold(batch: host.gathering, expected: Self.listingPieceBytes + Self.listingPieceSlack) { w in
                let start = w.bytes.count
                w.reply(continues: listing.ids.current != nil) { w in
                    w.key(static: "sessions")
                    w.beginArray()
                    while let id = listing.ids.current, taken < Self.sessionsPerBatch,
                          w.bytes.count - start < Self.listingPieceBytes {
                        listing.ids.advance()
                        taken += 1
                        // Filters are re-applied: a session may have changed since the listing began.
                        guard let s = engine.sessions[id] else { continue }
                        if let c = listing.condition, s.condition != c { continue }
                        if let st = listing.state, s.sceneState != st { continue }
                        w.listedSession(s)
                    }
                    w.endArray()
                }
            }
            if listing.ids.current == nil {
                server.streamEnded(conn)
            } else {
                conn.stream = .listing(listing)
            }
        case .monitor(var monitor):
            guard let from = monitor.backlogNext, !monitor.awaitingRead else { return }
            switch host.committedEvents(from: from, limit: Self.eventsPerBatch, token: UInt64(conn.number),
                                        attached: monitor.attached) {
            case .events(let events):
                deliverBacklog(events, to: conn, monitor: &monitor)
            case .pending:
                // The commit thread reads it; until then the stream has nothing to produce.
                monitor.awaitingRead = true
            case .unavailable:
                if monitor.fellBehind {
                    // The events it fell behind by are no longer kept: it cannot have them all,
                    // in order, any more. A slow reader, as if they had been queued for it.
                    server.step(conn, .limitExceeded("MaxOutputPerConnection", cutOutput: true, now: server.now()))
                    return
                }
                monitor.backlogNext = nil
                monitor.liveFrom = host.nextSequence(attached: monitor.attached)
            }
            if !conn.isClosed, conn.stream != nil { conn.stream = .monitor(monitor) }
        case .export(let export):
            produceTrace(conn, export)
        case .launching, nil:
            return
        }
    }

    /// Sends a piece of a monitor's backlog and moves it on (or to live once caught up). What it
    /// sends comes off what it is behind by before it is queued, so that the two together never
    /// count an event twice against MaxOutputPerConnection. Events at or past where its live
    /// events begin (a read the commit thread answered after a later commit) are left to the
    /// live feed: sent here too, they would arrive twice.
    private func deliverBacklog(_ read: [LifecycleEvent], to conn: ClientConnection, monitor: inout MonitorStream) {
        let bound = host.nextSequence(attached: monitor.attached)
        let events = read.last.map { $0.seq < bound } ?? true ? read : read.filter { $0.seq < bound }
        for e in events where monitor.matches(e) {
            if monitor.attached {
                apps.sendAppEvent(e, to: conn)
                if conn.isClosed || !conn.machine.streaming { return }
                continue
            }
            let bytes = Self.encodedEvent(e, withholdRestoration: !policy.maySeePrivateData(conn.peer.identity, app: e.app))
            conn.behindBytes = max(0, conn.behindBytes - bytes.count)
            conn.machine.streamBehind(bytes: conn.behindBytes)
            server.appendOutput(conn, bytes)
            if conn.isClosed || !conn.machine.streaming { return }
        }
        if events.count == read.count, let last = events.last, last.seq + 1 < bound {
            monitor.backlogNext = last.seq + 1
        } else {
            monitor.backlogNext = nil
            monitor.liveFrom = bound
            monitor.fellBehind = false
            conn.behindBytes = 0
        }
    }

    /// The commit thread answered backlog reads: each goes to its monitor, which asks for the
    /// next piece when its client has read this one.
    func readsFinished() {
        for (token, result) in host.finishedReads() {
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
                monitor.liveFrom = host.nextSequence(attached: monitor.attached)
                monitor.fellBehind = false
                conn.behindBytes = 0
            }
            if !conn.isClosed, conn.stream != nil {
                conn.stream = .monitor(monitor)
                server.streamChanged(conn)
            }
        }
    }

    /// Live fan-out of committed events to monitors. Each event is encoded at most twice (with
    /// and without restoration data), however many monitors see it, and a monitor's events are
    /// queued in pieces of up to `fanOutPiece` bytes rather than one by one, so that a commit
    /// costs each monitor a copy, not an encoding per event.
    ///
    /// A monitor whose output reaches the high-water mark (its client does not read as fast as
    /// events come) falls behind: from that event on nothing more is queued or copied for it;
    /// it reads the events from the log, in order, as its client reads (`produce`), and what it
    /// is behind by counts as unread output, so a client that never reads is cut off at
    /// MaxOutputPerConnection as before, having cost a high-water mark of memory and copying
    /// rather than the whole limit.
    func publish(_ events: [LifecycleEvent]) {
        guard !events.isEmpty else { return }
        var batch = EncodedBatch(events: events)
        server.forEachMonitor { conn, monitor in
            // An attached app's stream is fed by publishToAttached.
            if monitor.attached { return }
            if monitor.backlogNext != nil {
                countBehind(conn, monitor, &batch)
            } else {
                feedLive(conn, monitor, &batch)
            }
        }
    }

    /// A monitor behind (or replaying the backlog it asked for): what was published is owed too.
    private func countBehind(_ conn: ClientConnection, _ monitor: MonitorStream, _ batch: inout EncodedBatch) {
        let events = batch.events
        var behind = 0
        if monitor.app == nil, monitor.session == nil, events[0].seq >= monitor.liveFrom,
           let all = batch.whole(for: conn, policy) {
            behind = all
        } else {
            for i in events.indices where events[i].seq >= monitor.liveFrom && monitor.matches(events[i]) {
                behind += batch.bytes(i, for: conn, policy).count
            }
        }
        if behind > 0 { server.streamFellBehind(conn, by: behind) }
    }

    /// Queues a live monitor's share of the batch, until its output reaches the high-water
    /// mark; from there it falls behind.
    private func feedLive(_ conn: ClientConnection, _ monitor: MonitorStream, _ batch: inout EncodedBatch) {
        let events = batch.events
        var m = monitor
        var behind = 0
        var piece: [UInt8] = []
        for i in events.indices where events[i].seq >= m.liveFrom && m.matches(events[i]) {
            let b = batch.bytes(i, for: conn, policy)
            if m.backlogNext != nil {
                behind += b.count
                continue
            }
            if !conn.machine.mayQueueLiveOutput(piece.count + b.count) {
                if !piece.isEmpty {
                    server.appendOutput(conn, piece)
                    piece = []
                    if conn.isClosed || conn.stream == nil { return }
                }
                m.backlogNext = events[i].seq
                m.fellBehind = true
                behind += b.count
                continue
            }
            piece += b
            if piece.count >= Self.fanOutPiece {
                server.appendOutput(conn, piece)
                piece = []
                if conn.isClosed || conn.stream == nil { return }
            }
        }
        if !piece.isEmpty {
            server.appendOutput(conn, piece)
            if conn.isClosed || conn.stream == nil { return }
        }
        guard m.backlogNext != nil else { return }
        // It fell behind: from here it reads the log (`produce`) once its client has read.
        conn.stream = .monitor(m)
        conn.behindBytes = 0
        server.streamFellBehind(conn, by: behind)
        server.streamChanged(conn)
    }

    /// The most a monitor's queued output grows by in one step of fan-out: the global output
    /// cap is checked after each, so it is overrun by at most this much.
    static let fanOutPiece = 64 << 10

    static func encodedEvent(_ e: LifecycleEvent, withholdRestoration: Bool) -> [UInt8] {
        var w = JSONWriter()
        w.reply(continues: true) { w in
            w.key(static: "event")
            w.event(e, withholdRestoration: withholdRestoration)
        }
        w.bytes.append(0)
        return w.bytes
    }

}

/// One published batch as monitors receive it: each event encoded at most twice, on first use.
struct EncodedBatch {
    let events: [LifecycleEvent]
    private var encoded: [[UInt8]?] = []
    private var wholeSize: Int?
    private var wholeKnown = false

    init(events: [LifecycleEvent]) {
        self.events = events
    }

    /// The encoding of event `i` for `conn`: only an event carrying the app's data (restoration
    /// data, a URL or an activity) reads differently for a caller who may not see it.
    mutating func bytes(_ i: Int, for conn: ClientConnection, _ policy: AccessPolicy) -> [UInt8] {
        if encoded.isEmpty { encoded = Array(repeating: nil, count: events.count * 2) }
        let e = events[i]
        var withhold = false
        if Self.carriesPrivateData(e) {
            withhold = !policy.maySeePrivateData(conn.peer.identity, app: e.app)
        }
        let k = 2 * i + (withhold ? 1 : 0)
        if let done = encoded[k] { return done }
        let made = StreamFeeds.encodedEvent(e, withholdRestoration: withhold)
        encoded[k] = made
        return made
    }

    static func carriesPrivateData(_ e: LifecycleEvent) -> Bool {
        switch e.detail {
        case .connect(let restoration, _, let open): restoration != nil || open != nil
        case .open: true
        default: false
        }
    }

    /// Every event as most see it, for monitors without a filter that are behind: their share
    /// of a batch is the whole batch, unless it has restoration data someone may not see.
    mutating func whole(for conn: ClientConnection, _ policy: AccessPolicy) -> Int? {
        if wholeKnown { return wholeSize }
        wholeKnown = true
        var total = 0
        for i in events.indices {
            if Self.carriesPrivateData(events[i]) { return nil }
            total += bytes(i, for: conn, policy).count
        }
        wholeSize = total
        return total
    }
}
