import SceneCore
import SystemdKit
import Varlink

/// GetMetrics: the figures `scenectl metrics` turns into OpenMetrics text. Sessions are
/// counted from the apps' per-state counts (DaemonMetrics.sessionCounts), not by a walk.
extension MethodDispatcher {
    func getMetrics(_ c: MethodCall) throws(VarlinkError) {
        reply(c) { w in self.writeMetrics(&w) }
    }

    func writeMetrics(_ w: inout JSONWriter) {
        let engine = host.engine
        let metrics = host.metrics
        w.key("metrics")
        w.beginObject()
        w.field("uptime", Clock.monotonic.now() - startedAt)
        writeSessionTallies(&w, engine)
        writeAppTallies(&w, engine)
        w.field("pressure", reclaim.level.name)
        w.field("usage", reclaim.usage)
        w.field("budget", reclaim.budget)
        let policy = reclaim.policy
        w.field("episodes", UInt64(max(policy.episode?.number ?? 0, policy.lastEpisode?.number ?? 0)))
        writeReclaimTallies(&w, metrics.reclaims)
        writeGrace(&w, reclaim.controller.grace)
        writeEventTallies(&w, metrics)
        w.field("backgroundTasks", UInt64(engine.apps.values.reduce(0) { $0 + $1.tasks.count }))
        w.field("connections", UInt64(server.connectionCount))
        w.field("passes", server.passes)
        w.field("calls", server.callsHandled)
        w.field("commits", host.commits)
        w.key("passLatency")
        writeHistogram(&w, metrics.passLatency)
        w.endObject()
    }

    private func writeSessionTallies(_ w: inout JSONWriter, _ engine: LifecycleEngine) {
        let states = SceneActivationState.allCases.count
        let counts = host.metrics.sessionCounts(engine)
        w.key("sessions")
        w.beginArray()
        // Every live and archived combination, zeros too: a series that vanishes reads as "no data".
        for condition in [SessionCondition.live, .archived] {
            for state in SceneActivationState.allCases {
                w.beginObject()
                w.field("condition", condition.name)
                w.field("state", state.name)
                w.field("count", UInt64(counts[Int(condition.rawValue) * states + Int(state.rawValue)]))
                w.endObject()
            }
        }
        w.endArray()
    }

    private func writeAppTallies(_ w: inout JSONWriter, _ engine: LifecycleEngine) {
        var counts = Array(repeating: 0, count: ProcessState.allCases.count)
        for app in engine.apps.values { counts[Int(app.process.rawValue)] += 1 }
        w.key("apps")
        w.beginArray()
        for state in ProcessState.allCases {
            w.beginObject()
            w.field("process", state.name)
            w.field("count", UInt64(counts[Int(state.rawValue)]))
            w.endObject()
        }
        w.endArray()
    }

    private func writeReclaimTallies(_ w: inout JSONWriter, _ tally: ReclaimTally) {
        w.key("reclaims")
        w.beginArray()
        for (i, kind) in ReclaimTally.kinds.enumerated() {
            w.beginObject()
            w.field("action", kind)
            w.field("count", tally.counts[i])
            w.field("bytesFreed", tally.bytesFreed[i])
            w.endObject()
        }
        w.endArray()
    }

    private func writeEventTallies(_ w: inout JSONWriter, _ metrics: DaemonMetrics) {
        w.key("events")
        w.beginArray()
        for name in EventName.allCases {
            w.beginObject()
            w.field("event", name.name)
            w.field("count", metrics.events[Int(name.rawValue)])
            w.endObject()
        }
        w.endArray()
        w.key("terminations")
        w.beginArray()
        for reason in TerminationReason.allCases {
            w.beginObject()
            w.field("reason", reason.name)
            w.field("count", metrics.terminations[Int(reason.rawValue)])
            w.endObject()
        }
        w.endArray()
    }

    private func writeHistogram(_ w: inout JSONWriter, _ h: LatencyHistogram) {
        w.beginObject()
        w.key("bounds")
        w.beginArray()
        for b in h.bounds { w.uint(b) }
        w.endArray()
        w.key("counts")
        w.beginArray()
        for n in h.counts { w.uint(n) }
        w.endArray()
        w.field("overflow", h.overflow)
        w.field("sum", h.sum)
        w.field("count", h.count)
        w.endObject()
    }
}
