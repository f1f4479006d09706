import SceneCore
import SceneReplay
import SceneStore
import Varlink

/// ExportTrace's stream: the event log from `since` up to where it stood when the call came,
/// turned into trace lines as the commit thread reads it (the loop never reads SQLite).
struct TraceExport {
    var builder: HistoryTraceBuilder
    /// The next sequence number to read.
    var next: UInt64
    /// Events from here on came after the call and are not exported.
    let end: UInt64
    /// Lines made but not sent yet: one event can make several (a discard of many sessions).
    var pending: [[UInt8]] = []
    var pendingNext = 0
    var awaitingRead = false
    /// The builder has given its last lines.
    var finished = false
}

/// ExportTrace: the daemon's own history as a trace for `scenectl simulate`.
extension ManagerVarlink {
    func exportTrace(_ c: MethodCall) throws(VarlinkError) {
        guard let daemon else { throw .methodNotImplemented(c.call.method) }
        guard c.call.more else { throw .expectedMore() }
        let end = manager.committedNextSequence
        // Without since: as far back as the log reaches.
        var since = max(manager.oldestKeptSequence, 1)
        if c.p.has("since") {
            guard let value = try c.p.count("since") else { throw .invalidParameter("since") }
            since = max(value, 1)
            if since < end, let unavailable = manager.checkAvailable(from: since) { throw Self.error(unavailable) }
        }
        let engine = manager.engine
        let settings = daemon.settings
        // What no event records, as it is now (a discarded session's as it connected): the
        // trace's scenes get today's footprints.
        let reclaim = daemon.reclaim
        var sessions = reclaim.connected
        for (id, s) in engine.sessions {
            sessions[id] = HistorySession(footprint: s.footprint, restoreCostMs: s.restoreCostMs, isProtected: s.isProtected)
        }
        var apps: [AppID: UInt64] = [:]
        for (id, a) in engine.apps where a.baseFootprint > 0 { apps[id] = a.baseFootprint }
        var inputs = reclaim.history.samples.map { HistoryInput(seq: $0.seq, time: $0.time, .budget($0.budget)) }
        inputs += reclaim.overrides.map { HistoryInput(seq: $0.seq, time: $0.time, .override($0.override)) }
        inputs += reclaim.decisions.map { HistoryInput(seq: $0.seq, time: $0.time, .decide) }
        // Stable: an override and a sample at one sequence number keep the order they came in.
        inputs = inputs.enumerated().sorted { ($0.element.seq, $0.element.time, $0.offset) < ($1.element.seq, $1.element.time, $1.offset) }
            .map(\.element)
        var header = TraceSettings(source: "scened", since: since, reclaim: settings.reclaimConfiguration,
                                   engine: settings.engineConfiguration,
                                   hold: TimeSpan(microseconds: settings.pressureHold),
                                   gauge: settings.pressureSources.contains(.simulated))
        // Only if every evaluation from `since` on is known (not if the daemon restarted or
        // forgot some since); else the replay decides after every line, as for any trace.
        header.explicitDecisions = reclaim.decisionsFrom.map { $0 <= since } ?? false
        // The budget before the first sample: the one in force (no reload changed it since).
        let budget = reclaim.history.samples.first?.budget ?? reclaim.budget
        let builder = HistoryTraceBuilder(settings: header, sessions: sessions, appFootprints: apps, budget: budget,
                                          inputs: inputs)
        c.conn.stream = .export(TraceExport(builder: builder, next: since, end: end))
    }

    /// Sends what is ready, or asks for the next piece of the log.
    func produceTrace(_ conn: ClientConnection, _ start: TraceExport) {
        var export = start
        if export.pendingNext == export.pending.count && !export.finished {
            if export.next < export.end {
                switch manager.committedEvents(from: export.next, limit: Self.eventsPerBatch, token: UInt64(conn.number)) {
                case .events(let events):
                    take(events, into: &export)
                case .pending:
                    export.awaitingRead = true
                    conn.stream = .export(export)
                    return
                case .unavailable:
                    // Trimmed while exporting: the trace ends where the log was lost.
                    Diagnostics.info("ExportTrace: the event log was trimmed past \(export.next) while exporting")
                    export.next = export.end
                }
            }
            if export.next >= export.end { finish(&export) }
        }
        sendTracePiece(conn, &export)
    }

    /// The commit thread read a piece of the log for an export.
    func traceRead(_ conn: ClientConnection, _ start: TraceExport, _ result: Result<[LifecycleEvent], StoreError>) {
        var export = start
        export.awaitingRead = false
        switch result {
        case .success(let events):
            take(events, into: &export)
        case .failure(let error):
            Diagnostics.error("reading the event log for ExportTrace: \(error)")
            export.next = export.end
        }
        if export.next >= export.end { finish(&export) }
        conn.stream = .export(export)
        server.streamChanged(conn)
    }

    private func take(_ events: [LifecycleEvent], into export: inout TraceExport) {
        for e in events where e.seq < export.end {
            for line in export.builder.add(e) { export.pending.append(TraceWriter.line(line)) }
        }
        // Nothing read (only damaged rows were left, skipped): there is nothing further.
        export.next = events.last.map { $0.seq + 1 } ?? export.end
    }

    private func finish(_ export: inout TraceExport) {
        guard !export.finished else { return }
        for line in export.builder.finish(at: manager.clock.now()) { export.pending.append(TraceWriter.line(line)) }
        export.finished = true
    }

    /// One reply of at most about `listingPieceBytes` (as written, escapes included; always at
    /// least one line), the last one without `continues`.
    private func sendTracePiece(_ conn: ClientConnection, _ export: inout TraceExport) {
        var end = export.pendingNext
        let pending = export.pending
        let finished = export.finished
        // Held like any reply; the lines come from committed events.
        conn.hold(batch: manager.gathering) { w in
            let start = w.bytes.count
            w.beginObject()
            w.key(static: "parameters")
            w.beginObject()
            w.key(static: "lines")
            w.beginArray()
            while end < pending.count, w.bytes.count - start < Self.listingPieceBytes {
                w.string(String(decoding: pending[end], as: UTF8.self))
                end += 1
            }
            w.endArray()
            w.endObject()
            if !(finished && end == pending.count) { w.key(static: "continues"); w.bool(true) }
            w.endObject()
        }
        let last = finished && end == pending.count
        if last {
            server.streamEnded(conn)
            return
        }
        if end == export.pending.count {
            export.pending.removeAll(keepingCapacity: true)
            export.pendingNext = 0
        } else {
            export.pendingNext = end
        }
        conn.stream = .export(export)
    }
}
