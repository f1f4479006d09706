import SceneCore
import SceneTrace
import SceneStore
import Varlink

/// ExportTrace: the daemon's own history as a trace for `scenectl simulate`.
extension MethodDispatcher {
    func exportTrace(_ c: MethodCall) throws(VarlinkError) {
        guard c.call.more else { throw .expectedMore() }
        let end = host.committedNextSequence
        // Without since: as far back as the log reaches.
        var since = max(host.oldestKeptSequence, 1)
        if c.p.has("since") {
            guard let value = try c.p.count("since") else { throw .invalidParameter("since") }
            since = max(value, 1)
            if since < end, let unavailable = host.checkAvailable(from: since) { throw Self.error(unavailable) }
        }
        let engine = host.engine
        let settings = self.settings
        // What no event records, as it is now (a discarded session's as it connected): the
        // trace's scenes get today's footprints.
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
}
