import Glibc
import SceneCore
import SystemdKit
import Varlink

/// GetStatus and GetPressure, written straight into the reply.
extension MethodDispatcher {
    func writeStatus(_ w: inout JSONWriter) {
        let engine = host.engine
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
        w.field("socket", server.path)
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
        w.field("connections", UInt64(server.connectionCount))
        w.key("loop")
        w.beginObject()
        w.field("passes", server.passes)
        w.field("calls", server.callsHandled)
        w.field("commits", host.commits)
        w.endObject()
        w.field("quarantined", UInt64(host.quarantine.count))
        w.field("pressure", reclaim.level.name)
        w.field("usage", reclaim.usage)
        w.field("budget", reclaim.budget)
        if let last = reclaim.policy.lastEpisode { w.key("lastEpisode"); writeEpisode(&w, last) }
        w.key("configFiles")
        w.beginArray()
        for f in configFiles { w.string(f) }
        w.endArray()
        writeSystem(&w)
        writeBackground(&w)
        w.endObject()
    }

    /// Status's `system`: interruptions, locked users, sleep and stop.
    func writeSystem(_ w: inout JSONWriter) {
        let holds = system.holds
        w.key("system")
        w.beginObject()
        w.key("interruptions")
        w.beginArray()
        for i in holds.interruptions {
            w.beginObject()
            w.field("token", i.token)
            w.field("reason", i.reason)
            w.field("since", i.since)
            w.endObject()
        }
        w.endArray()
        w.field("login", system.loginState)
        w.key("locked")
        w.beginArray()
        for (uid, lock) in holds.locks.sorted(by: { $0.key < $1.key }) {
            w.beginObject()
            w.field("uid", Int64(uid))
            w.field("user", UserDatabase.userName(uid))
            w.field("cause", lock.cause.name)
            w.field("since", lock.since)
            w.endObject()
        }
        w.endArray()
        w.field("sleeping", holds.sleeping)
        w.field("stopping", holds.stopping)
        w.endObject()
    }

    func writePressure(_ w: inout JSONWriter) {
        let monitor = reclaim
        let policy = reclaim.policy
        w.key("pressure")
        w.beginObject()
        w.field("level", monitor.level.name)
        w.key("sources")
        w.beginArray()
        for source in monitor.sources(now: self.host.clock.now()) {
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
        w.field("lowWatermark", UInt64(budget * monitor.watermarks.low))
        w.field("highWatermark", UInt64(budget * monitor.watermarks.high))
        w.field("criticalWatermark", UInt64(budget * monitor.watermarks.critical))
        if let o = monitor.override {
            w.field("override", o.level.name)
            if let until = o.until { w.field("overrideUntil", until) }
        }
        if let e = policy.episode { w.key("episode"); writeEpisode(&w, e) }
        if let e = policy.lastEpisode { w.key("lastEpisode"); writeEpisode(&w, e) }
        writeGrace(&w, monitor.controller.grace)
        if let launcher = apps.launcher, !apps.shares.apps.isEmpty {
            let measured = apps.shares.measuredTotal
            w.key("measured")
            w.beginObject()
            w.field("apps", UInt64(measured.apps))
            w.field("bytes", measured.bytes)
            w.field("source", launcher.memorySource)
            if let at = apps.lastMeasuredAt { w.field("measuredAt", at) }
            w.field("awaitingRelease", apps.shares.awaitingRelease)
            w.endObject()
        }
        w.endObject()
    }

    /// The reclaim grace's notices and their outcomes (GetPressure and GetMetrics).
    func writeGrace(_ w: inout JSONWriter, _ grace: ReclaimGrace) {
        w.key("grace")
        w.beginObject()
        w.field("pending", UInt64(grace.pending.count))
        w.field("notices", UInt64(grace.counters.notices))
        w.field("acks", UInt64(grace.counters.acks))
        w.field("deferrals", UInt64(grace.counters.deferrals + grace.counters.refusedDeferrals))
        w.field("timeouts", UInt64(grace.counters.timeouts))
        w.endObject()
    }

    func writeEpisode(_ w: inout JSONWriter, _ e: ReclaimEpisode) {
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

}
