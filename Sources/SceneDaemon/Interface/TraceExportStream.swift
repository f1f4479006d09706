import SceneCore
import SceneStore
import SceneTrace
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

/// ExportTrace's stream, produced as the client reads.
extension StreamFeeds {
    /// Sends what is ready, or asks for the next piece of the log.
    func produceTrace(_ conn: ClientConnection, _ start: TraceExport) {
        var export = start
        if export.pendingNext == export.pending.count && !export.finished {
            if export.next < export.end {
                switch host.committedEvents(from: export.next, limit: Self.eventsPerBatch, token: UInt64(conn.number)) {
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
        for line in export.builder.finish(at: host.clock.now()) { export.pending.append(TraceWriter.line(line)) }
        export.finished = true
    }

    /// One reply of at most about `listingPieceBytes` (as written, escapes included; always at
    /// least one line), the last one without `continues`.
    private func sendTracePiece(_ conn: ClientConnection, _ export: inout TraceExport) {
        var end = export.pendingNext
        let pending = export.pending
        let finished = export.finished
        // Held like any reply; the lines come from committed events.
        conn.hold(batch: host.gathering) { w in
            let start = w.bytes.count
            w.reply(continues: !(finished && end == pending.count)) { w in
                w.key(static: "lines")
                w.beginArray()
                while end < pending.count, w.bytes.count - start < StreamFeeds.listingPieceBytes {
                    w.string(String(decoding: pending[end], as: UTF8.self))
                    end += 1
                }
                w.endArray()
            }
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
